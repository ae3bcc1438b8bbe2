import { spawnSync } from "node:child_process";
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { createSession, type Payload, type ToolbeltConfigInput } from "@toolbelt/core";
import { afterEach, describe, expect, it } from "vitest";
import { lacks } from "../../../../test-support/capability.js";
import { createLspFamily } from "../index.js";

const SCRIPTED = fileURLToPath(new URL("../__fixtures__/scripted-server.mjs", import.meta.url));

const dirs: string[] = [];
function tempDir(prefix: string): string {
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), prefix)));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) {
    spawnSync("chattr", ["-R", "-i", dir]);
    rmSync(dir, { recursive: true, force: true });
  }
});

const uri = (abs: string) => pathToFileURL(abs).href;
/** Replaces the first five characters of line 1 with `text`. */
const head = (text: string) => [
  { range: { start: { line: 0, character: 0 }, end: { line: 0, character: 5 } }, newText: text },
];

function project(files: Record<string, string>): string {
  const root = tempDir("tb-lsp-rename-");
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    writeFileSync(path.join(root, rel), text);
  }
  return root;
}

async function rename(root: string, edit: unknown, extra: ToolbeltConfigInput = {}): Promise<Payload> {
  const session = await createSession({
    root,
    config: {
      ...extra,
      lsp: {
        scripted: {
          command: process.execPath,
          args: [SCRIPTED],
          extensions: [".txt"],
          env: { SCRIPTED_RENAME_EDIT: JSON.stringify(edit) },
        },
      },
    },
    plugins: [createLspFamily({ fallback: "off" })],
  });
  try {
    return await session.call("lsp_rename", { path: "a.txt", line: 1, new_name: "omega", apply: true });
  } finally {
    await session.close();
  }
}

/** Whether `chattr +i` works on this filesystem (it needs the tool and ext4-like support). */
function canMakeImmutable(): boolean {
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), "tb-chattr-")));
  const file = path.join(dir, "probe");
  writeFileSync(file, "");
  try {
    return spawnSync("chattr", ["+i", file]).status === 0;
  } finally {
    spawnSync("chattr", ["-i", file]);
    rmSync(dir, { recursive: true, force: true });
  }
}

const read = (root: string, rel: string) => readFileSync(path.join(root, rel), "utf8");

describe("lsp_rename applies a server's workspace edit only when every file passes", {
  timeout: 30_000,
}, () => {
  it("writes every file of an edit inside the root", async () => {
    const root = project({ "a.txt": "alpha one\n", "b.txt": "alpha two\n" });
    const out = await rename(root, {
      changes: {
        [uri(path.join(root, "a.txt"))]: head("omega"),
        [uri(path.join(root, "b.txt"))]: head("omega"),
      },
    });
    expect(out.kind).toBe("lsp_rename");
    expect(out.applied).toBe(true);
    expect([read(root, "a.txt"), read(root, "b.txt")]).toEqual(["omega one\n", "omega two\n"]);
  });

  it("refuses a file outside the root, by path, by `..` in the URI or through a symlink, and writes nothing", async () => {
    const outside = tempDir("tb-lsp-outside-");
    writeFileSync(path.join(outside, "x.txt"), "alpha outside\n");
    const root = project({ "a.txt": "alpha one\n" });
    symlinkSync(path.join(outside, "x.txt"), path.join(root, "link.txt"));
    for (const target of [
      uri(path.join(outside, "x.txt")),
      `${uri(root)}/../${path.basename(outside)}/x.txt`,
      uri(path.join(root, "link.txt")),
    ]) {
      const out = await rename(root, {
        changes: { [uri(path.join(root, "a.txt"))]: head("omega"), [target]: head("omega") },
      });
      expect(out).toMatchObject({ kind: "error", code: "EPATH_ESCAPE" });
      expect(String(out.message)).toContain("outside the project root");
      expect((out.refused as Array<{ target: string }>).length).toBe(1);
      expect(read(root, "a.txt")).toBe("alpha one\n");
      expect(read(outside, "x.txt")).toBe("alpha outside\n");
    }
  });

  it("writes a file named twice (itself and a link to it) once, with both edits", async () => {
    const root = project({ "a.txt": "alpha beta\n" });
    symlinkSync(path.join(root, "a.txt"), path.join(root, "link.txt"));
    const out = await rename(root, {
      changes: {
        [uri(path.join(root, "a.txt"))]: head("omega"),
        [uri(path.join(root, "link.txt"))]: [
          { range: { start: { line: 0, character: 6 }, end: { line: 0, character: 10 } }, newText: "gamma" },
        ],
      },
    });
    expect(out).toMatchObject({ kind: "lsp_rename", applied: true, edit_count: 2 });
    expect(read(root, "a.txt")).toBe("omega gamma\n");
  });

  it("refuses file creations, renames and deletions, naming each, and writes nothing", async () => {
    const root = project({ "a.txt": "alpha one\n" });
    const out = await rename(root, {
      documentChanges: [
        { textDocument: { uri: uri(path.join(root, "a.txt")), version: null }, edits: head("omega") },
        { kind: "create", uri: uri(path.join(root, "new.txt")) },
        { kind: "delete", uri: uri(path.join(root, "a.txt")) },
      ],
    });
    expect(out).toMatchObject({ kind: "error", code: "EUNAVAILABLE" });
    expect(out.refused).toEqual([
      { target: uri(path.join(root, "new.txt")), why: "a file create (only text edits are applied)" },
      { target: uri(path.join(root, "a.txt")), why: "a file delete (only text edits are applied)" },
    ]);
    expect(read(root, "a.txt")).toBe("alpha one\n");
  });

  it("refuses a file outside tools.lsp_rename.allowlist or tools.lsp.allowlist (EDENIED), and writes nothing", async () => {
    for (const key of ["lsp_rename", "lsp"]) {
      const root = project({ "a.txt": "alpha one\n", "secret/b.txt": "alpha two\n" });
      const out = await rename(
        root,
        {
          changes: {
            [uri(path.join(root, "a.txt"))]: head("omega"),
            [uri(path.join(root, "secret/b.txt"))]: head("omega"),
          },
        },
        { tools: { [key]: { allowlist: ["^a\\.txt$"] } } },
      );
      expect(out).toMatchObject({ kind: "error", code: "EDENIED" });
      expect(String(out.message)).toContain(`secret/b.txt is not in tools.${key}.allowlist`);
      expect([read(root, "a.txt"), read(root, "secret/b.txt")]).toEqual(["alpha one\n", "alpha two\n"]);
    }
  });

  it("refuses a protected file (node_modules/.bin/*) and writes nothing", async () => {
    const root = project({ "a.txt": "alpha one\n", "node_modules/.bin/tool": "alpha\n" });
    const out = await rename(root, {
      changes: {
        [uri(path.join(root, "a.txt"))]: head("omega"),
        [uri(path.join(root, "node_modules/.bin/tool"))]: head("omega"),
      },
    });
    expect(out).toMatchObject({ kind: "error", code: "EDENIED" });
    expect(String(out.message)).toContain("node_modules/.bin/tool");
    expect([read(root, "a.txt"), read(root, "node_modules/.bin/tool")]).toEqual(["alpha one\n", "alpha\n"]);
  });

  it("refuses an edit that pushes any file past limits.fileWriteMaxBytes (ETOO_LARGE), and writes nothing", async () => {
    const root = project({ "a.txt": "alpha one\n", "b.txt": "alpha two\n" });
    const out = await rename(
      root,
      {
        changes: {
          [uri(path.join(root, "a.txt"))]: head("omega"),
          [uri(path.join(root, "b.txt"))]: head("o".repeat(64)),
        },
      },
      { limits: { fileWriteMaxBytes: 40 } },
    );
    expect(out).toMatchObject({ kind: "error", code: "ETOO_LARGE", path: "b.txt", limit: 40 });
    expect([read(root, "a.txt"), read(root, "b.txt")]).toEqual(["alpha one\n", "alpha two\n"]);
  });

  const notImmutable = lacks("immutable-files", !canMakeImmutable() && "chattr +i does not work here");
  it.skipIf(notImmutable)(
    "restores the files already written when a later write fails, keeping its code",
    async () => {
      const root = project({ "a.txt": "alpha one\n", "b.txt": "alpha two\n" });
      // An immutable file refuses the rename over it even for root: the second write fails for real.
      expect(spawnSync("chattr", ["+i", path.join(root, "b.txt")]).status).toBe(0);
      const out = await rename(root, {
        changes: {
          [uri(path.join(root, "a.txt"))]: head("omega"),
          [uri(path.join(root, "b.txt"))]: head("omega"),
        },
      });
      expect(out).toMatchObject({ kind: "error", code: "EDENIED" });
      expect(String(out.message)).toContain("a.txt restored, nothing was changed");
      expect([read(root, "a.txt"), read(root, "b.txt")]).toEqual(["alpha one\n", "alpha two\n"]);
    },
  );
});
