// agent.shell_network "off", attacked end to end through the built CLI: a command (or a language
// server) tries to reach a TCP server this test runs, on 127.0.0.1 and on the machine's own
// non-loopback address, and to look a name up; with network off none of it may get through, by
// either mechanism, and an untrusted project cannot switch it back on.
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { type AddressInfo, createServer, type Server } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lacks, need } from "../../../../test-support/capability.js";
import { assertBuilt, cli, mcpCall, REPO, tempRoot } from "../cli-harness.js";

type Check = { family?: string; name: string; status: string; detail: string };

const dirs: string[] = [];
let server: Server;
let port = 0;
let doctor: Check[] = [];
let configDir: string;

function track(dir: string): string {
  dirs.push(dir);
  return dir;
}

/** The machine's first non-loopback IPv4 address (the host as other machines would reach it). */
const external = Object.values(os.networkInterfaces())
  .flat()
  .find((a) => a && a.family === "IPv4" && !a.internal)?.address;

/** A config file outside the project: a user (trusted) source. */
function userConfig(config: unknown): string {
  const file = path.join(track(tempRoot("tb-net-cfg-")), "config.json");
  writeFileSync(file, JSON.stringify(config));
  return file;
}

function env(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return { TOOLBELT_CONFIG_DIR: configDir, XDG_CONFIG_HOME: configDir, TOOLBELT_TRUST: "", ...extra };
}

async function shell(
  root: string,
  command: string,
  options: { config?: unknown; env?: NodeJS.ProcessEnv; args?: string[] } = {},
): Promise<Record<string, unknown>> {
  const args = ["run", "shell", "--root", root, "--allow", "shell", "--input", JSON.stringify({ command })];
  if (options.config) args.push("--config", userConfig(options.config));
  args.push(...(options.args ?? []));
  const out = await cli(args, { env: env(options.env), timeoutMs: 60_000 });
  return JSON.parse(out.stdout.trim().split("\n").at(-1) ?? "{}") as Record<string, unknown>;
}

/** Node inside the command: connects to each host in turn and prints `connected HOST` or the error. */
function connectScript(hosts: string[]): string {
  const js = `const net=require("net");let left=${hosts.length};for(const h of ${JSON.stringify(hosts)}){const s=net.connect(${port},h);s.setTimeout(5000);s.on("data",d=>{console.log("connected "+h+" "+String(d).trim());s.destroy();if(--left===0)process.exit(0)});s.on("timeout",()=>{console.log(h+" timeout");s.destroy();if(--left===0)process.exit(0)});s.on("error",e=>{console.log(h+" "+e.message);if(--left===0)process.exit(0)})}`;
  return `node -e '${js}'`;
}

const hosts = ["127.0.0.1", ...(external ? [external] : [])];

beforeAll(async () => {
  assertBuilt();
  if (!external) console.log("network tests: no non-loopback IPv4 address here, only 127.0.0.1 is tried");
  configDir = track(tempRoot("tb-net-home-"));
  server = createServer((socket) => socket.end("hello-from-host\n"));
  await new Promise<void>((resolve) => server.listen(0, "0.0.0.0", resolve));
  port = (server.address() as AddressInfo).port;
  doctor = JSON.parse(
    (
      await cli(["doctor", "--format", "json", "--config", userConfig({ agent: { shell_network: "off" } })], {
        env: env(),
      })
    ).stdout,
  ) as Check[];
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const check = (name: string) => doctor.find((c) => c.name === name);

// What this machine offers, asked of the helper itself (skipIf is decided before beforeAll runs).
const HELPER = path.join(REPO, "packages/shell/bin/toolbelt-sandbox");
const isolation = spawnSync(HELPER, ["--probe-isolation"], { encoding: "utf8" }).stdout ?? "";
const abi = Number.parseInt(spawnSync(HELPER, ["--probe"], { encoding: "utf8" }).stdout ?? "", 10) || 0;
const noHelper = lacks("sandbox-helper", !isolation.startsWith("ok") && `${HELPER} does not run`);
const noNetns =
  noHelper ||
  lacks("network-namespace", !isolation.includes(" +netns") && `the helper says: ${isolation.trim()}`);
const noLandlockNet = noHelper || lacks("landlock-network", abi < 4 && `Landlock ABI ${abi} < 4`);
const NETNS = !noNetns;
const LANDLOCK_NET = !noLandlockNet;

describe("agent.shell_network", { timeout: 60_000 }, () => {
  it("on (the default): a command reaches the host's TCP server", async () => {
    const root = track(tempRoot("tb-net-"));
    const r = await shell(root, connectScript(hosts));
    for (const h of hosts) expect(r.stdout).toContain(`connected ${h} hello-from-host`);
    expect(r.sandbox_note).toBeUndefined();
  });

  it("doctor says which mechanism enforces off, and what it blocks", () => {
    const c = check("sandbox-network");
    expect(c, JSON.stringify(doctor)).toBeDefined();
    expect(c?.detail).toMatch(/agent\.shell_network is off/);
    if (NETNS)
      expect(c).toMatchObject({
        status: "ok",
        detail: expect.stringMatching(/network namespace per command/),
      });
    else if (LANDLOCK_NET)
      expect(c).toMatchObject({ status: "ok", detail: expect.stringMatching(/Landlock network rules/) });
    else
      expect(c).toMatchObject({
        status: "unavailable",
        detail: expect.stringMatching(/cannot be enforced here/),
      });
  });

  it.skipIf(noNetns)(
    "off, for a background command too: shell_session's read carries the same note",
    async () => {
      const root = track(tempRoot("tb-net-"));
      const lines = [
        {
          id: "bg",
          tool: "shell",
          input: { command: connectScript(["127.0.0.1"]), run_in_background: true },
        },
        {
          id: "read",
          tool: "shell_session",
          input: { operation: "read", shell_id: "sh-1", filter: "ECONNREFUSED|connected", wait_ms: 20_000 },
        },
      ];
      const out = await cli(
        [
          "exec",
          "--root",
          root,
          "--allow",
          "shell",
          "--config",
          userConfig({ agent: { shell_network: "off" } }),
        ],
        { env: env(), input: `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`, timeoutMs: 60_000 },
      );
      const replies = out.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { id?: string; result?: Record<string, unknown> });
      const read = replies.find((r) => r.id === "read")?.result ?? {};
      expect(read.output, out.stdout).toContain("127.0.0.1 connect ECONNREFUSED");
      expect(read.sandbox_note).toMatch(
        /^network is off for sandboxed commands \(agent\.shell_network: off\)/,
      );
    },
  );

  it.skipIf(noNetns)(
    "off (network namespace): no host, no host loopback, no DNS; the result says why",
    async () => {
      const root = track(tempRoot("tb-net-"));
      const r = await shell(
        root,
        `${connectScript(hosts)}; getent hosts registry.npmjs.org || echo "lookup failed: could not resolve"`,
        { config: { agent: { shell_network: "off" } } },
      );
      expect(r.stdout).not.toContain("connected");
      expect(r.stdout).toContain("127.0.0.1 connect ECONNREFUSED");
      if (external) expect(r.stdout).toContain(`${external} connect ENETUNREACH`);
      expect(r.stdout).toContain("lookup failed");
      expect(r.sandbox_note).toMatch(/^network is off for sandboxed commands \(agent\.shell_network: off\)/);
      expect(r.sandbox_note).toMatch(/network namespace/);
    },
  );

  it.skipIf(noNetns)("off (network namespace): the command's own loopback server still answers", async () => {
    const root = track(tempRoot("tb-net-"));
    const js = `const net=require("net");const srv=net.createServer(s=>s.end("own\\n")).listen(0,"127.0.0.1",()=>{net.connect(srv.address().port,"127.0.0.1").on("data",d=>{console.log("own-loopback "+String(d).trim());process.exit(0)})})`;
    const r = await shell(root, `node -e '${js}'`, { config: { agent: { shell_network: "off" } } });
    expect(r.stdout).toContain("own-loopback own");
  });

  it.skipIf(noLandlockNet)(
    "off (Landlock network rules forced): every TCP connect is refused, with the note",
    async () => {
      const root = track(tempRoot("tb-net-"));
      const r = await shell(root, connectScript(hosts), {
        config: { agent: { shell_network: "off" } },
        env: { TOOLBELT_SANDBOX_NETWORK_VIA: "landlock" },
      });
      expect(r.stdout).not.toContain("connected");
      for (const h of hosts) expect(r.stdout).toContain(`${h} connect EACCES`);
      expect(r.sandbox_note).toMatch(
        /^network is off for sandboxed commands .*Landlock refuses every TCP connect/,
      );
    },
  );

  it.skipIf(noNetns)("off holds with agent.shell_sandbox off too (the namespace forced)", async () => {
    const root = track(tempRoot("tb-net-"));
    for (const config of [
      { agent: { shell_network: "off", shell_sandbox: "off" } },
      { agent: { shell_network: "off" } },
    ]) {
      const r = await shell(root, connectScript(hosts), {
        config,
        env: { TOOLBELT_SANDBOX_NETWORK_VIA: "netns" },
      });
      expect(r.stdout).not.toContain("connected");
      expect(r.sandbox_note).toMatch(/network is off/);
    }
  });

  it("off where it cannot be enforced: the command does not run (fails closed)", async () => {
    const root = track(tempRoot("tb-net-"));
    const marker = path.join(root, "ran");
    const r = await shell(root, `touch ${marker}; ${connectScript(hosts)}`, {
      config: { agent: { shell_network: "off", shell_sandbox: "off" } },
      env: { TOOLBELT_SANDBOX_HELPER: path.join(root, "no-such-helper") },
    });
    expect(r).toMatchObject({ kind: "error", code: "EUNAVAILABLE" });
    expect(String(r.message)).toMatch(/agent\.shell_network is "off" but .* does not run/);
  });

  it("an untrusted project cannot turn it back on over the user's off; a trusted one can", async () => {
    const root = track(tempRoot("tb-net-"));
    mkdirSync(path.join(root, "configs"));
    writeFileSync(path.join(root, "configs/app.json"), JSON.stringify({ agent: { shell_network: "on" } }));
    // The user's own config file (below the project's layer, so a trusted project may override it).
    const home = track(tempRoot("tb-net-home-"));
    writeFileSync(path.join(home, "config.json"), JSON.stringify({ agent: { shell_network: "off" } }));
    const asUser = { TOOLBELT_CONFIG_DIR: home, XDG_CONFIG_HOME: home };
    const untrusted = await shell(root, connectScript(hosts), { env: asUser });
    expect(untrusted.stdout).not.toContain("connected");
    expect(untrusted.sandbox_note).toMatch(/network is off/);
    const trusted = await shell(root, connectScript(hosts), { env: asUser, args: ["--trust"] });
    for (const h of hosts) expect(trusted.stdout).toContain(`connected ${h}`);
  });

  it("an untrusted project can turn it off", async () => {
    const root = track(tempRoot("tb-net-"));
    mkdirSync(path.join(root, "configs"));
    writeFileSync(path.join(root, "configs/app.json"), JSON.stringify({ agent: { shell_network: "off" } }));
    const r = await shell(root, connectScript(hosts));
    expect(r.kind, JSON.stringify(r)).toBe("shell_result");
    expect(r.stdout).not.toContain("connected");
    expect(r.sandbox_note).toMatch(/network is off/);
  });

  it.skipIf(noNetns)(
    "a command cannot re-enter the host's network namespace through a process it can see (nsenter)",
    async (ctx) => {
      need(
        ctx,
        "nsenter",
        spawnSync("nsenter", ["--version"]).error && "nsenter (util-linux) is not installed",
      );
      const root = track(tempRoot("tb-net-"));
      // With the sandbox off there is no PID namespace: this test's own process is visible in /proc,
      // and a root command still holding CAP_SYS_ADMIN could setns() into its network namespace.
      const enter = (target: string) => `nsenter --net=${target} ${connectScript(hosts)}`;
      for (const config of [
        { agent: { shell_network: "off", shell_sandbox: "off" } },
        { agent: { shell_network: "off" } },
      ]) {
        const r = await shell(
          root,
          `command -v nsenter >/dev/null || { echo no-nsenter; exit 0; }; ${enter(`/proc/${process.pid}/ns/net`)}; ${enter("/proc/1/ns/net")}; echo done`,
          { config },
        );
        expect(r.stdout).not.toContain("no-nsenter");
        expect(r.stdout).toContain("done");
        expect(r.stdout, JSON.stringify(config)).not.toContain("connected");
      }
    },
  );

  it.skipIf(noNetns && noLandlockNet)(
    "a language server started through the sandbox gets no network either",
    async () => {
      const root = track(tempRoot("tb-net-lsp-"));
      writeFileSync(path.join(root, "notes.txt"), "hello\n");
      const outcome = path.join(root, "outcome.txt");
      const server = path.join(root, "server.cjs");
      // Not a real language server: it records whether it could reach the host, then exits.
      writeFileSync(
        server,
        `const s=require("net").connect(${port},"127.0.0.1");s.on("data",()=>{require("fs").writeFileSync(${JSON.stringify(outcome)},"connected");process.exit(0)});s.on("error",e=>{require("fs").writeFileSync(${JSON.stringify(outcome)},e.code);process.exit(0)});`,
      );
      const lsp = { fake: { command: process.execPath, args: [server], extensions: [".txt"] } };
      const symbols = (network: string) =>
        cli(
          [
            "run",
            "lsp_document_symbols",
            "--root",
            root,
            "--input",
            JSON.stringify({ path: "notes.txt" }),
            "--config",
            userConfig({ lsp, agent: { shell_network: network } }),
          ],
          { env: env(), timeoutMs: 60_000 },
        );
      await symbols("off");
      expect(readFileSync(outcome, "utf8")).toMatch(/^(ECONNREFUSED|EACCES|ENETUNREACH)$/);
      await symbols("on");
      expect(readFileSync(outcome, "utf8")).toBe("connected");
    },
  );

  it.skipIf(noNetns && noLandlockNet)(
    "off holds over MCP too (serve --mcp, tools/call shell)",
    async () => {
      const root = track(tempRoot("tb-net-"));
      const text = await mcpShell(root, connectScript(hosts), [
        "--config",
        userConfig({ agent: { shell_network: "off" } }),
      ]);
      expect(text).not.toContain("connected 127.0.0.1");
      expect(text).toMatch(/network is off for sandboxed commands/);
    },
    60_000,
  );
});

// Issue 27: a daemon's unix socket on the file system (docker's, dbus's, a database's) is network in
// all but name: with the network off, a command must not reach one either.
describe("agent.shell_network off and local daemons' unix sockets", { timeout: 60_000 }, () => {
  const daemons: Server[] = [];
  const sockets: string[] = [];

  beforeAll(async () => {
    const dir = track(tempRoot("tb-net-sock-"));
    const places = [path.join(dir, "daemon.sock")];
    // Where real daemons listen, when this user may create a socket there.
    try {
      mkdirSync("/run/toolbelt-test", { recursive: true });
      places.push(`/run/toolbelt-test/daemon-${process.pid}.sock`);
    } catch {
      console.log("unix socket tests: /run is not writable here, only a socket under the temp dir is tried");
    }
    for (const place of places) {
      const daemon = createServer((socket) => socket.end("hello-from-daemon\n"));
      await new Promise<void>((resolve) => daemon.listen(place, resolve));
      daemons.push(daemon);
      sockets.push(place);
    }
  });

  afterAll(async () => {
    for (const daemon of daemons) await new Promise((resolve) => daemon.close(resolve));
    rmSync("/run/toolbelt-test", { recursive: true, force: true });
  });

  function connectSockets(): string {
    const js = `const net=require("net");let left=${sockets.length};for(const p of ${JSON.stringify(sockets)}){const s=net.connect(p);s.setTimeout(5000);s.on("data",d=>{console.log("connected "+p+" "+String(d).trim());s.destroy();if(--left===0)process.exit(0)});s.on("timeout",()=>{console.log(p+" timeout");s.destroy();if(--left===0)process.exit(0)});s.on("error",e=>{console.log(p+" "+e.code);if(--left===0)process.exit(0)})}`;
    return `node -e '${js}'`;
  }

  it("on: a command reaches them", async () => {
    const r = await shell(track(tempRoot("tb-net-")), connectSockets());
    for (const p of sockets) expect(r.stdout).toContain(`connected ${p} hello-from-daemon`);
  });

  for (const [via, capability, available] of [
    ["netns", "network-namespace", NETNS],
    ["landlock", "landlock-network", LANDLOCK_NET],
  ] as const)
    it(`off (${via}): connecting to them is refused`, async (ctx) => {
      need(ctx, capability, !available && `network off by ${via} is not available here`);
      need(
        ctx,
        "mount-namespace",
        !isolation.startsWith("ok") &&
          `no private mount namespace here to hide sockets in (${isolation.trim()})`,
      );
      const r = await shell(track(tempRoot("tb-net-")), connectSockets(), {
        config: { agent: { shell_network: "off" } },
        env: { TOOLBELT_SANDBOX_NETWORK_VIA: via },
      });
      expect(r).toMatchObject({ kind: "shell_result" });
      expect(r.stdout).not.toContain("connected");
      for (const p of sockets) expect(r.stdout).toContain(`${p} ECONNREFUSED`);
    });

  it("doctor says whether they are hidden", () => {
    const c = check("sandbox-unix-sockets");
    expect(c, JSON.stringify(doctor)).toBeDefined();
    expect(c?.status).toBe(isolation.startsWith("ok") ? "ok" : "unavailable");
    expect(c?.detail).toMatch(/unix socket/);
  });
});

/** Calls the shell tool once over `serve --mcp`, returns the result as JSON text. */
async function mcpShell(root: string, command: string, extra: string[]): Promise<string> {
  const [reply] = await mcpCall(
    ["--root", root, "--allow", "shell", ...extra],
    [{ method: "tools/call", params: { name: "shell", arguments: { command } } }],
    { env: env(), clientName: "network-test" },
  );
  return JSON.stringify(reply?.result);
}
