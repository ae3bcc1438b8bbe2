import { spawn } from "node:child_process";
import { type AddressInfo, createServer, type Server } from "node:net";
import path from "node:path";
import type { Payload, Session, ToolbeltConfig } from "@toolbelt/core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { lacks } from "../../../test-support/capability.js";
import { family } from "./index.js";
import type { ShellResult } from "./payloads.js";
import { planSandbox } from "./sandbox.js";
import { networkOffHere, openSession, removeDir, tempDir } from "./test-harness.js";

const network = networkOffHere();
const mechanism = network.mechanism;
// Either mechanism will do: a network namespace, or Landlock network rules (ABI 4 or later).
const noNetworkOff = lacks(network.lack, mechanism === "unavailable" && network.reason);

let root: string;
let server: Server;
let port = 0;
const sessions: Session[] = [];

beforeAll(async () => {
  root = tempDir("tb-net-root-");
  server = createServer((socket) => socket.end("hello\n"));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  removeDir(root);
});

async function open(config: Record<string, unknown>): Promise<Session> {
  const s = await openSession(root, config);
  sessions.push(s);
  return s;
}

const connect = () =>
  `node -e 'require("net").connect(${port},"127.0.0.1").on("data",d=>console.log("got "+d)).on("error",e=>console.log(e.message))'`;

/** Runs `command` the way the shell does (detached, through the plan's prefix) and collects its output. */
function runPlanned(prefix: string[], command: string): Promise<string> {
  const argv = [...prefix, "/bin/sh", "-c", `exec 2>&1; ${command}`];
  return new Promise((resolve) => {
    const child = spawn(argv[0] as string, argv.slice(1), {
      cwd: root,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d) => {
      out += d;
    });
    child.stderr.on("data", (d) => {
      out += d;
    });
    child.on("close", () => resolve(out));
  });
}

describe("planSandbox with agent.shell_network off", () => {
  const config = (agent: Record<string, unknown>) => ({ agent }) as unknown as ToolbeltConfig;

  it.skipIf(noNetworkOff)("puts --net-off before the command, in every sandbox mode", async () => {
    for (const shell_sandbox of ["best-effort", "off"]) {
      const plan = planSandbox(config({ shell_network: "off", shell_sandbox }), { root, tmpdir: root });
      expect(plan.network).toBe(mechanism);
      expect(plan.prefix.indexOf("--net-off")).toBeGreaterThan(0);
      expect(plan.prefix.indexOf("--net-off")).toBeLessThan(plan.prefix.indexOf("--"));
      const out = await runPlanned(plan.prefix, connect());
      expect(out, shell_sandbox).not.toContain("got hello");
      expect(out).toMatch(/ECONNREFUSED|EACCES|ENETUNREACH/);
    }
    const on = planSandbox(config({}), { root, tmpdir: root });
    expect(on.prefix).not.toContain("--net-off");
    expect(on.network).toBeUndefined();
    expect(await runPlanned(on.prefix, connect())).toContain("got hello");
  });
});

describe("agent.shell_network off", () => {
  it.skipIf(noNetworkOff)("keeps a command from the host's server, and the result says why", async () => {
    const s = await open({ agent: { shell_network: "off" } });
    const r = (await s.call("shell", { command: connect() })) as unknown as ShellResult;
    expect(r.stdout).not.toContain("got hello");
    expect(r.sandbox_note).toMatch(/^network is off for sandboxed commands \(agent\.shell_network: off\)/);
    const on = (await (await open({})).call("shell", { command: connect() })) as unknown as ShellResult;
    expect(on.stdout).toContain("got hello");
  });

  it("fails closed without the helper, whatever agent.shell_sandbox says", async () => {
    const saved = process.env.TOOLBELT_SANDBOX_HELPER;
    process.env.TOOLBELT_SANDBOX_HELPER = path.join(root, "no-such-helper");
    try {
      for (const shell_sandbox of ["off", "best-effort"]) {
        const s = await open({ agent: { shell_network: "off", shell_sandbox } });
        const r: Payload = await s.call("shell", { command: "echo should-not-run" });
        expect(r).toMatchObject({ kind: "error", code: "EUNAVAILABLE" });
        expect(String(r.message)).toMatch(/shell_network is "off" but .*helper is not built/);
        const checks = await family.doctor?.({ root, config: s.config });
        expect(checks?.find((c) => c.name === "sandbox-network")).toMatchObject({ status: "unavailable" });
      }
    } finally {
      if (saved === undefined) delete process.env.TOOLBELT_SANDBOX_HELPER;
      else process.env.TOOLBELT_SANDBOX_HELPER = saved;
    }
  });

  it("doctor names the mechanism", async () => {
    const s = await open({ agent: { shell_network: "off" } });
    const check = (await family.doctor?.({ root, config: s.config }))?.find(
      (c) => c.name === "sandbox-network",
    );
    const expected = {
      netns: /network namespace per command/,
      landlock: /Landlock network rules/,
      unavailable: /cannot be enforced/,
    };
    expect(check?.detail).toMatch(expected[mechanism]);
  });
});
