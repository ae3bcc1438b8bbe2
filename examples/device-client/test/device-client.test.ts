import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt } from "../../../packages/toolbelt/test/cli-harness.js";
import { findBatteries } from "../device-tools.mjs";

const REPO = fileURLToPath(new URL("../../../", import.meta.url));
const BIN = path.join(REPO, "packages/toolbelt/dist/bin.js");
const CLIENT = fileURLToPath(new URL("../device-client.mjs", import.meta.url));
// A missing or stale build fails these tests (see assertBuilt), it does not skip them.
beforeAll(assertBuilt);

/** Starts a process and resolves once its stdout matches `ready`. */
function start(args: string[], ready: RegExp): Promise<{ child: ChildProcess; match: RegExpExecArray }> {
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stderr?.on("data", (d: Buffer) => {
    err += d.toString();
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${args.join(" ")} did not start:\n${out}\n${err}`)),
      20_000,
    );
    child.stdout?.on("data", (d: Buffer) => {
      out += d.toString();
      const match = ready.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve({ child, match });
      }
    });
    child.once("exit", (code) => reject(new Error(`${args.join(" ")} exited with ${code}:\n${out}\n${err}`)));
  });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  await exited;
}

describe("examples/device-client against the built `toolbelt serve --http`", () => {
  let root: string;
  let server: ChildProcess;
  let url: string;
  let token: string;
  let sid: string;
  const clients: ChildProcess[] = [];

  const api = async (method: string, route: string, body?: unknown) => {
    const response = await fetch(`${url}${route}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return (await response.json()) as Record<string, never>;
  };
  const boundNames = async () =>
    ((await api("GET", `/api/sessions/${sid}/tools`)).tools as unknown as Array<{ name: string }>).map(
      (t) => t.name,
    );
  const until = async (check: () => Promise<boolean>, what: string) => {
    const deadline = Date.now() + 10_000;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const startClient = async (extra: string[]) => {
    const { child } = await start(
      [CLIENT, "--url", url, "--token", token, "--session", sid, ...extra],
      /offering (\S+) to session/,
    );
    clients.push(child);
    return child;
  };

  beforeAll(async () => {
    root = await fs.mkdtemp(path.join(os.tmpdir(), "device-client-"));
    const started = await start(
      [BIN, "serve", "--http", "--port", "0", "--root", root, "--token", "device-test-token"],
      /listening on (\S+)/,
    );
    server = started.child;
    url = started.match[1] ?? "";
    token = "device-test-token";
    sid = ((await api("GET", "/api/sessions")) as unknown as Array<{ id: string }>)[0]?.id ?? "";
  });
  afterEach(async () => {
    for (const child of clients.splice(0)) await stop(child);
  });
  afterAll(async () => {
    if (server) await stop(server);
    await fs.rm(root, { recursive: true, force: true });
  });

  it("declares the capabilities it is given while it runs: present_ui is bound only then", async () => {
    expect(await boundNames()).not.toContain("present_ui");
    const child = await startClient([
      "--capability",
      "generative_ui",
      "--power-supply-dir",
      path.join(root, "none"),
    ]);
    await until(async () => (await boundNames()).includes("present_ui"), "present_ui to be bound");
    expect(await boundNames()).not.toContain("ask_user_question");
    await stop(child);
    await until(async () => !(await boundNames()).includes("present_ui"), "present_ui to be unbound");
  });

  it("offers device_time and device_notify while it runs, and they work end to end", async () => {
    const notifyFile = path.join(root, "notifications.jsonl");
    expect(await boundNames()).not.toContain("device_time");
    const child = await startClient([
      "--notify-file",
      notifyFile,
      "--power-supply-dir",
      path.join(root, "none"),
    ]);
    await until(async () => (await boundNames()).includes("device_time"), "device_time to be bound");
    const names = await boundNames();
    expect(names).toContain("device_notify");
    expect(names).not.toContain("device_battery");

    const before = Date.now();
    const time = await api("POST", `/api/sessions/${sid}/calls`, { tool: "device_time", input: {} });
    const payload = time.result as unknown as { kind: string; epoch_ms: number; time_zone: string };
    expect(payload.kind).toBe("device_time");
    expect(Math.abs(payload.epoch_ms - before)).toBeLessThan(10_000);
    expect(String(time.text)).toContain("# Kind: device_time");
    const badZone = await api("POST", `/api/sessions/${sid}/calls`, {
      tool: "device_time",
      input: { time_zone: "Mars/Olympus" },
    });
    expect(badZone.result).toMatchObject({ kind: "error", code: "EINVAL_INPUT" });

    const notified = await api("POST", `/api/sessions/${sid}/calls`, {
      tool: "device_notify",
      input: { title: "Build done", body: "all green" },
    });
    expect(notified.result).toMatchObject({ kind: "device_notified", title: "Build done" });
    const lines = (await fs.readFile(notifyFile, "utf8")).trim().split("\n");
    expect(JSON.parse(lines.at(-1) ?? "{}")).toMatchObject({ title: "Build done", body: "all green" });

    // The client goes away: its tools go with it.
    await stop(child);
    await until(async () => !(await boundNames()).includes("device_time"), "device_time to be unbound");
    const gone = await api("POST", `/api/sessions/${sid}/calls`, { tool: "device_time", input: {} });
    expect(gone.result).toMatchObject({ kind: "error", code: "EUNKNOWN_TOOL" });
  });

  it("offers device_battery only where the power-supply directory lists a battery", async () => {
    const real = await findBatteries();
    console.info(
      real.length
        ? `this machine has a battery (${real.map((b) => b.name).join(", ")})`
        : "this machine has no battery under /sys/class/power_supply: device_battery is checked against a sysfs-shaped fixture",
    );
    const sysfs = path.join(root, "power_supply");
    await fs.mkdir(path.join(sysfs, "AC"), { recursive: true });
    await fs.writeFile(path.join(sysfs, "AC/type"), "Mains\n");
    const child = await startClient([
      "--notify-file",
      path.join(root, "n2.jsonl"),
      "--power-supply-dir",
      sysfs,
      "--recheck-ms",
      "200",
    ]);
    await until(async () => (await boundNames()).includes("device_time"), "device tools");
    expect(await boundNames()).not.toContain("device_battery");

    // A battery appears (a laptop leaves its dock): the client starts offering device_battery.
    await fs.mkdir(path.join(sysfs, "BAT0"));
    await fs.writeFile(path.join(sysfs, "BAT0/type"), "Battery\n");
    await fs.writeFile(path.join(sysfs, "BAT0/capacity"), "87\n");
    await fs.writeFile(path.join(sysfs, "BAT0/status"), "Discharging\n");
    await until(async () => (await boundNames()).includes("device_battery"), "device_battery to be offered");
    const battery = await api("POST", `/api/sessions/${sid}/calls`, { tool: "device_battery", input: {} });
    expect(battery.result).toEqual({
      kind: "device_battery",
      batteries: [{ name: "BAT0", capacity_percent: 87, status: "Discharging" }],
    });

    // And stops offering it when the battery is gone.
    await fs.rm(path.join(sysfs, "BAT0"), { recursive: true });
    await until(
      async () => !(await boundNames()).includes("device_battery"),
      "device_battery to be withdrawn",
    );
    await stop(child);
  });
});
