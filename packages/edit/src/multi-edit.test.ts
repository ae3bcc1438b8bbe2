import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createSession, type Payload, type Session } from "@toolbelt/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { EditResult } from "./apply.js";
import { family } from "./index.js";
import { MAX_EDITS } from "./multi-edit.js";
import { renderEdit } from "./render.js";

let root: string;
const sessions: Session[] = [];

beforeEach(async () => {
  root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "tb-multi-edit-")));
});
afterEach(async () => {
  for (const s of sessions.splice(0)) await s.close();
  await fs.rm(root, { recursive: true, force: true });
});

/** edit_file is the backend with no model; a GPT model gets structured_patch. */
async function session(options: { model?: string; config?: Record<string, unknown> } = {}) {
  const s = await createSession({
    root,
    plugins: [family],
    ...(options.model ? { model: options.model } : {}),
    ...(options.config ? { config: options.config } : {}),
  });
  sessions.push(s);
  return s;
}

const write = async (rel: string, data: string | Uint8Array) => {
  await fs.mkdir(path.dirname(path.join(root, rel)), { recursive: true });
  await fs.writeFile(path.join(root, rel), data);
};
const read = (rel: string) => fs.readFile(path.join(root, rel), "utf8");
const bytes = (rel: string) => fs.readFile(path.join(root, rel));

type Ok = Payload & {
  files: Array<{ path: string; replacements: number; added: number; removed: number; diff: string }>;
  diff: string;
};
type Failed = Payload & {
  code: string;
  message: string;
  edit: number;
  path: string;
  failures: Array<{ edit: number; path: string; code: string; message: string }>;
};

function ok(p: Payload): Ok {
  if (p.kind === "error") throw new Error(`${String(p.code)}: ${String(p.message)}`);
  expect(p.kind).toBe("edit_result");
  return p as Ok;
}
function failed(p: Payload): Failed {
  expect(p.kind).toBe("error");
  return p as Failed;
}

describe("edit_file with edits", () => {
  it("applies several edits to one file in order, and reports one file with its counts", async () => {
    await write("a.ts", "const a = 1;\nconst b = 2;\nconst c = 3;\n");
    const s = await session();
    const r = ok(
      await s.call("edit_file", {
        path: "a.ts",
        edits: [
          { old_text: "const a = 1;", new_text: "const a = 10;" },
          { old_text: "const c = 3;", new_text: "const c = 30;\nconst d = 40;" },
        ],
      }),
    );
    expect(await read("a.ts")).toBe("const a = 10;\nconst b = 2;\nconst c = 30;\nconst d = 40;\n");
    expect(r.files).toHaveLength(1);
    expect(r.files[0]).toMatchObject({ path: "a.ts", replacements: 2, added: 3, removed: 2 });
  });

  it("edits two files in one call, each edit naming its file, with a diff per file", async () => {
    await write("a.txt", "alpha\n");
    await write("src/b.txt", "beta\n");
    const s = await session();
    const r = ok(
      await s.call("edit_file", {
        edits: [
          { path: "a.txt", old_text: "alpha", new_text: "ALPHA" },
          { path: "src/b.txt", old_text: "beta", new_text: "BETA" },
        ],
      }),
    );
    expect(await read("a.txt")).toBe("ALPHA\n");
    expect(await read("src/b.txt")).toBe("BETA\n");
    expect(r.files.map((f) => f.path)).toEqual(["a.txt", "src/b.txt"]);
    expect(r.files[0]?.diff).toContain("+ALPHA");
    expect(r.files[1]?.diff).toContain("+BETA");
    // The text a model reads names both files.
    const text = renderEdit(r as unknown as EditResult);
    expect(text).toContain("# Files: 2");
    expect(text).toContain("a.txt, src/b.txt");
  });

  it("a failing second edit leaves both files untouched byte for byte, and names the edit by index", async () => {
    const crlfBom = Buffer.from("\uFEFFone\r\ntwo\r\n", "utf8");
    await write("a.txt", crlfBom);
    await write("b.txt", "three\nfour");
    const s = await session();
    const r = failed(
      await s.call("edit_file", {
        edits: [
          { path: "a.txt", old_text: "one", new_text: "ONE" },
          { path: "b.txt", old_text: "five", new_text: "FIVE" },
        ],
      }),
    );
    expect(r.code).toBe("ENO_MATCH");
    expect(r.edit).toBe(1);
    expect(r.path).toBe("b.txt");
    expect(r.message).toContain("1 of 2 edits failed; nothing was written");
    expect(r.message).toContain("edits[1] (b.txt): [ENO_MATCH]");
    expect(r.failures).toEqual([expect.objectContaining({ edit: 1, path: "b.txt", code: "ENO_MATCH" })]);
    expect(Buffer.compare(await bytes("a.txt"), crlfBom)).toBe(0);
    expect(await read("b.txt")).toBe("three\nfour");
  });

  it("reports every failing file, and stops a file at its first failure", async () => {
    await write("a.txt", "x\ny\n");
    await write("b.txt", "p\nq\n");
    const s = await session();
    const r = failed(
      await s.call("edit_file", {
        edits: [
          { path: "a.txt", old_text: "nope", new_text: "1" },
          // Judged against a text that never existed if a.txt's first edit failed: skipped, not reported.
          { path: "a.txt", old_text: "y", new_text: "Y" },
          { path: "b.txt", old_text: "q\n", new_text: "Q\n" },
          { path: "b.txt", old_text: "missing too", new_text: "2" },
        ],
      }),
    );
    expect(r.failures.map((f) => [f.edit, f.path])).toEqual([
      [0, "a.txt"],
      [3, "b.txt"],
    ]);
    expect(await read("a.txt")).toBe("x\ny\n");
    expect(await read("b.txt")).toBe("p\nq\n");
  });

  it("an edit whose match exists only after the previous edit applies to the evolving text", async () => {
    await write("a.txt", "start\n");
    const s = await session();
    ok(
      await s.call("edit_file", {
        path: "a.txt",
        edits: [
          { old_text: "start", new_text: "start\nmarker" },
          { old_text: "marker", new_text: "done" },
        ],
      }),
    );
    expect(await read("a.txt")).toBe("start\ndone\n");
  });

  it("overlapping edits: the second sees the first's result, so text the first replaced is gone", async () => {
    await write("a.txt", "foo bar baz\n");
    const s = await session();
    const r = failed(
      await s.call("edit_file", {
        path: "a.txt",
        edits: [
          { old_text: "foo bar", new_text: "qux" },
          { old_text: "bar baz", new_text: "nope" },
        ],
      }),
    );
    expect(r.code).toBe("ENO_MATCH");
    expect(r.edit).toBe(1);
    expect(await read("a.txt")).toBe("foo bar baz\n");
    // Overlap that still exists after the first edit applies.
    ok(
      await s.call("edit_file", {
        path: "a.txt",
        edits: [
          { old_text: "foo bar", new_text: "qux bar" },
          { old_text: "qux bar baz", new_text: "all" },
        ],
      }),
    );
    expect(await read("a.txt")).toBe("all\n");
  });

  it("each edit gets the full matcher: an indentation-tolerant match and an ambiguity", async () => {
    await write("a.py", "def f():\n    return 1\n\ndef g():\n    return 1\n");
    const s = await session();
    const ambiguous = failed(
      await s.call("edit_file", {
        path: "a.py",
        edits: [
          { old_text: "def f():", new_text: "def f0():" },
          { old_text: "return 1", new_text: "return 2" },
        ],
      }),
    );
    expect(ambiguous.code).toBe("EMULTI_MATCH");
    expect(ambiguous.edit).toBe(1);
    const r = ok(
      await s.call("edit_file", {
        path: "a.py",
        edits: [
          { old_text: "def g():\n  return 1", new_text: "def g():\n  return 3" },
          { old_text: "def f():", new_text: "def f0():" },
        ],
      }),
    );
    expect(await read("a.py")).toBe("def f0():\n    return 1\n\ndef g():\n    return 3\n");
    expect(r.files[0]?.replacements).toBe(2);
    expect((r as unknown as { files: Array<{ strategies: string[] }> }).files[0]?.strategies).toEqual([
      "indentation",
      "exact",
    ]);
  });

  it("replace_all replaces every exact occurrence, alone or among other edits", async () => {
    await write("a.txt", "x = old; y = old;\nz = old\n");
    const s = await session();
    const r = ok(
      await s.call("edit_file", {
        path: "a.txt",
        edits: [
          { old_text: "old", new_text: "new", replace_all: true },
          { old_text: "z = new", new_text: "z = newer" },
        ],
      }),
    );
    expect(await read("a.txt")).toBe("x = new; y = new;\nz = newer\n");
    expect(r.files[0]?.replacements).toBe(4);
    // Also as a single edit's top-level field.
    ok(await s.call("edit_file", { path: "a.txt", old_text: "new", new_text: "N", replace_all: true }));
    expect(await read("a.txt")).toBe("x = N; y = N;\nz = Ner\n");
  });

  it("a protected file among the edits: nothing is written without the approval", async () => {
    await write("a.txt", "alpha\n");
    await write("configs/app.json", "{}\n");
    const s = await session();
    const r: Payload = await s.call("edit_file", {
      edits: [
        { path: "a.txt", old_text: "alpha", new_text: "ALPHA" },
        { path: "configs/app.json", old_text: "{}", new_text: '{ "agent": {} }' },
      ],
    });
    expect(r.kind).toBe("error");
    expect(r.code).toBe("EDENIED");
    expect(await read("a.txt")).toBe("alpha\n");
    expect(await read("configs/app.json")).toBe("{}\n");
  });

  it("a file outside the allowlist among the edits: nothing is written", async () => {
    await write("a.txt", "alpha\n");
    await write("b.txt", "beta\n");
    const s = await session({ config: { tools: { file: { mode: "allow", allowlist: ["^a\\.txt$"] } } } });
    const r: Payload = await s.call("edit_file", {
      edits: [
        { path: "a.txt", old_text: "alpha", new_text: "ALPHA" },
        { path: "b.txt", old_text: "beta", new_text: "BETA" },
      ],
    });
    expect(r.kind).toBe("error");
    expect(r.code).toBe("EDENIED");
    expect(await read("a.txt")).toBe("alpha\n");
    expect(await read("b.txt")).toBe("beta\n");
  });

  it("a path escaping the root among the edits is refused before anything is written", async () => {
    await write("a.txt", "alpha\n");
    const s = await session();
    const r: Payload = await s.call("edit_file", {
      edits: [
        { path: "a.txt", old_text: "alpha", new_text: "ALPHA" },
        { path: "../outside.txt", old_text: "", new_text: "x" },
      ],
    });
    expect(r.kind).toBe("error");
    expect(r.code).toBe("EPATH_ESCAPE");
    expect(await read("a.txt")).toBe("alpha\n");
  });

  it("a binary file among the edits fails its edit by index; the text file is not written", async () => {
    await write("a.txt", "alpha\n");
    await write("blob.bin", Buffer.from([0x61, 0x00, 0x62]));
    const s = await session();
    const r = failed(
      await s.call("edit_file", {
        edits: [
          { path: "a.txt", old_text: "alpha", new_text: "ALPHA" },
          { path: "blob.bin", old_text: "a", new_text: "b" },
        ],
      }),
    );
    expect(r.code).toBe("EBINARY");
    expect(r.edit).toBe(1);
    expect(r.message).toContain("edits[1] (blob.bin): [EBINARY]");
    expect(await read("a.txt")).toBe("alpha\n");
  });

  it("creates a file and then edits it in the same call", async () => {
    const s = await session();
    const r = ok(
      await s.call("edit_file", {
        path: "new.txt",
        edits: [
          { old_text: "", new_text: "hello\nworld\n" },
          { old_text: "world", new_text: "there" },
        ],
      }),
    );
    expect(await read("new.txt")).toBe("hello\nthere\n");
    expect(r.files[0]).toMatchObject({ path: "new.txt" });
  });

  it("refuses edits sent together with old_text, an edit with no path, and more than the bound", async () => {
    await write("a.txt", "alpha\n");
    const s = await session();
    const both = failed(
      await s.call("edit_file", {
        path: "a.txt",
        old_text: "alpha",
        new_text: "A",
        edits: [{ old_text: "alpha", new_text: "B" }],
      }),
    );
    expect(both.code).toBe("EINVAL_INPUT");
    expect(both.message).toContain("not both");
    const noPath = failed(await s.call("edit_file", { edits: [{ old_text: "alpha", new_text: "B" }] }));
    expect(noPath.code).toBe("EINVAL_INPUT");
    expect(noPath.message).toContain("edits[0] has no path");
    const missing = failed(await s.call("edit_file", { path: "a.txt", old_text: "alpha" }));
    expect(missing.code).toBe("EINVAL_INPUT");
    expect(missing.message).toContain("new_text is required");
    const tooMany: Payload = await s.call("edit_file", {
      path: "a.txt",
      edits: Array.from({ length: MAX_EDITS + 1 }, () => ({ old_text: "alpha", new_text: "B" })),
    });
    expect(tooMany.kind).toBe("error");
    expect(tooMany.code).toBe("EINVAL_INPUT");
    expect(await read("a.txt")).toBe("alpha\n");
  });

  it("OpenAI strict calling: the unused single-edit fields and an edit's path sent as null", async () => {
    await write("a.txt", "alpha\n");
    const s = await session();
    ok(
      await s.call("edit_file", {
        path: "a.txt",
        old_text: null,
        new_text: null,
        replace_all: null,
        edits: [{ path: null, old_text: "alpha", new_text: "beta", replace_all: null }],
      }),
    );
    expect(await read("a.txt")).toBe("beta\n");
  });

  it("edits that together change nothing are refused, not written", async () => {
    await write("a.txt", "alpha\n");
    const s = await session();
    const r = failed(
      await s.call("edit_file", {
        path: "a.txt",
        edits: [
          { old_text: "alpha", new_text: "beta" },
          { old_text: "beta", new_text: "alpha" },
        ],
      }),
    );
    expect(r.code).toBe("EINVAL_INPUT");
    expect(r.message).toContain("leave every file as it was");
  });

  it("the single-edit form answers as before (no index in the message)", async () => {
    await write("a.txt", "alpha\n");
    const s = await session();
    const r = failed(await s.call("edit_file", { path: "a.txt", old_text: "gamma", new_text: "x" }));
    expect(r.code).toBe("ENO_MATCH");
    expect(r.message).not.toContain("edits[");
    expect(r.failures).toBeUndefined();
  });

  it("concurrent multi-edit calls over the same files in opposite orders both finish, both applied", async () => {
    await write("a.txt", "a1\na2\n");
    await write("b.txt", "b1\nb2\n");
    const s = await session();
    const [one, two] = await Promise.all([
      s.call("edit_file", {
        edits: [
          { path: "a.txt", old_text: "a1", new_text: "A1" },
          { path: "b.txt", old_text: "b1", new_text: "B1" },
        ],
      }),
      s.call("edit_file", {
        edits: [
          { path: "b.txt", old_text: "b2", new_text: "B2" },
          { path: "a.txt", old_text: "a2", new_text: "A2" },
        ],
      }),
    ]);
    ok(one);
    ok(two);
    expect(await read("a.txt")).toBe("A1\nA2\n");
    expect(await read("b.txt")).toBe("B1\nB2\n");
  });
});

describe("structured_patch with edits", () => {
  it("applies exact replacements across two files, all or nothing", async () => {
    await write("a.txt", "one two one\n");
    await write("b.txt", "three\n");
    const s = await session({ model: "gpt-5" });
    expect(s.bind().tools.map((t) => t.name)).toContain("structured_patch");
    const r = ok(
      await s.call("structured_patch", {
        edits: [
          { path: "a.txt", old_string: "one", new_string: "1", replace_all: true },
          { path: "b.txt", old_string: "three", new_string: "3" },
        ],
      }),
    );
    expect(await read("a.txt")).toBe("1 two 1\n");
    expect(await read("b.txt")).toBe("3\n");
    expect(r.files.map((f) => f.replacements)).toEqual([2, 1]);

    const bad = failed(
      await s.call("structured_patch", {
        edits: [
          { path: "a.txt", old_string: "two", new_string: "2" },
          // structured_patch is exact: indentation differences do not match.
          { path: "b.txt", old_string: "  3", new_string: "x" },
        ],
      }),
    );
    expect(bad.code).toBe("ENO_MATCH");
    expect(bad.edit).toBe(1);
    expect(await read("a.txt")).toBe("1 two 1\n");
    expect(await read("b.txt")).toBe("3\n");
  });
});

describe("search_replace_block across files", () => {
  it("a failing block in the second file leaves the first file untouched", async () => {
    await write("a.txt", "alpha\n");
    await write("b.txt", "beta\n");
    const s = await session({ model: "claude-sonnet-4" });
    const content = [
      "a.txt",
      "```",
      "<<<<<<< SEARCH",
      "alpha",
      "=======",
      "ALPHA",
      ">>>>>>> REPLACE",
      "```",
      "b.txt",
      "```",
      "<<<<<<< SEARCH",
      "gamma",
      "=======",
      "GAMMA",
      ">>>>>>> REPLACE",
      "```",
    ].join("\n");
    const r: Payload = await s.call("search_replace_block", { content });
    expect(r.kind).toBe("error");
    expect(r.code).toBe("ENO_MATCH");
    expect(await read("a.txt")).toBe("alpha\n");
    expect(await read("b.txt")).toBe("beta\n");
  });
});
