import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { definePlugin } from "./plugin.js";
import { createSession, type SessionOptions } from "./session.js";
import { defineTool } from "./tool.js";
import type { FileChange } from "./transaction.js";

// ctx.writeFiles: every file checked before any is written; a failed write puts the others back.

const dirs: string[] = [];
function temp(prefix: string): string {
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), prefix)));
  dirs.push(dir);
  return dir;
}
const savedState = process.env.TOOLBELT_STATE_DIR;
beforeAll(() => {
  process.env.TOOLBELT_STATE_DIR = temp("tb-tx-state-");
});
afterAll(() => {
  if (savedState === undefined) delete process.env.TOOLBELT_STATE_DIR;
  else process.env.TOOLBELT_STATE_DIR = savedState;
});
afterEach(() => {
  for (const d of dirs.splice(1)) rmSync(d, { recursive: true, force: true });
});

/** Writes `content`, telling core it read `claimed` from the file (as an edit passes the bytes it loaded). */
const writeClaiming = defineTool({
  name: "write_claiming",
  family: "plug",
  access: "write",
  description: "Writes one file, passing what it claims the file held.",
  input: z.object({ path: z.string(), content: z.string(), claimed: z.string() }),
  async execute(input, ctx) {
    const abs = ctx.resolve(input.path).abs;
    await ctx.writeFiles([{ abs, data: input.content, before: new TextEncoder().encode(input.claimed) }]);
    return { kind: "ok" };
  },
});

const writeMany = defineTool({
  name: "write_many",
  family: "plug",
  access: "write",
  description: "Writes or removes each file given, as one transaction.",
  input: z.object({
    files: z.array(
      z.object({ path: z.string(), content: z.string().optional(), remove: z.boolean().optional() }),
    ),
  }),
  async execute(input, ctx) {
    const changes: FileChange[] = input.files.map((f) =>
      f.remove
        ? { abs: ctx.resolve(f.path).abs, remove: true }
        : { abs: ctx.resolve(f.path).abs, data: f.content ?? "" },
    );
    const results = await ctx.writeFiles(changes);
    return { kind: "ok", results };
  },
});

function session(root: string, options: Partial<SessionOptions> = {}) {
  return createSession({
    root,
    plugins: [definePlugin({ name: "plug", tools: [writeMany, writeClaiming] })],
    ...options,
  });
}

describe("ctx.writeFiles", () => {
  it("writes and removes several files and reports each", async () => {
    const root = temp("tb-tx-");
    writeFileSync(path.join(root, "gone.txt"), "bye\n");
    const s = await session(root);
    const out = await s.call("write_many", {
      files: [
        { path: "a.txt", content: "A\n" },
        { path: "sub/b.txt", content: "B\n" },
        { path: "gone.txt", remove: true },
      ],
    });
    expect(out).toMatchObject({
      kind: "ok",
      results: [
        { path: "a.txt", created: true, bytes: 2 },
        { path: "sub/b.txt", created: true, bytes: 2 },
        { path: "gone.txt", removed: true },
      ],
    });
    expect(readFileSync(path.join(root, "sub/b.txt"), "utf8")).toBe("B\n");
    await s.close();
  });

  it("refuses the whole set when one file fails a check, before writing any", async () => {
    const root = temp("tb-tx-");
    writeFileSync(path.join(root, "a.txt"), "old\n");
    const s = await session(root, { config: { limits: { fileWriteMaxBytes: 10 } } });
    const out = await s.call("write_many", {
      files: [
        { path: "a.txt", content: "new\n" },
        { path: "big.txt", content: "x".repeat(100) },
      ],
    });
    expect(out).toMatchObject({ kind: "error", code: "ETOO_LARGE" });
    expect(readFileSync(path.join(root, "a.txt"), "utf8")).toBe("old\n");
    await s.close();
  });

  it("refuses the whole set when one path is outside the root", async () => {
    const root = temp("tb-tx-");
    writeFileSync(path.join(root, "a.txt"), "old\n");
    const s = await session(root);
    const out = await s.call("write_many", {
      files: [
        { path: "a.txt", content: "new\n" },
        { path: "../escape.txt", content: "x" },
      ],
    });
    expect(out).toMatchObject({ kind: "error", code: "EPATH_ESCAPE" });
    expect(readFileSync(path.join(root, "a.txt"), "utf8")).toBe("old\n");
    await s.close();
  });

  it("puts back the files already written when a later write fails (a directory in the way)", async () => {
    const root = temp("tb-tx-");
    writeFileSync(path.join(root, "a.txt"), "old a\n");
    mkdirSync(path.join(root, "dir"));
    const s = await session(root);
    const out = await s.call("write_many", {
      files: [
        { path: "a.txt", content: "new a\n" },
        { path: "fresh.txt", content: "fresh\n" },
        { path: "dir", content: "not a dir\n" },
      ],
    });
    expect(out).toMatchObject({ kind: "error", code: "EISDIR" });
    expect(String(out.message)).toMatch(/a\.txt, fresh\.txt restored, nothing was changed/);
    expect(readFileSync(path.join(root, "a.txt"), "utf8")).toBe("old a\n");
    expect(() => readFileSync(path.join(root, "fresh.txt"))).toThrow();
    // The rolled-back write left no checkpoint behind.
    expect((await s.checkpoints.list()).filter((c) => c.session === s.id)).toEqual([]);
    await s.close();
  });

  it("leaves no temp file behind when a change fails before the files staged after it are written", async () => {
    const root = temp("tb-tx-");
    writeFileSync(path.join(root, "a.txt"), "old a\n");
    mkdirSync(path.join(root, "dir"));
    const s = await session(root);
    for (const first of [
      { path: "dir", remove: true },
      { path: "dir", content: "not a dir\n" },
    ]) {
      const out = await s.call("write_many", {
        files: [first, { path: "a.txt", content: "new a\n" }, { path: "b.txt", content: "b\n" }],
      });
      expect(out).toMatchObject({ kind: "error" });
      expect(readFileSync(path.join(root, "a.txt"), "utf8")).toBe("old a\n");
      expect(readdirSync(root).sort()).toEqual(["a.txt", "dir"]);
    }
    await s.close();
  });

  it("records what is on disk at write time as the before-image, whatever the caller says it read", async () => {
    const root = temp("tb-tx-");
    const s = await session(root);
    const cases = [
      { disk: "on disk 1\n", claimed: "on disk 1\n" }, // the usual case: the claim holds
      { disk: "on disk 2\n", claimed: "ON DISK 2\n" }, // same size, other bytes (changed under the caller)
      { disk: "on disk 3\n", claimed: "shorter\n" },
      { disk: "on disk 4\n", claimed: "" },
    ];
    for (const [i, c] of cases.entries()) {
      writeFileSync(path.join(root, "a.txt"), c.disk);
      const out = await s.call("write_claiming", {
        path: "a.txt",
        content: `new ${i}\n`,
        claimed: c.claimed,
      });
      expect(out).toMatchObject({ kind: "ok" });
      const [last] = (await s.checkpoints.list()).slice(-1);
      const [file] = (await s.checkpoints.diff(last?.id as string)).files;
      expect(file?.diff).toContain(`-${c.disk.trimEnd()}`);
    }
    // Restoring the last change puts back what was on disk, not the claim.
    await s.checkpoints.restore("last");
    expect(readFileSync(path.join(root, "a.txt"), "utf8")).toBe("on disk 4\n");
    await s.close();
  });

  it("refuses a file named twice", async () => {
    const root = temp("tb-tx-");
    const s = await session(root);
    const out = await s.call("write_many", {
      files: [
        { path: "a.txt", content: "1" },
        { path: "./a.txt", content: "2" },
      ],
    });
    expect(out).toMatchObject({ kind: "error", code: "EINVAL_INPUT" });
    await s.close();
  });
});
