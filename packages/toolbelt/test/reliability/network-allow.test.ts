// agent.shell_network: { allow: [...] } (issue 30, item 5), attacked end to end through the built
// CLI. A command runs in a network namespace of its own whose only way out is toolbelt's proxy; the
// test's local HTTP and TCP listeners stand for the outside world, named through the config's
// `hosts` map (the proxy resolves through it, so the machine's /etc/hosts is never touched). Curl
// (when installed) or node's http client runs inside the command.
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import { type AddressInfo, createServer, type Server, type Socket } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lacks } from "../../../../test-support/capability.js";
import { assertBuilt, BIN, cli, REPO, tempRoot } from "../cli-harness.js";

type Result = Record<string, unknown>;

const dirs: string[] = [];
let http: HttpServer;
let raw: Server;
let port = 0;
let rawPort = 0;
let home: string;
const open = new Set<Socket>();

function track(dir: string): string {
  dirs.push(dir);
  return dir;
}

const HELPER = path.join(REPO, "packages/shell/bin/toolbelt-sandbox");
const isolation = spawnSync(HELPER, ["--probe-isolation"], { encoding: "utf8" }).stdout ?? "";
const noNetns =
  lacks("sandbox-helper", !isolation.startsWith("ok") && `${HELPER} does not run`) ||
  lacks("network-namespace", !isolation.includes(" +netns") && `the helper says: ${isolation.trim()}`);
const hasCurl = !spawnSync("curl", ["--version"]).error;
if (!hasCurl) console.log("network allow tests: curl is not installed, node's http client is used instead");

/** The machine's first non-loopback IPv4 address: reachable directly were there a route. */
const external = Object.values(os.networkInterfaces())
  .flat()
  .find((a) => a && a.family === "IPv4" && !a.internal)?.address;

/** Fetches `url` inside the command (through the proxy the environment names) and prints what came back. */
function fetchCommand(url: string): string {
  if (hasCurl) return `curl -sS -m 10 ${url}; echo " [exit $?]"`;
  const js = `require("http").get(${JSON.stringify(url)},{headers:{}},r=>{r.pipe(process.stdout)}).on("error",e=>console.log(e.message))`;
  return `node -e '${js}'`;
}

function userConfig(config: unknown): string {
  const file = path.join(track(tempRoot("tb-allow-cfg-")), "config.json");
  writeFileSync(file, JSON.stringify(config));
  return file;
}

async function shell(root: string, command: string, options: { config?: unknown; args?: string[] } = {}) {
  const args = ["run", "shell", "--root", root, "--allow", "shell", "--input", JSON.stringify({ command })];
  if (options.config) args.push("--config", userConfig(options.config));
  args.push(...(options.args ?? []));
  const out = await cli(args, {
    env: { TOOLBELT_CONFIG_DIR: home, XDG_CONFIG_HOME: home, TOOLBELT_TRUST: "" },
    timeoutMs: 60_000,
  });
  const result = JSON.parse(out.stdout.trim().split("\n").at(-1) ?? "{}") as Result;
  return Object.assign(result, { stderr: out.stderr });
}

/** Runs `calls` one after another in one `toolbelt exec` session; `next` picks each call from the last answer. */
async function execSession(
  root: string,
  config: unknown,
  next: (last: Result | undefined) => { tool: string; input: unknown } | undefined,
): Promise<Result[]> {
  const child = spawn(
    process.execPath,
    [BIN, "exec", "--root", root, "--allow", "shell", "--config", userConfig(config)],
    {
      cwd: REPO,
      env: {
        ...process.env,
        NO_COLOR: "1",
        TOOLBELT_CONFIG_DIR: home,
        XDG_CONFIG_HOME: home,
        TOOLBELT_TRUST: "",
      },
      stdio: ["pipe", "pipe", "inherit"],
    },
  );
  const answers: Result[] = [];
  let buffer = "";
  const closed = new Promise((resolve) => child.on("close", resolve));
  const send = (last: Result | undefined) => {
    const call = next(last);
    if (call) child.stdin.write(`${JSON.stringify({ id: `c${answers.length}`, ...call })}\n`);
    else child.stdin.end();
  };
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (d: string) => {
    buffer += d;
    for (let nl = buffer.indexOf("\n"); nl >= 0; nl = buffer.indexOf("\n")) {
      const line = JSON.parse(buffer.slice(0, nl)) as { id?: string; result?: Result };
      buffer = buffer.slice(nl + 1);
      if (!line.id || !line.result) continue;
      answers.push(line.result);
      send(line.result);
    }
  });
  send(undefined);
  await closed;
  return answers;
}

/** good.test is listed (with the loopback address it maps to); the other names are not. */
function allowing(extra: string[] = []): unknown {
  return {
    agent: {
      shell_network: {
        allow: [`good.test:${port}`, `127.0.0.1:${port}`, ...extra],
        hosts: { "good.test": "127.0.0.1", "bad.test": "127.0.0.1", "rebind.test": "127.0.0.1" },
      },
    },
  };
}

beforeAll(async () => {
  assertBuilt();
  home = track(tempRoot("tb-allow-home-"));
  http = createHttpServer((req, res) => res.end(`hello-from-host ${req.headers.host} ${req.url}\n`));
  await new Promise<void>((resolve) => http.listen(0, "0.0.0.0", resolve));
  port = (http.address() as AddressInfo).port;
  http.on("connection", (socket) => {
    open.add(socket);
    socket.once("close", () => open.delete(socket));
  });
  raw = createServer((socket) => socket.end("raw-from-host\n"));
  await new Promise<void>((resolve) => raw.listen(0, "0.0.0.0", resolve));
  rawPort = (raw.address() as AddressInfo).port;
  raw.on("connection", (socket) => {
    open.add(socket);
    socket.once("close", () => open.delete(socket));
  });
});

afterAll(async () => {
  // A connection still open (the proxy's keep-alive, a tunnel) would hold close() open.
  for (const socket of open) socket.destroy();
  if (http) await new Promise((resolve) => http.close(resolve));
  if (raw) await new Promise((resolve) => raw.close(resolve));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(noNetns)("agent.shell_network allow list, end to end", () => {
  it("a listed host is reached through the proxy; an unlisted one is refused and named on the result", async () => {
    const root = track(tempRoot("tb-allow-"));
    const r = await shell(
      root,
      `${fetchCommand(`http://good.test:${port}/ok`)}; ${fetchCommand(`http://bad.test:${port}/no`)}`,
      { config: allowing() },
    );
    expect(r.kind, JSON.stringify(r)).toBe("shell_result");
    expect(r.stdout).toContain(`hello-from-host good.test:${port} /ok`);
    expect(r.stdout).not.toContain("/no");
    expect(r.network_refused).toEqual([{ host: "bad.test", port, why: "not in agent.shell_network.allow" }]);
    expect(r.sandbox_note).toMatch(/agent\.shell_network\.allow: the proxy refused bad\.test:\d+/);
  });

  it("the proxy environment is set, and a command ignoring it has no route out", async () => {
    const root = track(tempRoot("tb-allow-"));
    const targets = ["127.0.0.1", ...(external ? [external] : [])];
    const js = `const net=require("net");let left=${targets.length};for(const h of ${JSON.stringify(targets)}){const s=net.connect(${port},h);s.setTimeout(5000);s.on("connect",()=>{console.log("connected "+h);s.destroy();if(--left===0)process.exit(0)});s.on("timeout",()=>{console.log(h+" timeout");s.destroy();if(--left===0)process.exit(0)});s.on("error",e=>{console.log(h+" "+e.code);if(--left===0)process.exit(0)})}`;
    const r = await shell(
      root,
      `echo "proxy=$HTTPS_PROXY no=$NO_PROXY"; node -e '${js}'; getent hosts good.test || echo no-resolver`,
      {
        config: allowing(),
      },
    );
    expect(r.stdout).toMatch(/proxy=http:\/\/127\.0\.0\.1:\d+ no=localhost/);
    expect(r.stdout).not.toContain("connected");
    expect(r.stdout).toContain("no-resolver");
  });

  it("a name that resolves to a loopback or private address is refused unless that address is listed", async () => {
    const root = track(tempRoot("tb-allow-"));
    const config = {
      agent: { shell_network: { allow: [`rebind.test:${port}`], hosts: { "rebind.test": "127.0.0.1" } } },
    };
    const r = await shell(root, fetchCommand(`http://rebind.test:${port}/x`), { config });
    expect(r.stdout).not.toContain("hello-from-host");
    expect(JSON.stringify(r.network_refused)).toMatch(/127\.0\.0\.1 \(loopback\)/);
  });

  it("CONNECT to an IP literal, a Host header naming another host and a huge name are refused", async () => {
    const root = track(tempRoot("tb-allow-"));
    const long = `${`${"a".repeat(63)}.`.repeat(5)}test`;
    // An absolute URI for the listed host with a Host header for an unlisted one (a smuggling try),
    // a CONNECT to an address that is not listed, and a name longer than DNS allows.
    const js = [
      `const net=require("net");const p=Number(process.env.HTTP_PROXY.split(":").pop());`,
      `const ask=(t)=>new Promise(ok=>{const s=net.connect(p,"127.0.0.1",()=>s.write(t));let b="";s.on("data",d=>b+=d);s.on("close",()=>{console.log(JSON.stringify(b.split("\\r\\n")[0]));ok()})});`,
      `(async()=>{`,
      `await ask("GET http://good.test:${port}/smuggle HTTP/1.1\\r\\nHost: bad.test:${port}\\r\\nConnection: close\\r\\n\\r\\n");`,
      `await ask("CONNECT 10.255.255.1:443 HTTP/1.1\\r\\nHost: 10.255.255.1:443\\r\\n\\r\\n");`,
      `await ask("CONNECT ${long}:443 HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n");`,
      `})()`,
    ].join("");
    const r = await shell(root, `node -e '${js}'`, { config: allowing() });
    expect(r.kind, JSON.stringify(r)).toBe("shell_result");
    const lines = String(r.stdout).trim().split("\n");
    expect(lines).toHaveLength(3);
    for (const line of lines) expect(line).toMatch(/HTTP\/1\.1 40[03]/);
    expect(r.stdout).not.toContain("hello-from-host");
    const refused = JSON.stringify(r.network_refused);
    expect(refused).toContain("the Host header names bad.test");
    expect(refused).toContain("10.255.255.1");
  });

  it("a tunnel to a listed raw TCP port carries bytes; an unlisted port is refused", async () => {
    const root = track(tempRoot("tb-allow-"));
    const js = [
      `const net=require("net");const p=Number(process.env.HTTP_PROXY.split(":").pop());`,
      `const tunnel=(port)=>new Promise(ok=>{const s=net.connect(p,"127.0.0.1",()=>s.write("CONNECT good.test:"+port+" HTTP/1.1\\r\\nHost: good.test:"+port+"\\r\\n\\r\\n"));let b="";s.on("data",d=>{b+=d;if(b.includes("\\r\\n\\r\\n")&&!s.sent){s.sent=1;s.write("hi\\n")}});s.on("close",()=>{console.log(port+" "+JSON.stringify(b));ok()})});`,
      `(async()=>{await tunnel(${rawPort});await tunnel(${rawPort + 1 === port ? rawPort + 2 : rawPort + 1});})()`,
    ].join("");
    const r = await shell(root, `node -e '${js}'`, {
      config: allowing([`good.test:${rawPort}`, `127.0.0.1:${rawPort}`]),
    });
    expect(r.stdout).toMatch(new RegExp(`${rawPort} ".*200 Connection Established.*raw-from-host`));
    expect(r.stdout).toMatch(/HTTP\/1\.1 403/);
  });

  it("an untrusted project may narrow the user's list but not widen it", async () => {
    const root = track(tempRoot("tb-allow-"));
    mkdirSync(path.join(root, "configs"));
    // The user's own config file (below the project's layer, so a trusted project may override it).
    writeFileSync(path.join(home, "config.json"), JSON.stringify(allowing()));
    try {
      writeFileSync(
        path.join(root, "configs/app.json"),
        JSON.stringify({
          agent: {
            shell_network: {
              allow: [`bad.test:${port}`, `good.test:${port}`, `127.0.0.1:${port}`],
              hosts: { "good.test": "10.9.9.9" },
            },
          },
        }),
      );
      const r = await shell(
        root,
        `${fetchCommand(`http://good.test:${port}/ok`)}; ${fetchCommand(`http://bad.test:${port}/no`)}`,
      );
      expect(r.stdout).toContain(`hello-from-host good.test:${port} /ok`);
      expect(r.stdout).not.toContain("/no");
      expect(JSON.stringify(r.network_refused)).toContain("bad.test");
      expect(r.stderr).toMatch(/bad\.test:\d+ is not within the user's agent\.shell_network\.allow/);
      expect(r.stderr).toMatch(/agent\.shell_network\.hosts .*maps host names to addresses/);
      // Trusted, the project's list stands as written.
      const trusted = await shell(root, fetchCommand(`http://bad.test:${port}/yes`), { args: ["--trust"] });
      expect(trusted.stdout).toContain("/yes");
    } finally {
      rmSync(path.join(home, "config.json"), { force: true });
    }
  });

  it("an untrusted project cannot turn an allow list into full network", async () => {
    const root = track(tempRoot("tb-allow-"));
    mkdirSync(path.join(root, "configs"));
    writeFileSync(path.join(root, "configs/app.json"), JSON.stringify({ agent: { shell_network: "on" } }));
    writeFileSync(path.join(home, "config.json"), JSON.stringify(allowing()));
    try {
      const r = await shell(root, fetchCommand(`http://bad.test:${port}/no`));
      expect(r.stdout).not.toContain("hello-from-host");
      expect(JSON.stringify(r.network_refused)).toContain("bad.test");
      expect(r.stderr).toMatch(/agent\.shell_network .*turns the network back on/);
    } finally {
      rmSync(path.join(home, "config.json"), { force: true });
    }
  });

  it("a background command goes through the same proxy, and shell_session's read lists what it refused", async () => {
    const root = track(tempRoot("tb-allow-"));
    const command = `${fetchCommand(`http://good.test:${port}/bg`)}; ${fetchCommand(`http://bad.test:${port}/no`)}`;
    const answers = await execSession(root, allowing(), (last) => {
      if (!last) return { tool: "shell", input: { command, run_in_background: true } };
      if (last.kind === "shell_background" || last.status === "running")
        return { tool: "shell_session", input: { operation: "read", shell_id: "sh-1", wait_ms: 1000 } };
      return undefined;
    });
    const view = answers.at(-1) ?? {};
    expect(view.status, JSON.stringify(answers)).toBe("exited");
    const output = answers.map((a) => String(a.output ?? "")).join("");
    expect(output).toContain(`hello-from-host good.test:${port} /bg`);
    expect(output).not.toContain("/no");
    expect(view.network_refused).toEqual([
      { host: "bad.test", port, why: "not in agent.shell_network.allow" },
    ]);
  });
});
