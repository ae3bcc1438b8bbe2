import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, BIN, cli, jsonLines, tempRoot } from "../cli-harness.js";

// FILESPEED (issue 17), end to end through the built CLI with real ripgrep and real files:
// capped searches that gave different answers run to run and engine to engine, a small edit to a
// file over the 2 MiB write limit, and read de-duplication of partly overlapping windows.

const dirs: string[] = [];
beforeAll(() => assertBuilt());
afterAll(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Thousands of matches over hundreds of files in many directories: ripgrep's threads race. */
function commonTree(): string {
  const root = tempRoot("tb-filespeed-search-");
  dirs.push(root);
  for (let d = 0; d < 24; d++) {
    for (let f = 0; f < 30; f++) {
      const dir = path.join(root, `pkg${d}`, f % 3 === 0 ? "src/deep" : "src");
      mkdirSync(dir, { recursive: true });
      const lines = Array.from({ length: 3 + ((d * 7 + f) % 9) }, (_, i) => `const common${i} = ${d * f};`);
      writeFileSync(path.join(dir, `file${f}.ts`), `${lines.join("\n")}\n`);
    }
  }
  writeFileSync(path.join(root, "top.ts"), "common at the top\n");
  return root;
}

async function search(root: string, engine: "ripgrep" | "js", input: Record<string, unknown>) {
  const r = await cli(["run", "search_files", "--root", root, "--input", JSON.stringify(input)], {
    env: { TOOLBELT_SEARCH_ENGINE: engine },
    timeoutMs: 60_000,
  });
  expect(r.code).toBe(0);
  const p = JSON.parse(r.stdout) as {
    kind: string;
    entries: Array<{ path: string; matches: Array<{ line: number }> }>;
    matches: number;
    capped: boolean;
  };
  expect(p.kind).toBe("search_results");
  return { entries: p.entries, matches: p.matches, capped: p.capped };
}

describe("capped search_files answers are deterministic", () => {
  it("gives the same answer five times, for both engines, and it is the head of the full answer", async () => {
    const root = commonTree();
    const runs = [];
    for (let i = 0; i < 5; i++) runs.push(await search(root, "ripgrep", { query: "common" }));
    for (const run of runs) expect(run).toEqual(runs[0]);
    const first = runs[0] as Awaited<ReturnType<typeof search>>;
    expect(first.capped).toBe(true);
    expect(first.matches).toBe(100);
    const js = await search(root, "js", { query: "common" });
    expect(js).toEqual(first);
    // The documented order: per directory, subdirectories before files, each by name.
    expect(first.entries[0]?.path).toBe("pkg0/src/deep/file0.ts");
    expect(first.entries.some((e) => e.path === "top.ts")).toBe(false);
    // The same through the MCP server: one process, five calls.
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, "serve", "--mcp", "--root", root],
      env: { ...(process.env as Record<string, string>), TOOLBELT_SEARCH_ENGINE: "ripgrep" },
      stderr: "ignore",
    });
    const client = new Client({ name: "filespeed", version: "1" });
    await client.connect(transport);
    const texts = new Set<string>();
    for (let i = 0; i < 5; i++) {
      const res = (await client.callTool({ name: "search_files", arguments: { query: "common" } })) as {
        content: Array<{ type: string; text?: string }>;
      };
      texts.add(res.content.map((c) => c.text ?? "").join(""));
    }
    await client.close();
    expect(texts.size).toBe(1);
    expect([...texts][0]).toContain("pkg0/");
  }, 180_000);
});

describe("editing a file over fileWriteMaxBytes", () => {
  it("applies a small edit_file to a 3 MiB file through the CLI, and still refuses a 3 MiB write_file", async () => {
    const root = tempRoot("tb-filespeed-edit-");
    dirs.push(root);
    const text = `${Array.from({ length: 150_000 }, (_, i) => `row ${i} ${"=".repeat(12)}`).join("\n")}\n`;
    writeFileSync(path.join(root, "big.txt"), text);
    const edit = await cli(
      [
        "run",
        "edit_file",
        "--root",
        root,
        "--input",
        JSON.stringify({ path: "big.txt", old_text: "row 70000 ============", new_text: "row 70000 edited" }),
      ],
      { timeoutMs: 60_000 },
    );
    expect(JSON.parse(edit.stdout)).toMatchObject({ kind: "edit_result" });
    // Through `exec` (stdin): 3 MiB does not fit in an argument.
    const write = await cli(["exec", "--root", root], {
      input: `${JSON.stringify({ id: "w", tool: "write_file", input: { path: "new.txt", content: text } })}\n`,
      timeoutMs: 60_000,
    });
    const answer = jsonLines(write.stdout).find((l) => l.id === "w") as { result: unknown } | undefined;
    expect(answer?.result).toMatchObject({ kind: "error", code: "ETOO_LARGE" });
  }, 120_000);
});

describe("read de-duplication of overlapping windows", () => {
  it("returns only the lines not yet shown and names the ranges left out, within one exec session", async () => {
    const root = tempRoot("tb-filespeed-read-");
    dirs.push(root);
    writeFileSync(
      path.join(root, "a.ts"),
      `${Array.from({ length: 200 }, (_, i) => `export const v${i} = ${i};`).join("\n")}\n`,
    );
    const line = (id: string, input: Record<string, unknown>) =>
      `${JSON.stringify({ id, tool: "read_file", input: { path: "a.ts", ...input } })}\n`;
    const r = await cli(["exec", "--root", root], {
      input:
        line("a", { offset: 1, limit: 60 }) +
        line("b", { offset: 41, limit: 60 }) +
        line("c", { offset: 20, limit: 10 }),
      timeoutMs: 60_000,
    });
    const answers = jsonLines(r.stdout).filter((l) => "id" in l) as Array<{
      id: string;
      result: { kind: string; content?: string; already_shown?: unknown };
    }>;
    const b = answers.find((a) => a.id === "b")?.result;
    expect(b?.kind).toBe("file_content");
    expect(b?.already_shown).toEqual([{ start: 41, end: 60 }]);
    expect(b?.content?.startsWith("    61\t")).toBe(true);
    expect(answers.find((a) => a.id === "c")?.result).toEqual({
      kind: "file_unchanged",
      start_line: 20,
      end_line: 29,
    });
  }, 60_000);
});
