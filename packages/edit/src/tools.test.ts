import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createSession, type Payload, type Session } from "@toolbelt/core";
import { fingerprintOf } from "@toolbelt/core/internal";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { family } from "./index.js";

let root: string;
const sessions: Session[] = [];

beforeEach(async () => {
  root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "tb-edit-")));
});
afterEach(async () => {
  for (const s of sessions.splice(0)) await s.close();
  await fs.rm(root, { recursive: true, force: true });
});

async function session(
  options: {
    model?: string;
    edit_tool?: "edit_file" | "search_replace_block" | "structured_patch" | "";
    profile?: string;
  } = {},
) {
  const s = await createSession({
    root,
    plugins: [family],
    ...(options.model ? { model: options.model } : {}),
    ...(options.profile ? { profile: options.profile } : {}),
    config: options.edit_tool !== undefined ? { agent: { edit_tool: options.edit_tool } } : {},
  });
  sessions.push(s);
  return s;
}

const write = (rel: string, data: string | Uint8Array) => fs.writeFile(path.join(root, rel), data);
const read = (rel: string) => fs.readFile(path.join(root, rel), "utf8");

/** What read_file does with the ledger: records the version it showed. */
async function markRead(s: Session, rel: string) {
  const abs = path.join(root, rel);
  const bytes = await fs.readFile(abs);
  s.ledger.record(abs, fingerprintOf(bytes, await fs.stat(abs)), { start: 1, end: Number.POSITIVE_INFINITY });
}

function expectOk(p: Payload) {
  if (p.kind === "error") throw new Error(`${String(p.code)}: ${String(p.message)}`);
  expect(p.kind).toBe("edit_result");
  return p as Payload & {
    diff: string;
    strategy?: string;
    files: Array<Record<string, unknown>>;
    notes: string[];
  };
}

// notebook_edit is no backend: it is bound beside whichever backend the session binds.
const names = (s: Session) => s.bind().tools.map((t) => t.name);
const withNotebook = (backend: string) => [backend, "notebook_edit"];

describe("backend binding", () => {
  it("binds exactly one edit tool, following the model or the pin", async () => {
    expect(names(await session())).toEqual(withNotebook("edit_file"));
    expect(names(await session({ model: "claude-sonnet-4-5" }))).toEqual(
      withNotebook("search_replace_block"),
    );
    expect(names(await session({ model: "gpt-5-codex" }))).toEqual(withNotebook("structured_patch"));
    expect(names(await session({ model: "o3" }))).toEqual(withNotebook("structured_patch"));
    expect(names(await session({ model: "claude-opus-4", edit_tool: "edit_file" }))).toEqual(
      withNotebook("edit_file"),
    );
    const other = await session({ model: "gpt-5" });
    expect(await other.call("edit_file", { path: "x", old_text: "", new_text: "y" })).toMatchObject({
      code: "EUNKNOWN_TOOL",
    });
  });

  it("exposes the reference profiles' names and parameters", async () => {
    const mewboPatch = await session({ model: "gpt-5", profile: "mewbo" });
    const schema = mewboPatch.bind().tools[0];
    expect(schema?.name).toBe("file_edit_tool");
    expect(Object.keys(((schema?.inputSchema ?? {}) as { properties: object }).properties)).toEqual(
      expect.arrayContaining(["file_path", "old_string", "new_string", "replace_all", "root"]),
    );
    const mewboBlocks = await session({ model: "claude-3-7", profile: "mewbo" });
    expect(names(mewboBlocks)).toEqual(withNotebook("aider_edit_block_tool"));
    const mouaif = await session({ profile: "mouaif" });
    const props = ((mouaif.bind().tools[0]?.inputSchema ?? {}) as { properties: object }).properties;
    expect(Object.keys(props)).toEqual(expect.arrayContaining(["path", "file", "oldText", "newText"]));
  });

  it("mewbo binds one of its own two edit tools with no model or a model neither Claude nor GPT", async () => {
    expect(names(await session({ profile: "mewbo" }))).toEqual(withNotebook("aider_edit_block_tool"));
    expect(names(await session({ profile: "mewbo", model: "llama-3.3-70b" }))).toEqual(
      withNotebook("aider_edit_block_tool"),
    );
    expect(names(await session({ profile: "mewbo", edit_tool: "edit_file" }))).toEqual(
      withNotebook("aider_edit_block_tool"),
    );
    expect(names(await session({ profile: "mewbo", model: "gpt-5" }))).toEqual(
      withNotebook("file_edit_tool"),
    );
    // The default profile keeps edit_file for an unknown model.
    expect(names(await session({ model: "llama-3.3-70b" }))).toEqual(withNotebook("edit_file"));
  });

  it('takes edit_tool "" as "follow the model" instead of a config error', async () => {
    expect(names(await session({ profile: "mewbo", model: "gpt-5", edit_tool: "" }))).toEqual(
      withNotebook("file_edit_tool"),
    );
    expect(names(await session({ model: "claude-sonnet-4", edit_tool: "" }))).toEqual(
      withNotebook("search_replace_block"),
    );
  });
});

describe("edit_file", () => {
  it("keeps CRLF, the BOM, the missing final newline and the file mode", async () => {
    await write("win.cs", "\uFEFFclass A {\r\n    int x = 1;\r\n    int y = 2;\r\n}");
    await fs.chmod(path.join(root, "win.cs"), 0o755);
    const s = await session();
    const p = expectOk(
      await s.call("edit_file", {
        path: "win.cs",
        old_text: "int x = 1;\nint y = 2;",
        new_text: "int x = 1;\nint y = 3;\nint z = 4;",
      }),
    );
    expect(p.strategy).toBe("indentation");
    expect(await read("win.cs")).toBe(
      "\uFEFFclass A {\r\n    int x = 1;\r\n    int y = 3;\r\n    int z = 4;\r\n}",
    );
    expect((await fs.stat(path.join(root, "win.cs"))).mode & 0o777).toBe(0o755);
    expect(p.diff).toContain("-    int y = 2;\n+    int y = 3;");
  });

  it("edits a tab-indented file from a space-indented search", async () => {
    await write("t.go", "func f() {\n\tif ok {\n\t\trun()\n\t}\n}\n");
    const s = await session();
    const p = expectOk(
      await s.call("edit_file", {
        path: "t.go",
        old_text: "if ok {\n    run()\n}",
        new_text: "if ok {\n    run()\n    log()\n}",
      }),
    );
    expect(p.strategy).toBe("indentation");
    expect(await read("t.go")).toBe("func f() {\n\tif ok {\n\t\trun()\n\t\tlog()\n\t}\n}\n");
  });

  it("answers EMULTI_MATCH and ENO_MATCH without touching the file", async () => {
    const original = "a();\nb();\na();\n";
    await write("m.js", original);
    const s = await session();
    const multi: Payload = await s.call("edit_file", { path: "m.js", old_text: "a();", new_text: "c();" });
    expect(multi.code).toBe("EMULTI_MATCH");
    expect(multi.match_lines).toEqual([1, 3]);
    expect(multi.match_count).toBe(2);
    const none: Payload = await s.call("edit_file", { path: "m.js", old_text: "d();", new_text: "c();" });
    expect(none.code).toBe("ENO_MATCH");
    expect(await read("m.js")).toBe(original);
  });

  it("creates a missing file from an empty old_text, and refuses an empty old_text on a non-empty file", async () => {
    const s = await session();
    expectOk(await s.call("edit_file", { path: "new/dir/f.txt", old_text: "", new_text: "hello\n" }));
    expect(await read("new/dir/f.txt")).toBe("hello\n");
    expect(await s.call("edit_file", { path: "new/dir/f.txt", old_text: "", new_text: "x" })).toMatchObject({
      code: "EINVAL_INPUT",
    });
  });

  it("refuses paths outside the root", async () => {
    const s = await session();
    expect(await s.call("edit_file", { path: "../outside.txt", old_text: "", new_text: "x" })).toMatchObject({
      code: "EPATH_ESCAPE",
    });
  });

  it("invalidates the read ledger so the next read is fresh", async () => {
    await write("l.txt", "one\ntwo\n");
    const s = await session();
    await markRead(s, "l.txt");
    const abs = path.join(root, "l.txt");
    expect(s.ledger.status(abs)).toBe("current");
    expectOk(await s.call("edit_file", { path: "l.txt", old_text: "two", new_text: "three" }));
    expect(s.ledger.status(abs)).toBe("unread");
  });

  it("applies to what is on disk now when the file changed since it was read, and says so", async () => {
    await write("s.txt", "alpha\nbeta\n");
    const s = await session();
    await markRead(s, "s.txt");
    // No wait for the clock: a version is size, mtime and the content's hash, so the new content alone
    // tells the change.
    await write("s.txt", "alpha\nbeta\ngamma\n");
    const outcome = await s.callWithText("edit_file", { path: "s.txt", old_text: "beta", new_text: "BETA" });
    expect(outcome.payload.files).toEqual([expect.objectContaining({ changed_on_disk: true })]);
    expect(outcome.text).toMatch(/# Changed-On-Disk: yes/);
    expect(await read("s.txt")).toBe("alpha\nBETA\ngamma\n");
  });

  it("serialises concurrent edits of one file so none is lost", async () => {
    const lines = Array.from({ length: 20 }, (_, i) => `line ${i};`);
    await write("c.txt", `${lines.join("\n")}\n`);
    const s = await session();
    const results = await Promise.all(
      lines.map((l, i) => s.call("edit_file", { path: "c.txt", old_text: l, new_text: `edited ${i};` })),
    );
    for (const r of results) expectOk(r);
    expect(await read("c.txt")).toBe(`${lines.map((_, i) => `edited ${i};`).join("\n")}\n`);
  });

  it("appends afterWrite notes to the result", async () => {
    await write("n.ts", "let a = 1;\n");
    const s = await session();
    s.hooks.afterWrite.add(({ rel }) => `diagnostics for ${rel}: 0 errors`);
    const outcome = await s.callWithText("edit_file", {
      path: "n.ts",
      old_text: "let a = 1;",
      new_text: "let a = 2;",
    });
    expect(outcome.payload.notes).toEqual(["diagnostics for n.ts: 0 errors"]);
    expect(outcome.text).toMatch(/diagnostics for n.ts: 0 errors$/);
    expect(outcome.text).toMatch(/^# Kind: edit_result\n# Path: n.ts\n# Strategy: exact/);
  });

  it("accepts mouaif's path|file, oldText, newText", async () => {
    await write("q.txt", "x = 1\n");
    const s = await session({ profile: "mouaif" });
    expectOk(await s.call("edit_file", { file: "q.txt", oldText: "x = 1", newText: "x = 2" }));
    expect(await read("q.txt")).toBe("x = 2\n");
    expect(await s.call("edit_file", { oldText: "a", newText: "b" })).toMatchObject({ code: "EINVAL_INPUT" });
  });
});

describe("structured_patch", () => {
  it("replaces one exact occurrence, or all with replace_all", async () => {
    await write("p.py", "x = 1\ny = x\nz = x\n");
    const s = await session({ model: "gpt-5" });
    const multi: Payload = await s.call("structured_patch", {
      path: "p.py",
      old_string: "= x",
      new_string: "= w",
    });
    expect(multi.code).toBe("EMULTI_MATCH");
    expect(String(multi.message)).toMatch(/replace_all/);
    const all = expectOk(
      await s.call("structured_patch", {
        path: "p.py",
        old_string: "= x",
        new_string: "= w",
        replace_all: true,
      }),
    );
    expect(all.files[0]?.replacements).toBe(2);
    expect(await read("p.py")).toBe("x = 1\ny = w\nz = w\n");
  });

  it("does not match fuzzily", async () => {
    await write("f.py", "def f():\n    return 1\n");
    const s = await session({ model: "gpt-5" });
    const r: Payload = await s.call("structured_patch", {
      path: "f.py",
      old_string: "def f():\n  return 1",
      new_string: "x",
    });
    expect(r.code).toBe("ENO_MATCH");
    expect(String(r.message)).toContain("1: def f():");
  });

  it("appends with an empty old_string, creating the file if needed, in the file's line endings", async () => {
    const s = await session({ model: "gpt-5" });
    expectOk(await s.call("structured_patch", { path: "log.txt", old_string: "", new_string: "first\n" }));
    expect(await read("log.txt")).toBe("first\n");
    await write("crlf.txt", "a\r\nb");
    expectOk(await s.call("structured_patch", { path: "crlf.txt", old_string: "", new_string: "c\n" }));
    expect(await read("crlf.txt")).toBe("a\r\nb\r\nc\r\n");
  });

  it("matches an LF old_string in a CRLF file and keeps CRLF", async () => {
    await write("w.txt", "one\r\ntwo\r\nthree\r\n");
    const s = await session({ model: "gpt-5" });
    const p = expectOk(
      await s.call("structured_patch", { path: "w.txt", old_string: "one\ntwo", new_string: "1\n2\n2.5" }),
    );
    expect(p.strategy).toBe("line_endings");
    expect(await read("w.txt")).toBe("1\r\n2\r\n2.5\r\nthree\r\n");
  });

  it("takes mewbo's file_path relative to root", async () => {
    await fs.mkdir(path.join(root, "sub"));
    await write("sub/r.txt", "old\n");
    const s = await session({ model: "gpt-5", profile: "mewbo" });
    expectOk(
      await s.call("file_edit_tool", {
        file_path: "r.txt",
        root: "sub",
        old_string: "old",
        new_string: "new",
      }),
    );
    expect(await read("sub/r.txt")).toBe("new\n");
  });
});

const blk = (file: string, search: string, replace: string) =>
  `${file}\n\`\`\`\n<<<<<<< SEARCH\n${search}\n=======\n${replace}\n>>>>>>> REPLACE\n\`\`\`\n`;

describe("search_replace_block", () => {
  it("applies several blocks across files", async () => {
    await write("a.ts", "export const a = 1;\nexport const b = 2;\n");
    await write("b.ts", "import { a } from './a';\n");
    const s = await session({ model: "claude-sonnet-4" });
    const content = `${blk("a.ts", "export const a = 1;", "export const a = 10;")}${blk("a.ts", "export const b = 2;", "export const b = 20;")}${blk("b.ts", "import { a } from './a';", "import { a, b } from './a';")}`;
    const p = expectOk(await s.call("search_replace_block", { content }));
    expect(p.files.map((f) => f.path)).toEqual(["a.ts", "b.ts"]);
    expect(await read("a.ts")).toBe("export const a = 10;\nexport const b = 20;\n");
    expect(await read("b.ts")).toBe("import { a, b } from './a';\n");
    expect(p.diff).toContain("+++ b/a.ts");
    expect(p.diff).toContain("+++ b/b.ts");
  });

  it("applies all blocks or none, across files", async () => {
    await write("a.ts", "one\n");
    await write("b.ts", "const two = 2;\n");
    const s = await session({ model: "claude-sonnet-4" });
    const content = `${blk("a.ts", "one", "ONE")}${blk("b.ts", "const two = 3;", "const two = 4;")}`;
    const r: Payload = await s.call("search_replace_block", { content });
    expect(r.code).toBe("ENO_MATCH");
    expect(String(r.message)).toMatch(/1 of 2 blocks failed; nothing was written/);
    expect(String(r.message)).toContain("1: const two = 2;");
    expect(await read("a.ts")).toBe("one\n");
    expect(await read("b.ts")).toBe("const two = 2;\n");
  });

  it("keeps the span between `...` lines unchanged", async () => {
    const body = Array.from({ length: 8 }, (_, i) => `  step${i}();`).join("\n");
    await write("e.js", `function run() {\n  start();\n${body}\n  finish();\n}\n`);
    const s = await session({ model: "claude-sonnet-4" });
    const content = blk(
      "e.js",
      "function run() {\n  start();\n...\n  finish();\n}",
      "function run() {\n  begin();\n...\n  end();\n}",
    );
    const p = expectOk(await s.call("search_replace_block", { content }));
    expect(await read("e.js")).toBe(`function run() {\n  begin();\n${body}\n  end();\n}\n`);
    expect(p.strategy).toBe("exact+exact");
  });

  it("refuses `...` that does not pair up", async () => {
    await write("e.js", "a\nb\nc\n");
    const s = await session({ model: "claude-sonnet-4" });
    const r: Payload = await s.call("search_replace_block", { content: blk("e.js", "a\n...\nc", "A\nC") });
    expect(r.code).toBe("EINVAL_INPUT");
    expect(String(r.message)).toMatch(/must pair up/);
  });

  it("rejects content with shell code blocks and writes nothing", async () => {
    await write("a.ts", "one\n");
    const s = await session({ model: "claude-sonnet-4" });
    const r: Payload = await s.call("search_replace_block", {
      content: `${blk("a.ts", "one", "ONE")}\n\`\`\`sh\nrm -rf build\n\`\`\`\n`,
    });
    expect(r.code).toBe("EINVAL_INPUT");
    expect(String(r.message)).toMatch(/never runs commands/);
    expect(await read("a.ts")).toBe("one\n");
  });

  it("only touches files in the files allowlist", async () => {
    await write("a.ts", "one\n");
    await write("b.ts", "two\n");
    const s = await session({ model: "claude-sonnet-4" });
    const r: Payload = await s.call("search_replace_block", {
      content: `${blk("a.ts", "one", "ONE")}${blk("b.ts", "two", "TWO")}`,
      files: ["a.ts"],
    });
    expect(r.code).toBe("EDENIED");
    expect(await read("a.ts")).toBe("one\n");
  });

  it("is exact by default and uses edit_file's matcher when tolerant", async () => {
    await write("i.py", "class A:\n    def f(self):\n        return 1\n");
    const s = await session({ model: "claude-sonnet-4" });
    const content = blk("i.py", "def f(self):\n    return 1", "def f(self):\n    return 2");
    const strict: Payload = await s.call("search_replace_block", { content });
    expect(strict.code).toBe("ENO_MATCH");
    expect(String(strict.message)).toMatch(/tolerant: true/);
    const tolerant = expectOk(await s.call("search_replace_block", { content, tolerant: true }));
    expect(tolerant.strategy).toBe("indentation");
    expect(await read("i.py")).toBe("class A:\n    def f(self):\n        return 2\n");
  });

  it("creates a file from an empty SEARCH and keeps CRLF+BOM on edits", async () => {
    await write("w.txt", "\uFEFFkeep\r\nold\r\n");
    const s = await session({ model: "claude-sonnet-4" });
    const content = `${blk("fresh/n.md", "", "# New")}${blk("w.txt", "old", "new\nnewer")}`;
    expectOk(await s.call("search_replace_block", { content }));
    expect(await read("fresh/n.md")).toBe("# New\n");
    expect(await read("w.txt")).toBe("\uFEFFkeep\r\nnew\r\nnewer\r\n");
  });

  it("serialises concurrent multi-file calls without deadlock or loss", async () => {
    await write("x.txt", "x0\nx1\nx2\nx3\n");
    await write("y.txt", "y0\ny1\ny2\ny3\n");
    const s = await session({ model: "claude-sonnet-4" });
    const calls = [0, 1, 2, 3].map((i) =>
      s.call("search_replace_block", {
        content:
          i % 2
            ? `${blk("x.txt", `x${i}`, `X${i}`)}${blk("y.txt", `y${i}`, `Y${i}`)}`
            : `${blk("y.txt", `y${i}`, `Y${i}`)}${blk("x.txt", `x${i}`, `X${i}`)}`,
      }),
    );
    for (const r of await Promise.all(calls)) expectOk(r);
    expect(await read("x.txt")).toBe("X0\nX1\nX2\nX3\n");
    expect(await read("y.txt")).toBe("Y0\nY1\nY2\nY3\n");
  });

  it("works under mewbo's aider_edit_block_tool with root", async () => {
    await fs.mkdir(path.join(root, "pkg"));
    await write("pkg/m.txt", "a\n");
    const s = await session({ model: "claude-sonnet-4", profile: "mewbo" });
    expectOk(await s.call("aider_edit_block_tool", { content: blk("m.txt", "a", "b"), root: "pkg" }));
    expect(await read("pkg/m.txt")).toBe("b\n");
  });

  it("mewbo's no-match error does not offer the tolerant option its schema lacks", async () => {
    await write("i.py", "class A:\n    def f(self):\n        return 1\n");
    const s = await session({ profile: "mewbo" });
    const content = blk("i.py", "def f(self):\n    return 1", "def f(self):\n    return 2");
    const r: Payload = await s.call("aider_edit_block_tool", { content });
    expect(r.code).toBe("ENO_MATCH");
    expect(String(r.message)).not.toMatch(/tolerant/);
    expect(String(r.message)).toContain("SEARCH must match exactly");
  });
});

describe("search_replace_block edge cases", () => {
  it("refuses a SEARCH of blank lines only, and an ambiguous SEARCH", async () => {
    await write("w.txt", "a\n\n\nb\na\n");
    const s = await session({ model: "claude-sonnet-4" });
    const blank: Payload = await s.call("search_replace_block", { content: blk("w.txt", "\n", "x") });
    expect(blank.code).toBe("EINVAL_INPUT");
    const multi: Payload = await s.call("search_replace_block", { content: blk("w.txt", "a", "c") });
    expect(multi.code).toBe("EMULTI_MATCH");
    expect(String(multi.message)).toMatch(/matches 2 places \(starting at lines 1, 5\)/);
    expect(await read("w.txt")).toBe("a\n\n\nb\na\n");
  });

  it("combines `...` elision with tolerant matching", async () => {
    await write("t.py", "def f():\n    a = 1\n    b = 2\n    c = 3\n    return a\n");
    const s = await session({ model: "claude-sonnet-4" });
    const content = blk(
      "t.py",
      "def f():\n  a = 1\n...\n  return a",
      "def f():\n  a = 10\n...\n  return a + 1",
    );
    const p = expectOk(await s.call("search_replace_block", { content, tolerant: true }));
    expect(p.strategy).toBe("indentation+exact");
    expect(await read("t.py")).toBe("def f():\n    a = 10\n    b = 2\n    c = 3\n    return a + 1\n");
  });

  it("renders text that core's parseToolText reads back", async () => {
    const { parseToolText } = await import("@toolbelt/core");
    await write("a.ts", "one\n");
    await write("b.ts", "two\n");
    const s = await session({ model: "claude-sonnet-4" });
    const outcome = await s.callWithText("search_replace_block", {
      content: `${blk("a.ts", "one", "ONE")}${blk("b.ts", "two", "TWO")}`,
    });
    const parsed = parseToolText(outcome.text);
    expect(parsed.kind).toBe("edit_result");
    expect(parsed.headers).toMatchObject({
      Files: "2",
      Paths: "a.ts, b.ts",
      Strategy: "exact",
      Replacements: "2",
    });
    expect(parsed.body).toContain("+++ b/a.ts");
  });
});
