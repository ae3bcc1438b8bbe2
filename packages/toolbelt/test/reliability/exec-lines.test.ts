import { spawn } from "node:child_process";
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, BIN, type CliResult, cli, jsonLines, REPO, tempRoot } from "../cli-harness.js";

// `toolbelt exec` reads JSONL from whoever drives it: an agent loop passing on a model's calls, a CI
// script replaying a file. Whatever one line holds (nesting 100 000 levels deep, hundreds of MiB, an
// id of 16 MiB), it is answered and the session goes on with the next line, as `serve --mcp` does with
// its messages. Before, such a line ended the process (stack overflow writing the id back, out of
// memory holding the line) and every later call went unanswered, or its event vanished from --events.

const base = tempRoot("tb-exec-lines-");
beforeAll(() => assertBuilt());
afterAll(() => rmSync(base, { recursive: true, force: true }));

let roots = 0;
function project(): string {
  const root = path.join(base, `root${roots++}`);
  mkdirSync(root, { recursive: true });
  writeFileSync(path.join(root, "x.txt"), "x\n");
  return root;
}

const read = (id: string) => JSON.stringify({ id, tool: "read_file", input: { path: "x.txt" } });
const DEEP = 100_000;
const deep = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;

/**
 * Runs `exec` with stdin written piece by piece (a piece repeated `times` is written that many times,
 * waiting for the pipe to drain), so hundreds of MiB never sit in this process at once.
 */
function execStreamed(
  args: string[],
  pieces: Array<string | { piece: string; times: number }>,
  options: { node?: string[]; env?: NodeJS.ProcessEnv } = {},
): Promise<CliResult> {
  const child = spawn(process.execPath, [...(options.node ?? []), BIN, "exec", ...args], {
    cwd: REPO,
    env: { ...process.env, NO_COLOR: "1", ...options.env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8");
  child.stderr.setEncoding("utf8");
  child.stdout.on("data", (d: string) => {
    stdout += d;
  });
  child.stderr.on("data", (d: string) => {
    stderr += d;
  });
  // A process that died mid-input closes the pipe: the rest of the input is dropped, not an error here.
  child.stdin.on("error", () => {});
  const write = async () => {
    for (const p of pieces) {
      const [text, times] = typeof p === "string" ? [p, 1] : [p.piece, p.times];
      for (let i = 0; i < times && !child.stdin.destroyed; i++)
        if (!child.stdin.write(text))
          await new Promise<void>((resolve) => {
            child.stdin.once("drain", resolve);
            child.once("close", resolve);
          });
    }
    child.stdin.end();
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`exec timed out\nstdout: ${stdout.slice(0, 2000)}\nstderr: ${stderr.slice(0, 2000)}`));
    }, 240_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    write().catch(reject);
  });
}

/** The answers (not the events) of an exec run; fails with its stderr when a line is not JSON. */
function answersOf(r: CliResult): Array<Record<string, unknown>> {
  let lines: Array<Record<string, unknown>>;
  try {
    lines = jsonLines(r.stdout);
  } catch {
    throw new Error(
      `exec wrote a line that is not JSON\nstdout: ${r.stdout.slice(0, 2000)}\nstderr: ${r.stderr}`,
    );
  }
  return lines.filter((l) => !("event" in l));
}

/** The message of an answer's result ("" when there is none). */
function messageOf(answer: Record<string, unknown> | undefined): string {
  const result = (answer?.result ?? {}) as { message?: unknown };
  return typeof result.message === "string" ? result.message : "";
}

const MiB = 1024 * 1024;

describe("exec answers a line it cannot take, and goes on", () => {
  it("an id nested 100 000 levels deep: refused with the bound, the next call answered", async () => {
    const root = project();
    const r = await cli(["exec", "--root", root], {
      input: `${read("a")}\n{"id":${deep(DEEP)},"tool":"read_file","input":{"path":"x.txt"}}\n${read("b")}\n`,
    });
    const answers = answersOf(r);
    expect(
      answers.map((a) => a.id),
      r.stderr,
    ).toEqual(["a", null, "b"]);
    expect(answers[1]?.result).toMatchObject({ kind: "error", code: "EINVAL_INPUT" });
    expect(messageOf(answers[1])).toContain("nests deeper than 129 levels");
    expect(answers[2]?.result).toMatchObject({ kind: "file_unchanged" });
    // 1: a call answered an error (the refused line); never a crash.
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("3 calls: 1 error (line 2: EINVAL_INPUT)");
  }, 60_000);

  it("--events: a deep input leaves no gap: every event written, in sequence, each call's pair before its answer", async () => {
    const root = project();
    const r = await cli(["exec", "--root", root, "--events"], {
      input: `${read("a")}\n{"id":"c","tool":"read_file","input":{"path":${deep(DEEP)}}}\n${read("d")}\n`,
    });
    const lines = jsonLines(r.stdout);
    const events = lines
      .filter((l) => "event" in l)
      .map((l) => l.event as { seq: number; type: string; call_id?: string });
    expect(
      events.map((e) => e.seq),
      r.stderr,
    ).toEqual(events.map((_, i) => i));
    const answers = answersOf(r);
    expect(answers.map((a) => a.id)).toEqual(["a", null, "d"]);
    expect(answers[1]?.result).toMatchObject({ kind: "error", code: "EINVAL_INPUT" });
    for (const id of ["a", "d"])
      expect(
        events.filter((e) => e.call_id === id).map((e) => e.type),
        `events of ${id}`,
      ).toEqual(["tool_call", "tool_result"]);
  }, 60_000);

  it("a 300 MiB line with no break under a 128 MiB heap: skipped with the bound, the next call answered", async () => {
    const root = project();
    const [head, tail] = ['{"id":"big","tool":"read_file","input":{"path":"', '"}}'];
    const r = await execStreamed(
      ["--root", root],
      [head, { piece: "a".repeat(MiB), times: 300 }, `${tail}\n`, `${read("after")}\n`],
      // A small heap stands for a CI container's memory; with none, 600 MiB ended exec the same way
      // (RangeError: Invalid string length).
      { node: ["--max-old-space-size=128"] },
    );
    const answers = answersOf(r);
    expect(
      answers.map((a) => a.id),
      r.stderr.slice(0, 2000),
    ).toEqual([null, "after"]);
    expect(answers[0]?.result).toMatchObject({
      kind: "error",
      code: "ETOO_LARGE",
      size: head.length + 300 * MiB + tail.length,
      limit: 64 * MiB,
    });
    expect(messageOf(answers[0])).toContain(
      `over exec's limit of ${64 * MiB} bytes per line (TOOLBELT_EXEC_MAX_LINE_BYTES`,
    );
    expect(answers[1]?.result).toMatchObject({ kind: "file_content" });
  }, 300_000);

  it("failing lines with 16 MiB ids are not all held until the end (12 of them under a 128 MiB heap)", async () => {
    const root = project();
    const bad = `{"id":"${"i".repeat(16 * MiB)}","tool":5}\n`;
    const r = await execStreamed(["--root", root], [{ piece: bad, times: 12 }, `${read("after")}\n`], {
      node: ["--max-old-space-size=128"],
    });
    const answers = answersOf(r);
    expect(answers, r.stderr.slice(0, 2000)).toHaveLength(13);
    expect(answers.at(-1)).toMatchObject({ id: "after", result: { kind: "file_content" } });
    // The summary names the first five, each id cut short.
    const summary = r.stderr.trim().split("\n").at(-1) ?? "";
    expect(summary).toMatch(/^toolbelt exec: 13 calls: 12 errors \(id "i{80}"…: EINVAL_INPUT, /);
    expect(summary.length).toBeLessThan(1000);
  }, 300_000);

  it("TOOLBELT_EXEC_MAX_LINE_BYTES sets the bound; \\n, \\r\\n and a lone \\r still end a line", async () => {
    const root = project();
    const long = JSON.stringify({ id: "long", tool: "read_file", input: { path: "y".repeat(5000) } });
    const r = await cli(["exec", "--root", root], {
      input: `${read("1")}\r\n${long}\n${read("2")}\r${read("3")}\n\n${read("4")}`,
      env: { TOOLBELT_EXEC_MAX_LINE_BYTES: "4096" },
    });
    const answers = answersOf(r);
    expect(
      answers.map((a) => a.id),
      r.stderr,
    ).toEqual(["1", null, "2", "3", "4"]);
    expect(answers[1]?.result).toMatchObject({
      kind: "error",
      code: "ETOO_LARGE",
      size: long.length,
      limit: 4096,
    });
    for (const i of [0, 2, 3, 4]) expect(answers[i]?.result).not.toMatchObject({ kind: "error" });
  }, 60_000);
});

describe("exec answers a result JSON cannot carry", () => {
  it("a plugin tool returning a BigInt: EINTERNAL for that call, the next call answered", async () => {
    const dir = path.join(base, "plugin");
    mkdirSync(path.join(dir, "node_modules"), { recursive: true });
    symlinkSync(path.join(REPO, "node_modules", "@toolbelt"), path.join(dir, "node_modules", "@toolbelt"));
    const plugin = path.join(dir, "big.mjs");
    writeFileSync(
      plugin,
      `import { definePlugin, defineTool, z } from "@toolbelt/core";
export default definePlugin({
  name: "bigint",
  tools: [defineTool({ name: "big_result", family: "bigint", access: "read", description: "returns a BigInt",
    input: z.object({}), execute: async () => ({ kind: "big", n: 1n }) })],
});
`,
    );
    const user = path.join(base, "user");
    mkdirSync(user, { recursive: true });
    writeFileSync(path.join(user, "config.json"), JSON.stringify({ plugins: [plugin] }));
    const root = project();
    const r = await cli(["exec", "--root", root], {
      input: `{"id":"big","tool":"big_result","input":{}}\n${read("next")}\n`,
      env: { TOOLBELT_CONFIG_DIR: user, XDG_CONFIG_HOME: user, TOOLBELT_TRUST: "" },
    });
    const answers = answersOf(r);
    expect(
      answers.map((a) => a.id),
      r.stderr,
    ).toEqual(["big", "next"]);
    expect(answers[0]?.result).toMatchObject({ kind: "error", code: "EINTERNAL" });
    expect(messageOf(answers[0])).toContain("the result cannot be written as JSON");
    expect(answers[1]?.result).toMatchObject({ kind: "file_content" });
  }, 60_000);
});
