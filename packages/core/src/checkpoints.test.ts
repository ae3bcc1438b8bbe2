import { spawnSync } from "node:child_process";
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { CheckpointStore, checkpointDir, checkpointsConfigSchema, sha256 } from "./checkpoints.js";
import { definePlugin } from "./plugin.js";
import { createSession, type SessionOptions } from "./session.js";
import { defineTool } from "./tool.js";

// Every change is recorded before it is made, in a store outside the root; restores refuse on
// conflicts, are themselves undoable, and the store stays within its byte bound.

const dirs: string[] = [];
function temp(prefix: string): string {
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), prefix)));
  dirs.push(dir);
  return dir;
}
const savedState = process.env.TOOLBELT_STATE_DIR;
let state = "";
beforeAll(() => {
  state = temp("tb-cp-state-");
  process.env.TOOLBELT_STATE_DIR = state;
});
afterAll(() => {
  if (savedState === undefined) delete process.env.TOOLBELT_STATE_DIR;
  else process.env.TOOLBELT_STATE_DIR = savedState;
  rmSync(state, { recursive: true, force: true });
});
afterEach(() => {
  for (const d of dirs.splice(1)) rmSync(d, { recursive: true, force: true });
});

const put = defineTool({
  name: "put",
  family: "plug",
  access: "write",
  description: "Writes files (null content removes).",
  input: z.object({ files: z.record(z.string(), z.string().nullable()) }),
  async execute(input, ctx) {
    await ctx.writeFiles(
      Object.entries(input.files).map(([p, c]) =>
        c === null ? { abs: ctx.resolve(p).abs, remove: true } : { abs: ctx.resolve(p).abs, data: c },
      ),
    );
    return { kind: "ok" };
  },
});
const plugin = definePlugin({ name: "plug", tools: [put] });
function session(root: string, options: Partial<SessionOptions> = {}) {
  return createSession({ root, plugins: [plugin], ...options });
}
const read = (root: string, rel: string) => readFileSync(path.join(root, rel), "utf8");

describe("checkpoints", () => {
  it("records each call's files outside the root, with diffs", async () => {
    const root = temp("tb-cp-");
    writeFileSync(path.join(root, "a.txt"), "one\ntwo\n");
    const s = await session(root);
    expect(
      await s.call("put", { files: { "a.txt": "one\n2\n", "b.txt": "new\n" } }, { callId: "c1" }),
    ).toEqual({
      kind: "ok",
    });
    const list = await s.checkpoints.list();
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({ call: "c1", tool: "put", state: "done" });
    expect(list[0]?.files.map((f) => f.path)).toEqual(["a.txt", "b.txt"]);
    expect(list[0]?.files[1]?.before).toBeNull();
    const diff = await s.checkpoints.diff("c1");
    expect(diff.files[0]?.diff).toContain("-two\n+2");
    expect(diff.files[1]?.diff).toContain("--- /dev/null");
    // Nothing was written inside the root besides the files themselves.
    expect(readdirSync(root).sort()).toEqual(["a.txt", "b.txt"]);
    expect(checkpointDir(root).startsWith(state)).toBe(true);
    await s.close();
  });

  it("restores to before a checkpoint, rewinding later changes too, and the restore is undoable", async () => {
    const root = temp("tb-cp-");
    writeFileSync(path.join(root, "a.txt"), "v0\n");
    const s = await session(root);
    await s.call("put", { files: { "a.txt": "v1\n" } }, { callId: "first" });
    await s.call("put", { files: { "a.txt": "v2\n", "new.txt": "n\n" } }, { callId: "second" });
    const restored = await s.checkpoints.restore("first");
    expect(restored.files).toEqual([
      { path: "a.txt", action: "written" },
      { path: "new.txt", action: "removed" },
    ]);
    expect(read(root, "a.txt")).toBe("v0\n");
    expect(existsSync(path.join(root, "new.txt"))).toBe(false);
    expect(restored.checkpoint).toBeDefined();
    // Undo the restore: back to v2 and new.txt.
    await s.checkpoints.restore(restored.checkpoint as string);
    expect(read(root, "a.txt")).toBe("v2\n");
    expect(read(root, "new.txt")).toBe("n\n");
    // "last" undoes only the most recent checkpoint (the undo of the restore).
    await s.checkpoints.restore("last");
    expect(read(root, "a.txt")).toBe("v0\n");
    await s.close();
  });

  it("refuses with a conflict report, changing nothing, when a file changed since", async () => {
    const root = temp("tb-cp-");
    writeFileSync(path.join(root, "a.txt"), "v0\n");
    const s = await session(root);
    await s.call("put", { files: { "a.txt": "v1\n", "b.txt": "b1\n" } }, { callId: "c" });
    writeFileSync(path.join(root, "a.txt"), "by hand\n");
    const before = (await s.checkpoints.list()).length;
    const error = await s.checkpoints.restore("c").catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "ECONFLICT" });
    const details = (
      error as { details: { conflicts: Array<{ path: string; expected: string; found: string }> } }
    ).details;
    expect(details.conflicts).toEqual([
      expect.objectContaining({
        path: "a.txt",
        expected: sha256(Buffer.from("v1\n")),
        found: sha256(Buffer.from("by hand\n")),
      }),
    ]);
    expect(String((error as Error).message)).toMatch(/a\.txt: changed since the last recorded change/);
    expect(read(root, "a.txt")).toBe("by hand\n");
    expect(read(root, "b.txt")).toBe("b1\n");
    expect((await s.checkpoints.list()).length).toBe(before);
    await s.close();
  });

  it("never restores from a damaged blob: the file is reported, nothing is written", async () => {
    const root = temp("tb-cp-");
    writeFileSync(path.join(root, "a.txt"), "original\n");
    const s = await session(root);
    await s.call("put", { files: { "a.txt": "changed\n" } }, { callId: "c" });
    const hash = sha256(Buffer.from("original\n"));
    writeFileSync(path.join(checkpointDir(root), "blobs", hash.slice(0, 2), hash), "tampered\n");
    const error = await s.checkpoints.restore("c").catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "ECONFLICT" });
    expect(String((error as Error).message)).toMatch(/damaged/);
    expect(read(root, "a.txt")).toBe("changed\n");
    await s.close();
  });

  it("goes through the write path: restoring a protected file needs --allow protected", async () => {
    const root = temp("tb-cp-");
    const s = await session(root, { allow: ["protected"] });
    await s.call("put", { files: { "configs/app.json": "{}\n" } }, { callId: "c" });
    await s.close();
    const plain = await session(root);
    await expect(plain.checkpoints.restore("c")).rejects.toMatchObject({ code: "EDENIED" });
    expect(read(root, "configs/app.json")).toBe("{}\n");
    await plain.close();
    const allowed = await session(root, { allow: ["protected"] });
    await allowed.checkpoints.restore("c");
    expect(existsSync(path.join(root, "configs/app.json"))).toBe(false);
    await allowed.close();
  });

  it("is shared by sessions on the same root and survives them", async () => {
    const root = temp("tb-cp-");
    const s1 = await session(root);
    await s1.call("put", { files: { "a.txt": "one\n" } }, { callId: "c1" });
    await s1.close();
    const s2 = await session(root);
    await s2.call("put", { files: { "a.txt": "two\n" } }, { callId: "c2" });
    expect((await s2.checkpoints.list()).map((c) => c.call)).toEqual(["c1", "c2"]);
    await s2.checkpoints.restore("c1");
    expect(existsSync(path.join(root, "a.txt"))).toBe(false);
    await s2.close();
  });

  it("states files over the per-file cap as not recorded and refuses to restore them", async () => {
    const root = temp("tb-cp-");
    writeFileSync(path.join(root, "big.txt"), "x".repeat(5000));
    const s = await session(root, { config: { checkpoints: { maxFileBytes: 1000 } } });
    await s.call("put", { files: { "big.txt": "small\n" } }, { callId: "c" });
    const [cp] = await s.checkpoints.list();
    expect(cp?.files[0]).toMatchObject({ path: "big.txt", before: "too_large" });
    await expect(s.checkpoints.restore("c")).rejects.toThrow(/earlier content was not recorded/);
    expect(read(root, "big.txt")).toBe("small\n");
    await s.close();
  });

  it("refuses, without reading it whole, a file that has grown past the per-file cap since", async () => {
    const root = temp("tb-cp-");
    writeFileSync(path.join(root, "a.txt"), "v0\n");
    const s = await session(root, { config: { checkpoints: { maxFileBytes: 1000 } } });
    await s.call("put", { files: { "a.txt": "v1\n" } }, { callId: "c" });
    writeFileSync(path.join(root, "a.txt"), "y".repeat(5000));
    const error = await s.checkpoints.restore("c").catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "ECONFLICT" });
    expect(String((error as Error).message)).toMatch(
      /a\.txt: it is now larger than checkpoints\.maxFileBytes/,
    );
    expect(read(root, "a.txt")).toBe("y".repeat(5000));
    await s.close();
  });

  it("records nothing when checkpoints.enabled is false", async () => {
    const root = temp("tb-cp-");
    const s = await session(root, { config: { checkpoints: { enabled: false } } });
    await s.call("put", { files: { "a.txt": "x" } });
    expect(await s.checkpoints.list()).toEqual([]);
    await s.close();
  });

  it("prunes the oldest checkpoints to stay within maxBytes", async () => {
    const root = temp("tb-cp-");
    const options = checkpointsConfigSchema.parse({ maxBytes: 10_000 });
    const store = new CheckpointStore(root, "s-prune", options);
    for (let i = 0; i < 20; i++) {
      const body = (n: number) => Buffer.from(`${String(n).padStart(4, "0")}${"y".repeat(996)}`);
      await store.begin({ call: `c${i}`, tool: "t" }, [
        { path: "f.txt", before: body(i), after: body(i + 1) },
      ]);
    }
    // Blobs just written are inside the grace period; a prune "later" may delete them.
    const later = Date.now() + 11 * 60 * 1000;
    const result = await store.prune(later);
    expect(result.bytes).toBeLessThanOrEqual(10_000);
    const list = await store.list();
    expect(list.length).toBeGreaterThan(0);
    expect(list.length).toBeLessThan(20);
    expect(list.at(-1)?.call).toBe("c19");
    let onDisk = 0;
    const blobRoot = path.join(store.dir, "blobs");
    for (const sub of readdirSync(blobRoot))
      for (const f of readdirSync(path.join(blobRoot, sub)))
        onDisk += readFileSync(path.join(blobRoot, sub, f)).length;
    expect(onDisk).toBeLessThanOrEqual(10_000);
  });
});

describe("several sessions on one store", () => {
  it("lose no record when they append at the same time", async () => {
    const root = temp("tb-cp-many-");
    const options = checkpointsConfigSchema.parse({});
    const stores = [0, 1, 2].map((i) => new CheckpointStore(root, `s-many-${i}`, options));
    await Promise.all(
      stores.flatMap((store, i) =>
        Array.from({ length: 20 }, (_, n) =>
          store.begin({ call: `c${i}-${n}`, tool: "t" }, [
            { path: `f${i}.txt`, before: undefined, after: Buffer.from(`${i}:${n}`) },
          ]),
        ),
      ),
    );
    const list = await stores[0]?.list();
    expect(new Set(list?.map((c) => c.call)).size).toBe(60);
  });
});

describe("the before-image's hash", () => {
  it("is the hash of the bytes given, also when they follow an after-image of the same file", async () => {
    const root = temp("tb-cp-hash-");
    const store = new CheckpointStore(root, "s-hash", checkpointsConfigSchema.parse({}));
    const enc = (t: string) => new TextEncoder().encode(t);
    const files = async () => (await store.list()).at(-1)?.files[0];
    await store.begin({ call: "c1", tool: "put" }, [
      { path: "a.txt", before: enc("v0\n"), after: enc("v1\n") },
    ]);
    // The same bytes as the last after-image (another buffer), bytes of the same size that differ,
    // and the same bytes under another path: each before is the hash of exactly what was given.
    for (const [i, [rel, before]] of (
      [
        ["a.txt", "v1\n"],
        ["a.txt", "V1\n"],
        ["b.txt", "v1\n"],
      ] as const
    ).entries()) {
      await store.begin({ call: `n${i}`, tool: "put" }, [
        { path: rel, before: enc(before), after: enc(`w${i}\n`) },
      ]);
      expect(await files()).toEqual({
        path: rel,
        before: sha256(enc(before)),
        after: sha256(enc(`w${i}\n`)),
      });
      expect(await store.blob(sha256(enc(before)))).toEqual(enc(before));
    }
  });
});

describe("a crash between the record and the write", () => {
  it("leaves a record a restore uses: the written file goes back, the unwritten one is left alone", async () => {
    const root = temp("tb-cp-crash-");
    writeFileSync(path.join(root, "a.txt"), "a0\n");
    writeFileSync(path.join(root, "b.txt"), "b0\n");
    // The child runs the real store and atomic writer from this source tree, bundled.
    const bundle = path.join(temp("tb-cp-bundle-"), "core.mjs");
    await build({
      // The store and the writer are core's own (not exported): bundled from their modules.
      stdin: {
        contents:
          'export { CheckpointStore, checkpointsConfigSchema } from "./checkpoints.js";\nexport { writeFileAtomic } from "./atomic-write.js";\n',
        resolveDir: fileURLToPath(new URL(".", import.meta.url)),
        loader: "ts",
      },
      bundle: true,
      platform: "node",
      format: "esm",
      outfile: bundle,
      logLevel: "silent",
    });
    writeFileSync(path.join(path.dirname(bundle), "package.json"), '{"type":"module"}');
    const script = `
      import { CheckpointStore, checkpointsConfigSchema, writeFileAtomic } from ${JSON.stringify(bundle)};
      const root = ${JSON.stringify(root)};
      const store = new CheckpointStore(root, "s-crash", checkpointsConfigSchema.parse({}));
      const enc = (t) => new TextEncoder().encode(t);
      await store.begin({ call: "crash", tool: "put" }, [
        { path: "a.txt", before: enc("a0\\n"), after: enc("a1\\n") },
        { path: "b.txt", before: enc("b0\\n"), after: enc("b1\\n") },
      ]);
      await writeFileAtomic(root + "/a.txt", "a1\\n", { root });
      process.kill(process.pid, "SIGKILL");
    `;
    const child = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
      env: { ...process.env, TOOLBELT_STATE_DIR: state },
      cwd: path.dirname(bundle),
      encoding: "utf8",
    });
    expect(child.signal).toBe("SIGKILL");
    expect(read(root, "a.txt")).toBe("a1\n");
    const s = await session(root);
    const [cp] = await s.checkpoints.list();
    expect(cp).toMatchObject({ call: "crash", state: "pending" });
    const result = await s.checkpoints.restore("crash");
    expect(result.files).toEqual([{ path: "a.txt", action: "written" }]);
    expect(result.unchanged).toEqual(["b.txt"]);
    expect(read(root, "a.txt")).toBe("a0\n");
    expect(read(root, "b.txt")).toBe("b0\n");
    await s.close();
  });
});

describe("the undo tool", () => {
  it("is bound only with checkpoints.undoTool, and tools.checkpoints governs it", async () => {
    const root = temp("tb-cp-undo-");
    const off = await session(root);
    expect(off.bindings().map((b) => b.name)).not.toContain("undo");
    await off.close();
    const on = await session(root, { config: { checkpoints: { undoTool: true } } });
    expect(on.bindings().map((b) => b.name)).toContain("undo");
    await on.call("put", { files: { "a.txt": "v1\n" } });
    expect(await on.call("undo", {})).toMatchObject({
      kind: "checkpoint_restore",
      files: [{ path: "a.txt" }],
    });
    expect(existsSync(path.join(root, "a.txt"))).toBe(false);
    await on.close();
    const denied = await session(root, {
      config: { checkpoints: { undoTool: true }, tools: { checkpoints: { mode: "deny" } } },
    });
    await denied.call("put", { files: { "a.txt": "v2\n" } });
    expect(await denied.call("undo", {})).toMatchObject({ kind: "error", code: "EDENIED" });
    expect(read(root, "a.txt")).toBe("v2\n");
    await denied.close();
  });
});

describe("watching a command's changes", () => {
  it("records created, changed and removed files, with earlier content unknown where it was not read", async () => {
    const root = temp("tb-cp-watch-");
    writeFileSync(path.join(root, "kept.txt"), "same\n");
    writeFileSync(path.join(root, "changed.txt"), "old\n");
    writeFileSync(path.join(root, "gone.txt"), "bye\n");
    const s = await session(root);
    const watch = await s.checkpoints.watch("shell", "cmd");
    writeFileSync(path.join(root, "changed.txt"), "new\n");
    writeFileSync(path.join(root, "made.txt"), "made\n");
    rmSync(path.join(root, "gone.txt"));
    await watch?.finish();
    const [cp] = await s.checkpoints.list();
    expect(cp?.files.sort((a, b) => a.path.localeCompare(b.path))).toEqual([
      { path: "changed.txt", before: "unknown", after: sha256(Buffer.from("new\n")) },
      { path: "gone.txt", before: "unknown", after: null },
      { path: "made.txt", before: null, after: sha256(Buffer.from("made\n")) },
    ]);
    await s.close();
  });

  it("does not watch a root over checkpoints.shellMaxFiles", async () => {
    const root = temp("tb-cp-watch-");
    for (const n of ["a", "b", "c"]) writeFileSync(path.join(root, n), n);
    const s = await session(root, { config: { checkpoints: { shellMaxFiles: 2 } } });
    expect(await s.checkpoints.watch("shell", "cmd")).toBeUndefined();
    await s.close();
  });
});
