import { spawnSync } from "node:child_process";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { assertBuilt } from "../../toolbelt/test/cli-harness.js";

const repo = fileURLToPath(new URL("../../../", import.meta.url));
const bin = path.join(repo, "packages/toolbelt/dist/bin.js");
// A missing or stale build fails these tests (see assertBuilt), it does not skip them.
beforeAll(assertBuilt);

let root: string;
beforeEach(async () => {
  root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "tb-edit-e2e-")));
});
afterEach(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

function run(tool: string, input: unknown, extra: string[] = []) {
  const result = spawnSync(
    process.execPath,
    [bin, "run", tool, "--root", root, "--input", JSON.stringify(input), ...extra],
    { encoding: "utf8", timeout: 30_000 },
  );
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

async function pin(editTool: string) {
  await fs.mkdir(path.join(root, "configs"), { recursive: true });
  await fs.writeFile(path.join(root, "configs/app.json"), JSON.stringify({ agent: { edit_tool: editTool } }));
}

describe("edit tools through `toolbelt run`", () => {
  it("edit_file (the default with no model) keeps CRLF and BOM and reports the strategy and diff", async () => {
    await fs.writeFile(path.join(root, "a.txt"), "\uFEFFalpha\r\n    beta\r\ngamma\r\n");
    const r = run("edit_file", { path: "a.txt", old_text: "beta\n", new_text: "BETA\n" });
    expect(r.code).toBe(0);
    const payload = JSON.parse(r.stdout);
    expect(payload).toMatchObject({ kind: "edit_result", path: "a.txt", strategy: "line_endings" });
    expect(payload.diff).toContain("-    beta\n+    BETA");
    expect(await fs.readFile(path.join(root, "a.txt"), "utf8")).toBe("\uFEFFalpha\r\n    BETA\r\ngamma\r\n");
  });

  it("prints the model-facing text, and exits 1 on EMULTI_MATCH with the file untouched", async () => {
    await fs.writeFile(path.join(root, "d.js"), "x();\ny();\nx();\n");
    const text = run("edit_file", { path: "d.js", old_text: "y();", new_text: "z();" }, ["--format", "text"]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^# Kind: edit_result\n# Path: d.js\n# Strategy: exact\n/);
    expect(text.stdout).toContain("+z();");
    const multi = run("edit_file", { path: "d.js", old_text: "x();", new_text: "w();" });
    expect(multi.code).toBe(1);
    expect(JSON.parse(multi.stdout)).toMatchObject({
      kind: "error",
      code: "EMULTI_MATCH",
      match_lines: [1, 3],
    });
    expect(await fs.readFile(path.join(root, "d.js"), "utf8")).toBe("x();\nz();\nx();\n");
  });

  it("agent.edit_tool in configs/app.json pins search_replace_block, applying across files all-or-nothing", async () => {
    await pin("search_replace_block");
    await fs.writeFile(path.join(root, "a.py"), "def a():\n    return 1\n");
    await fs.writeFile(path.join(root, "b.py"), "def b():\n    return 2\n");
    const block = (file: string, s: string, r: string) =>
      `${file}\n\`\`\`python\n<<<<<<< SEARCH\n${s}\n=======\n${r}\n>>>>>>> REPLACE\n\`\`\`\n`;
    const bad = run("search_replace_block", {
      content:
        block("a.py", "    return 1", "    return 10") + block("b.py", "    return 3", "    return 30"),
    });
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.stdout).code).toBe("ENO_MATCH");
    expect(await fs.readFile(path.join(root, "a.py"), "utf8")).toBe("def a():\n    return 1\n");
    const good = run("search_replace_block", {
      content:
        block("a.py", "    return 1", "    return 10") + block("b.py", "    return 2", "    return 20"),
    });
    expect(good.code).toBe(0);
    expect(JSON.parse(good.stdout).files).toHaveLength(2);
    expect(await fs.readFile(path.join(root, "b.py"), "utf8")).toBe("def b():\n    return 20\n");
    // The pinned backend is the only one bound.
    expect(run("edit_file", { path: "a.py", old_text: "a", new_text: "b" }).code).toBe(1);
  });

  it("--model picks structured_patch for GPT models, and the mewbo profile names it file_edit_tool", async () => {
    await fs.writeFile(path.join(root, "c.txt"), "one\ntwo\n");
    const r = run("structured_patch", { path: "c.txt", old_string: "two", new_string: "2" }, [
      "--model",
      "gpt-5",
    ]);
    expect(r.code).toBe(0);
    const mewbo = run("file_edit_tool", { file_path: "c.txt", old_string: "", new_string: "three\n" }, [
      "--model",
      "gpt-5",
      "--profile",
      "mewbo",
    ]);
    expect(mewbo.code).toBe(0);
    expect(await fs.readFile(path.join(root, "c.txt"), "utf8")).toBe("one\n2\nthree\n");
  });

  it("--config pins a backend from another file", async () => {
    const config = path.join(root, "other.json");
    await fs.writeFile(config, JSON.stringify({ agent: { edit_tool: "structured_patch" } }));
    await fs.writeFile(path.join(root, "e.txt"), "a\n");
    const r = run("structured_patch", { path: "e.txt", old_string: "a", new_string: "b" }, [
      "--config",
      config,
    ]);
    expect(r.code).toBe(0);
    expect(await fs.readFile(path.join(root, "e.txt"), "utf8")).toBe("b\n");
  });

  it("an edit invalidates the read ledger: the next read_file in the session returns the new content", async () => {
    await fs.writeFile(path.join(root, "r.txt"), "first\nsecond\n");
    const lines = [
      { id: "1", tool: "read_file", input: { path: "r.txt" } },
      { id: "2", tool: "read_file", input: { path: "r.txt" } },
      { id: "3", tool: "edit_file", input: { path: "r.txt", old_text: "second", new_text: "SECOND" } },
      { id: "4", tool: "read_file", input: { path: "r.txt" } },
    ];
    const result = spawnSync(process.execPath, [bin, "exec", "--root", root], {
      input: lines.map((l) => JSON.stringify(l)).join("\n"),
      encoding: "utf8",
      timeout: 30_000,
    });
    const answers = result.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { id: string; result: { kind: string; content?: string } });
    expect(answers.map((a) => a.result.kind)).toEqual([
      "file_content",
      "file_unchanged",
      "edit_result",
      "file_content",
    ]);
    expect(answers[3]?.result.content).toContain("SECOND");
  });
});
