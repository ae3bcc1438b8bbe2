import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from "node:child_process";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt } from "../../toolbelt/test/cli-harness.js";

const repo = fileURLToPath(new URL("../../../", import.meta.url));
const bin = path.join(repo, "packages/toolbelt/dist/bin.js");
// A missing or stale build fails these tests (see assertBuilt), it does not skip them.
beforeAll(assertBuilt);

let root: string;

beforeAll(async () => {
  root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "tb-files-e2e-")));
  await fs.writeFile(path.join(root, "notes.txt"), "first line\nsecond line\nthird line\n");
});
afterAll(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

/** A `toolbelt exec` session driven one request at a time, waiting for each answer. */
function execSession(cwd: string) {
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, [bin, "exec", "--root", cwd], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  const answers = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  let n = 0;
  return {
    async call(tool: string, input: unknown) {
      const id = `c${++n}`;
      child.stdin.write(`${JSON.stringify({ id, tool, input })}\n`);
      const next = await answers.next();
      const answer = JSON.parse(String(next.value)) as { id: string; result: Record<string, unknown> };
      expect(answer.id).toBe(id);
      return answer.result;
    },
    async close() {
      child.stdin.end();
      return new Promise<number | null>((resolve) => child.on("close", resolve));
    },
  };
}

describe("files through the toolbelt CLI", () => {
  it("toolbelt run read_file prints the numbered window (json and text)", () => {
    const json = spawnSync(
      process.execPath,
      [
        bin,
        "run",
        "read_file",
        "--root",
        root,
        "--input",
        JSON.stringify({ path: "notes.txt", offset: 2, limit: 1 }),
      ],
      { encoding: "utf8" },
    );
    expect(json.status).toBe(0);
    const payload = JSON.parse(json.stdout) as Record<string, unknown>;
    expect(payload).toMatchObject({ kind: "file_content", start_line: 2, end_line: 2, truncated: true });
    expect(payload.content).toBe("     2\tsecond line\n... (truncated - use offset/limit to read more)");

    const text = spawnSync(
      process.execPath,
      [bin, "run", "read_file", "--root", root, "--format", "text", "--input", '{"path":"notes.txt"}'],
      { encoding: "utf8" },
    );
    expect(text.status).toBe(0);
    expect(text.stdout).toContain("# Lines: 1-3 of 3\n\n     1\tfirst line\n");

    const missing = spawnSync(
      process.execPath,
      [bin, "run", "read_file", "--root", root, "--input", '{"path":"nope"}'],
      {
        encoding: "utf8",
      },
    );
    expect(missing.status).toBe(1);
    expect(JSON.parse(missing.stdout)).toMatchObject({ kind: "error", code: "ENOENT" });
  });

  it("toolbelt exec: a repeated read is file_unchanged, a read after an external change is full content", async () => {
    const session = execSession(root);
    const first = await session.call("read_file", { path: "notes.txt" });
    expect(first).toMatchObject({ kind: "file_content", total_lines: 3 });
    const second = await session.call("read_file", { path: "notes.txt" });
    expect(second).toEqual({ kind: "file_unchanged", start_line: 1, end_line: 3 });
    await fs.writeFile(path.join(root, "notes.txt"), "first line\nchanged line\nthird line\n");
    const third = await session.call("read_file", { path: "notes.txt" });
    expect(third).toMatchObject({ kind: "file_content" });
    expect(third.content).toContain("     2\tchanged line");
    const search = await session.call("search_files", { query: "changed" });
    expect(search).toMatchObject({
      kind: "search_results",
      entries: [{ path: "notes.txt", matches: [{ line: 2, text: "changed line" }] }],
    });
    expect(await session.close()).toBe(0);
  });

  it("toolbelt doctor names the search engine", () => {
    const out = spawnSync(process.execPath, [bin, "doctor", "--root", root, "--format", "json"], {
      encoding: "utf8",
    });
    const report = JSON.parse(out.stdout) as Array<{ family: string; name: string; detail: string }>;
    const search = report.find((r) => r.family === "files" && r.name === "search");
    expect(search?.detail).toMatch(/ripgrep|js walker/);
  });
});
