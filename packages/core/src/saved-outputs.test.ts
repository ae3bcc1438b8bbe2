import { spawnSync } from "node:child_process";
import {
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { ToolbeltError } from "./errors.js";
import { definePlugin } from "./plugin.js";
import { createSession, type Session } from "./session.js";
import { defineTool } from "./tool.js";

let base: string;
let root: string;
let state: string;
const savedState = process.env.TOOLBELT_STATE_DIR;
const sessions: Session[] = [];

beforeAll(() => {
  base = realpathSync(mkdtempSync(path.join(os.tmpdir(), "tb-saved-")));
  root = path.join(base, "root");
  state = path.join(base, "state");
  mkdirSync(root);
  writeFileSync(path.join(base, "secret.txt"), "SECRET\n");
  process.env.TOOLBELT_STATE_DIR = state;
});
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
});
afterAll(() => {
  rmSync(base, { recursive: true, force: true });
  if (savedState === undefined) delete process.env.TOOLBELT_STATE_DIR;
  else process.env.TOOLBELT_STATE_DIR = savedState;
});

// A read tool that may read saved output, and one that may not; a write tool.
const peek = defineTool({
  name: "peek",
  family: "test",
  access: "read",
  readsSavedOutput: true,
  description: "reads a file",
  input: z.object({ path: z.string() }),
  paths: (input) => [input.path],
  execute: async (input, ctx) => {
    const target = ctx.resolve(input.path);
    const handle = await ctx.openFile(target.abs);
    try {
      return { kind: "peeked", rel: target.rel, text: (await handle.readFile()).toString("utf8") };
    } finally {
      await handle.close();
    }
  },
});
const look = defineTool({
  name: "look",
  family: "test",
  access: "read",
  description: "resolves a path",
  input: z.object({ path: z.string() }),
  paths: (input) => [input.path],
  execute: (input, ctx) => ({ kind: "looked", abs: ctx.resolve(input.path).abs }),
});
const put = defineTool({
  name: "put",
  family: "test",
  access: "write",
  description: "writes a file",
  input: z.object({ path: z.string() }),
  execute: async (input, ctx) => {
    await ctx.writeFile(input.path, "overwritten\n");
    return { kind: "put" };
  },
});

async function open(limits: Record<string, number> = {}): Promise<Session> {
  const s = await createSession({
    root,
    config: { limits },
    plugins: [definePlugin({ name: "test", tools: [peek, look, put] })],
    allow: ["test"],
  });
  sessions.push(s);
  return s;
}

function save(s: Session, text: string, label = "cmd"): string {
  const file = s.savedOutputs.create(label);
  file.write(Buffer.from(text));
  file.end();
  return file.path;
}

describe("a session's saved output", () => {
  it("lives in a private directory under the state dir, outside the root", async () => {
    const s = await open();
    const file = save(s, "hello\n");
    expect(file.startsWith(path.join(realpathSync(state), "outputs") + path.sep)).toBe(true);
    expect(readFileSync(file, "utf8")).toBe("hello\n");
    expect(
      spawnSync("stat", ["-c", "%a", path.dirname(file)])
        .stdout.toString()
        .trim(),
    ).toBe("700");
  });

  it("is read by a tool that declares readsSavedOutput, by its absolute path only", async () => {
    const s = await open();
    const file = save(s, "the output\n");
    expect(await s.call("peek", { path: file })).toMatchObject({
      kind: "peeked",
      text: "the output\n",
      rel: file,
    });
    // A tool that did not declare it, and a write tool, are refused.
    expect(await s.call("look", { path: file })).toMatchObject({ kind: "error", code: "EPATH_ESCAPE" });
    expect(await s.call("put", { path: file })).toMatchObject({ kind: "error", code: "EPATH_ESCAPE" });
    expect(readFileSync(file, "utf8")).toBe("the output\n");
    // Only the file: not its directory, nor a name beside it.
    expect(await s.call("peek", { path: path.dirname(file) })).toMatchObject({ code: "EPATH_ESCAPE" });
    writeFileSync(path.join(path.dirname(file), "planted.log"), "planted\n");
    expect(await s.call("peek", { path: path.join(path.dirname(file), "planted.log") })).toMatchObject({
      code: "EPATH_ESCAPE",
    });
  });

  it("refuses a symlink planted beside it, pointing out", async () => {
    const s = await open();
    const file = save(s, "x\n");
    const link = path.join(path.dirname(file), "2-cmd.log");
    symlinkSync(path.join(base, "secret.txt"), link);
    const r = await s.call("peek", { path: link });
    expect(r).toMatchObject({ kind: "error", code: "EPATH_ESCAPE" });
    expect(JSON.stringify(r)).not.toContain("SECRET");
  });

  it("refuses a saved file replaced by another (a hard link to a secret under its name)", async () => {
    const s = await open();
    const file = save(s, "x\n");
    unlinkSync(file);
    linkSync(path.join(base, "secret.txt"), file);
    const r = await s.call("peek", { path: file });
    expect(r).toMatchObject({ kind: "error", code: "EPATH_ESCAPE" });
    expect(JSON.stringify(r)).not.toContain("SECRET");
  });

  it("is this session's alone: another session cannot read it", async () => {
    const a = await open();
    const b = await open();
    const file = save(a, "a's output\n");
    expect(await b.call("peek", { path: file })).toMatchObject({ kind: "error", code: "EPATH_ESCAPE" });
    expect(() => b.openFileSync(file)).toThrow(ToolbeltError);
    expect(await a.call("peek", { path: file })).toMatchObject({ kind: "peeked" });
  });

  it("caps each file and the session's total, removing the oldest first, and says why", async () => {
    const s = await open({ shellOutputSavedMaxBytes: 10, shellOutputSavedSessionMaxBytes: 25 });
    const one = s.savedOutputs.create("one");
    one.write(Buffer.from("0123456789abcdef"));
    expect(one.bytes).toBe(10);
    expect(one.stoppedBecause).toMatch(/shellOutputSavedMaxBytes \(10 bytes\)/);
    const two = save(s, "0123456789");
    const three = save(s, "0123456789");
    expect(s.savedOutputs.totalBytes).toBe(20);
    expect(existsSync(one.path)).toBe(false);
    expect(existsSync(two)).toBe(true);
    expect(existsSync(three)).toBe(true);
    const gone = await s.call("peek", { path: one.path });
    expect(gone).toMatchObject({ kind: "error", code: "ENOENT" });
    expect(String(gone.message)).toMatch(/removed to keep this session's saved output under/);
  });

  it("does not split a UTF-8 character at a cap", async () => {
    const s = await open({ shellOutputSavedMaxBytes: 4 });
    const file = s.savedOutputs.create("utf8");
    file.write(Buffer.from("aé€"));
    expect(readFileSync(file.path, "utf8")).toBe("aé");
  });

  it("is gone when the session closes, and a later read says so", async () => {
    const s = await open();
    const file = save(s, "x\n");
    await s.close();
    expect(existsSync(path.dirname(file))).toBe(false);
    expect(() => s.resolvePath(file, { savedOutput: true })).toThrow(/removed when its session closed/);
  });

  it("sweeps the directories of processes that died without closing", async () => {
    const live = save(await open(), "mine\n");
    const outputs = path.join(state, "outputs");
    mkdirSync(outputs, { recursive: true });
    const dead = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]);
    const stale = path.join(outputs, `${dead.stdout.toString()}-abcdef`);
    mkdirSync(stale);
    writeFileSync(path.join(stale, "1-cmd.log"), "left behind\n");
    // The sweep runs once per process, at the first session's start: a fresh module does it again.
    vi.resetModules();
    const fresh = await import("./saved-outputs.js");
    fresh.sweepSavedOutputs();
    expect(existsSync(stale)).toBe(false);
    expect(readdirSync(outputs).filter((n) => n.startsWith(`${dead.stdout.toString()}-`))).toEqual([]);
    // This (live) process's own is left alone.
    expect(existsSync(live)).toBe(true);
  });

  it("is a read-only allowance: defineTool refuses it on a tool that writes", () => {
    expect(() =>
      defineTool({
        name: "sneaky",
        family: "test",
        access: "write",
        readsSavedOutput: true,
        description: "",
        input: z.object({}),
        execute: () => ({ kind: "x" }),
      }),
    ).toThrow(/readsSavedOutput is for read-only tools/);
  });
});
