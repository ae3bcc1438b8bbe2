import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createSession, parseToolText, type Session } from "@toolbelt/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { family } from "./index.js";
import type { DirListPayload, FileListPayload } from "./list-files.js";

let base: string;
let root: string;
const sessions: Session[] = [];

async function open(options: { profile?: string; limits?: Record<string, number> } = {}) {
  const s = await createSession({
    root,
    plugins: [family],
    ...(options.profile ? { profile: options.profile } : {}),
    ...(options.limits ? { config: { limits: options.limits } } : {}),
  });
  sessions.push(s);
  return s;
}

const tree: Record<string, string> = {
  ".gitignore": "dist/\n*.log\n",
  "README.md": "",
  "src/index.ts": "",
  "src/Util.TS": "",
  "src/lib/deep.ts": "",
  "src/lib/logo.PNG": "",
  "src/debug.log": "",
  "dist/index.js": "",
  "docs/guide.md": "",
  ".github/workflows/ci.yml": "",
};

beforeAll(async () => {
  base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "tb-list-")));
  root = path.join(base, "root");
  for (const [rel, content] of Object.entries(tree)) {
    await fs.mkdir(path.dirname(path.join(root, rel)), { recursive: true });
    await fs.writeFile(path.join(root, rel), content);
  }
  await fs.mkdir(path.join(base, "outside"));
  await fs.writeFile(path.join(base, "outside", "secret.ts"), "");
  await fs.symlink(path.join(base, "outside"), path.join(root, "src", "escape"));
});
afterAll(async () => {
  for (const s of sessions) await s.close();
  await fs.rm(base, { recursive: true, force: true });
});

describe("list_files", () => {
  it("matches a glob case-insensitively, honours .gitignore and never follows symlinks out", async () => {
    const s = await open();
    const p = (await s.call("list_files", { pattern: "src/**/*.ts" })) as FileListPayload;
    expect(p.entries.map((e) => e.path)).toEqual(["src/lib/deep.ts", "src/Util.TS", "src/index.ts"]);
  });

  it("treats a bare directory as dir/** and marks images", async () => {
    const s = await open();
    const p = (await s.call("list_files", { pattern: "src" })) as FileListPayload;
    expect(p.entries).toEqual([
      { path: "src/lib/deep.ts" },
      { path: "src/lib/logo.PNG", note: "(image)" },
      { path: "src/Util.TS" },
      { path: "src/index.ts" },
    ]);
  });

  it("lists hidden files but not .gitignored ones; a pattern in another case still matches", async () => {
    const s = await open();
    const all = (await s.call("list_files", {})) as FileListPayload;
    const paths = all.entries.map((e) => e.path);
    expect(paths).toContain(".github/workflows/ci.yml");
    expect(paths).toContain(".gitignore");
    expect(paths).not.toContain("dist/index.js");
    expect(paths).not.toContain("src/debug.log");
    const upper = (await s.call("list_files", { pattern: "SRC/LIB/*" })) as FileListPayload;
    expect(upper.entries.map((e) => e.path)).toEqual(["src/lib/deep.ts", "src/lib/logo.PNG"]);
  });

  it("accepts an absolute pattern inside the root and refuses one outside", async () => {
    const s = await open();
    const p = (await s.call("list_files", { pattern: `${root}/src/lib/*.ts` })) as FileListPayload;
    expect(p.entries.map((e) => e.path)).toEqual(["src/lib/deep.ts"]);
    expect(await s.call("list_files", { pattern: `${base}/outside/*.ts` })).toMatchObject({
      code: "EPATH_ESCAPE",
    });
  });

  it("takes the pattern relative to `path`", async () => {
    const s = await open();
    const p = (await s.call("list_files", { pattern: "*.ts", path: "src/lib" })) as FileListPayload;
    expect(p.entries.map((e) => e.path)).toEqual(["src/lib/deep.ts"]);
  });

  it("writes the indented tree with Kind and a capped Count, and round-trips through parseToolText", async () => {
    const s = await open({ limits: { fileListMaxEntries: 3 } });
    const { payload, text } = await s.callWithText("list_files", { pattern: "**" });
    const p = payload as FileListPayload;
    expect(p).toMatchObject({ count: 3, capped: true });
    expect(text).toContain("# Kind: file_list");
    expect(text).toContain("# Count: 3 (capped at 3)");
    const parsed = parseToolText(text);
    expect(parsed.entries).toEqual(p.entries);
    expect(parsed.counts.Count).toEqual({ count: 3, capped: true, cap: 3 });
    const full = await open();
    const uncapped = await full.callWithText("list_files", { pattern: "src/**" });
    expect(uncapped.text).toContain("# Count: 4\n");
    expect(uncapped.text).toContain("src/\n  lib/\n    deep.ts\n    logo.PNG (image)\n  Util.TS\n  index.ts");
    expect(parseToolText(uncapped.text).entries).toEqual((uncapped.payload as FileListPayload).entries);
  });

  it("refuses a base path outside the root", async () => {
    const s = await open();
    expect(await s.call("list_files", { pattern: "*", path: "src/escape" })).toMatchObject({
      code: "EPATH_ESCAPE",
    });
    expect(await s.call("list_files", { pattern: "../**" })).toMatchObject({ code: "EPATH_ESCAPE" });
  });
});

describe("list_dir", () => {
  it("lists every file under a directory as root-relative paths", async () => {
    const s = await open();
    const { payload, text } = await s.callWithText("list_dir", { path: "src" });
    const p = payload as DirListPayload;
    expect(p.files).toEqual(["src/lib/deep.ts", "src/lib/logo.PNG", "src/Util.TS", "src/index.ts"]);
    const parsed = parseToolText(text);
    expect(parsed.kind).toBe("dir_list");
    expect(parsed.entries?.map((e) => e.path)).toEqual(p.files);
    expect(parsed.counts.Count).toEqual({ count: 4, capped: false });
  });

  it("is aider_list_dir_tool in the mewbo profile", async () => {
    const s = await open({ profile: "mewbo" });
    const names = s.bind().tools.map((t) => t.name);
    expect(names).toContain("aider_list_dir_tool");
    expect(names).not.toContain("list_dir");
    const p = (await s.call("aider_list_dir_tool", { path: "docs" })) as DirListPayload;
    expect(p.files).toEqual(["docs/guide.md"]);
  });

  it("answers ENOENT and ENOTDIR", async () => {
    const s = await open();
    expect(await s.call("list_dir", { path: "nope" })).toMatchObject({ code: "ENOENT" });
    expect(await s.call("list_dir", { path: "README.md" })).toMatchObject({ code: "ENOTDIR" });
  });
});

describe("list_files under an allowlist and in the mouaif profile", () => {
  it("lists the allowed files of . instead of refusing it, and refuses a directory none can lie under", async () => {
    const s = await createSession({
      root,
      plugins: [family],
      config: { tools: { file: { allowlist: ["^src/.*\\.ts$"] } } },
    });
    sessions.push(s);
    const listed = (await s.call("list_files", {})) as FileListPayload;
    expect(listed.entries.map((e) => e.path)).toEqual(["src/lib/deep.ts", "src/index.ts"]);
    const dir = (await s.call("list_dir", { path: "src" })) as DirListPayload;
    expect(dir.files).toEqual(["src/lib/deep.ts", "src/index.ts"]);
    expect(await s.call("list_files", { path: "docs" })).toMatchObject({ kind: "error", code: "EDENIED" });
  });

  it("mouaif: a bare directory in another case, binaries left out, the spec's text", async () => {
    await fs.writeFile(path.join(root, "src/blob.bin"), Buffer.from([1, 0, 2]));
    try {
      const s = await open({ profile: "mouaif" });
      const { payload, text } = await s.callWithText("list_files", { pattern: "SRC" });
      const paths = (payload as FileListPayload).entries.map((e) => e.path);
      expect(paths).toContain("src/lib/logo.PNG");
      expect(paths).toContain("src/index.ts");
      expect(paths).not.toContain("src/blob.bin");
      expect(text.split("\n").slice(0, 3)).toEqual(["# Listing: SRC", `# Count: ${paths.length}`, ""]);
      expect(parseToolText(text).entries?.map((e) => e.path)).toEqual(paths);
      const plain = (await (await open()).call("list_files", { pattern: "src" })) as FileListPayload;
      expect(plain.entries.map((e) => e.path)).toContain("src/blob.bin");
    } finally {
      await fs.rm(path.join(root, "src/blob.bin"));
    }
  });
});
