import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, BIN } from "../cli-harness.js";

// A writer killed with SIGKILL in the middle of write_file or an edit leaves the old file or the new
// one, never a torn one. Real child processes (`toolbelt exec`), killed at random moments.

const ITERATIONS = Number(process.env.CRASH_ITERATIONS ?? 30);
const SIZE = 512 * 1024;
const A = `${"a".repeat(SIZE - 1)}\n`;
const B = `${"b".repeat(SIZE - 1)}\n`;

let root: string;
beforeAll(() => {
  assertBuilt();
  root = realpathSync(mkdtempSync(path.join(os.tmpdir(), "tb-crash-")));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/**
 * Starts `toolbelt exec` on `lines` and SIGKILLs it `delayMs` after its first answer: the writes are
 * then under way, so the kill lands in the middle of one of them or between two.
 */
function killMidway(lines: string[], delayMs: number, extraArgs: string[] = []): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, "exec", "--root", root, ...extraArgs], {
      stdio: ["pipe", "pipe", "ignore"],
    });
    let answers = 0;
    let armed = false;
    child.stdin.on("error", () => {});
    child.stdout.on("data", (chunk: Buffer) => {
      answers += chunk.toString("utf8").split("\n").length - 1;
      if (armed) return;
      armed = true;
      setTimeout(() => child.kill("SIGKILL"), delayMs);
    });
    child.stdin.write(`${lines.join("\n")}\n`);
    const fallback = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.on("close", () => {
      clearTimeout(fallback);
      resolve(answers);
    });
  });
}

function leftovers(): string[] {
  return readdirSync(root).filter((n) => n.endsWith(".tbtmp"));
}

const tally: Record<string, { iterations: number; old: number; new: number; torn: number }> = {};

afterAll(() => {
  console.log(`crash summary: ${JSON.stringify(tally)}`);
});

/**
 * Kills a writer ITERATIONS times in the middle of 200 whole-file rewrites of `name` (line k is what
 * `call(k)` sends) and checks after each kill that the file holds the old or the new content.
 */
async function killRepeatedly(
  label: string,
  name: string,
  call: (k: number) => { tool: string; input: unknown },
  extraArgs: string[] = [],
): Promise<void> {
  const file = path.join(root, name);
  const t = { iterations: 0, old: 0, new: 0, torn: 0 };
  tally[label] = t;
  const lines = Array.from({ length: 200 }, (_, k) => JSON.stringify(call(k)));
  for (let i = 0; i < ITERATIONS; i++) {
    writeFileSync(file, A);
    const answered = await killMidway(lines, Math.floor(Math.random() * 40), extraArgs);
    expect(answered).toBeLessThan(lines.length);
    const content = readFileSync(file, "utf8");
    t.iterations++;
    if (content === A) t.old++;
    else if (content === B) t.new++;
    else t.torn++;
    expect(content === A || content === B).toBe(true);
  }
  expect(t.torn).toBe(0);
}

describe("crash safety under SIGKILL", () => {
  it("write_file leaves the old or the new content", async () => {
    await killRepeatedly("write_file", "w.txt", (k) => ({
      tool: "write_file",
      input: { path: "w.txt", content: k % 2 ? A : B },
    }));
  }, 600_000);

  it("an edit leaves the old or the new content", async () => {
    const config = path.join(root, "edit-config.json");
    writeFileSync(config, JSON.stringify({ agent: { edit_tool: "edit_file" } }));
    // Flip every line of a to b and back again, many times; each edit rewrites the whole file.
    await killRepeatedly(
      "edit_file",
      "e.txt",
      (k) => ({
        tool: "edit_file",
        input: { path: "e.txt", old_text: k % 2 ? B : A, new_text: k % 2 ? A : B },
      }),
      ["--config", config],
    );
    // Temporary files of killed writers may remain; they never replace the target.
    for (const name of leftovers()) expect(name).toMatch(/^\.(w|e)\.txt\.[0-9a-f]+\.tbtmp$/);
  }, 600_000);
});
