import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import type { Session } from "@toolbelt/core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ShellResult, ShellSessionView } from "./payloads.js";
import { openSession, removeDir, tempDir } from "./test-harness.js";

// Saved output goes under the state dir: a private one keeps these tests out of ~/.toolbelt.
let state: string;
let root: string;
const savedState = process.env.TOOLBELT_STATE_DIR;
const sessions: Session[] = [];

beforeAll(() => {
  state = tempDir("tb-saved-state-");
  process.env.TOOLBELT_STATE_DIR = state;
  root = tempDir("tb-saved-root-");
});
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
});
afterAll(() => {
  if (savedState === undefined) delete process.env.TOOLBELT_STATE_DIR;
  else process.env.TOOLBELT_STATE_DIR = savedState;
  removeDir(state);
  removeDir(root);
});

async function open(limits: Record<string, number> = {}): Promise<Session> {
  const s = await openSession(root, { limits: { shellOutputMaxChars: 2000, ...limits } });
  sessions.push(s);
  return s;
}

async function shell(s: Session, command: string): Promise<ShellResult> {
  const r = await s.call("shell", { command });
  if (r.kind !== "shell_result") throw new Error(JSON.stringify(r));
  return r as ShellResult;
}

/** 20,000 numbered lines with an error in the middle, colour codes around it. */
const LONG = `for i in $(seq 1 20000); do if [ $i = 10000 ]; then printf '\\033[31mERROR: disk full at line %s\\033[0m\\n' $i; else echo "line $i"; fi; done`;

describe("long output is saved, not lost", () => {
  it("keeps the whole output (escape codes stripped) in a file the result names, outside the root", async () => {
    const s = await open();
    const r = await shell(s, LONG);
    expect(r.elided_bytes).toBeGreaterThan(0);
    expect(r.stdout).not.toContain("disk full");
    expect(r.output_file).toBeDefined();
    const file = r.output_file as string;
    expect(path.isAbsolute(file)).toBe(true);
    expect(file.startsWith(`${root}${path.sep}`)).toBe(false);
    const text = readFileSync(file, "utf8");
    const lines = text.split("\n");
    expect(lines[0]).toBe("line 1");
    expect(lines[9999]).toBe("ERROR: disk full at line 10000");
    expect(lines[19999]).toBe("line 20000");
    expect(r.output_file_bytes).toBe(Buffer.byteLength(text));
    expect(r.output_file_note).toBeUndefined();
  });

  it("saves nothing when everything fits in the result", async () => {
    const s = await open();
    const r = await shell(s, "echo short");
    expect(r.output_file).toBeUndefined();
  });

  it("is removed when the session closes", async () => {
    const s = await open();
    const file = (await shell(s, LONG)).output_file as string;
    expect(existsSync(file)).toBe(true);
    await s.close();
    expect(existsSync(file)).toBe(false);
    expect(existsSync(path.dirname(file))).toBe(false);
  });

  it("stops at the per-command cap and says so", async () => {
    const s = await open({ shellOutputSavedMaxBytes: 50_000 });
    const r = await shell(s, LONG);
    expect(r.output_file_bytes).toBeLessThanOrEqual(50_000);
    expect(readFileSync(r.output_file as string).length).toBe(r.output_file_bytes);
    expect(r.output_file_note).toMatch(/only the first 50000 bytes .* \(limits\.shellOutputSavedMaxBytes\)/);
  });

  it("removes the oldest file when the session's cap is reached", async () => {
    const s = await open({ shellOutputSavedSessionMaxBytes: 300_000 });
    const first = (await shell(s, LONG)).output_file as string;
    const second = (await shell(s, LONG)).output_file as string;
    expect(existsSync(first)).toBe(false);
    expect(existsSync(second)).toBe(true);
    expect(s.savedOutputs.removed(first)).toMatch(/limits\.shellOutputSavedSessionMaxBytes/);
  });

  it("saves nothing with limits.shellOutputSavedMaxBytes 0", async () => {
    const s = await open({ shellOutputSavedMaxBytes: 0 });
    const r = await shell(s, LONG);
    expect(r.elided_bytes).toBeGreaterThan(0);
    expect(r.output_file).toBeUndefined();
    expect(r.output_file_note).toBeUndefined();
  });

  it("keeps a background command's long output, and shell_session names the file", async () => {
    const s = await open();
    const started = await s.call("shell", { command: LONG, run_in_background: true });
    expect(started.kind).toBe("shell_started");
    let view: ShellSessionView | undefined;
    await expect
      .poll(
        async () => {
          view = (await s.call("shell_session", {
            operation: "read",
            shell_id: "sh-1",
            wait_ms: 2000,
          })) as ShellSessionView;
          return view.status;
        },
        { timeout: 30_000 },
      )
      .not.toBe("running");
    // Drain what is left to read: the file is complete once the output is.
    await expect
      .poll(() => readFileSync(view?.output_file as string, "utf8").split("\n")[19999], { timeout: 10_000 })
      .toBe("line 20000");
    expect(readFileSync(view?.output_file as string, "utf8")).toContain("ERROR: disk full at line 10000");
  });
});
