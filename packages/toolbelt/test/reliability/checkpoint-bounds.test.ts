// Attack: a command the model runs makes a huge file in the root. The checkpoint watch records what
// foreground commands change; it must not read more than checkpoints.maxFileBytes of any file to do
// so (it read the whole file into memory: a sparse 1.5 GiB file cost toolbelt 1.5 GiB).
import { spawn } from "node:child_process";
import { mkdtempSync, realpathSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lacks } from "../../../../test-support/capability.js";
import { assertBuilt, BIN, jsonLines, tempRoot } from "../cli-harness.js";

const GiB = 1024 * 1024 * 1024;
let state = "";
let root = "";

beforeAll(() => {
  assertBuilt();
  state = realpathSync(mkdtempSync(path.join(os.tmpdir(), "tb-cp-bounds-state-")));
  root = tempRoot("tb-cp-bounds-");
});
afterAll(() => {
  rmSync(state, { recursive: true, force: true });
  rmSync(root, { recursive: true, force: true });
});

/** Runs the CLI under /usr/bin/time and returns its output and its peak resident set (bytes). */
function measured(args: string[], input: string): Promise<{ stdout: string; stderr: string; peak: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn("/usr/bin/time", ["-f", "peak-kib=%M", process.execPath, BIN, ...args], {
      env: { ...process.env, NO_COLOR: "1", TOOLBELT_STATE_DIR: state },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
    child.on("error", reject);
    child.on("close", () => {
      clearTimeout(timer);
      const m = /peak-kib=(\d+)/.exec(stderr);
      if (!m) reject(new Error(`no peak from /usr/bin/time: ${stderr}`));
      else resolve({ stdout, stderr, peak: Number(m[1]) * 1024 });
    });
    child.stdin.end(input);
  });
}

const hasTime = (() => {
  try {
    return statSync("/usr/bin/time").isFile();
  } catch {
    return false;
  }
})();
// GNU /usr/bin/time reads the peak memory.
const noTime =
  lacks("linux", process.platform !== "linux" && `this is ${process.platform}`) ||
  lacks("gnu-time", !hasTime && "/usr/bin/time is missing (Debian's time package)");

describe.skipIf(noTime)("the checkpoint watch reads a bounded amount of each changed file", () => {
  it("a command that makes a sparse 1.5 GiB file costs toolbelt no more than the limit, and the file is listed as too large", async () => {
    const calls = [
      { id: "make", tool: "shell", input: { command: "truncate -s 1536M big.bin && echo made" } },
      { id: "small", tool: "shell", input: { command: "echo hi > small.txt" } },
    ];
    const out = await measured(
      ["exec", "--root", root, "--allow", "shell"],
      `${calls.map((c) => JSON.stringify(c)).join("\n")}\n`,
    );
    const answers = jsonLines(out.stdout);
    expect(answers.find((a) => a.id === "make")?.result, out.stdout + out.stderr).toMatchObject({
      kind: "shell_result",
      exit_code: 0,
    });
    expect(statSync(path.join(root, "big.bin")).size).toBe(1.5 * GiB);
    // Reading the file whole put 1.5 GiB in toolbelt's resident set; a bounded read keeps it near a
    // plain session's size (well under 400 MiB: the default limit is 16 MiB).
    expect(out.peak).toBeLessThan(400 * 1024 * 1024);
    // The watch still records the change: big.bin as created with content too large to keep.
    const listed = await new Promise<string>((resolve, reject) => {
      const child = spawn(process.execPath, [BIN, "checkpoints", "list", "--json", "--root", root], {
        env: { ...process.env, TOOLBELT_STATE_DIR: state },
      });
      let text = "";
      child.stdout.setEncoding("utf8").on("data", (d: string) => {
        text += d;
      });
      child.on("error", reject);
      child.on("close", () => resolve(text));
    });
    expect(listed).toContain("big.bin");
    expect(listed).toContain("small.txt");
  }, 180_000);
});
