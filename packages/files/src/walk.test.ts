import { promises as fs, utimesSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  ancestorLevels,
  clearIgnoreCache,
  IGNORE_CACHE_MAX,
  ignoreCacheSize,
  ignoreCacheStats,
  walkFiles,
} from "./walk.js";

let root: string;

async function walk(): Promise<string[]> {
  const found: string[] = [];
  await walkFiles({ root, start: root }, ({ rel }) => {
    found.push(rel);
    return true;
  });
  return found.sort();
}

beforeAll(async () => {
  root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "tb-walk-cache-")));
  await fs.mkdir(path.join(root, "sub"));
  for (const f of ["a.log", "b.txt", "sub/c.log", "sub/d.txt"]) await fs.writeFile(path.join(root, f), "");
});
afterAll(() => fs.rm(root, { recursive: true, force: true }));

describe("ignore rules cache", () => {
  it("parses each ignore file once across walks, and again when it changes", async () => {
    clearIgnoreCache();
    await fs.writeFile(path.join(root, ".gitignore"), "*.log\n");
    expect(await walk()).toEqual([".gitignore", "b.txt", "sub/d.txt"]);
    const parsed = ignoreCacheStats.parsed;
    expect(await walk()).toEqual([".gitignore", "b.txt", "sub/d.txt"]);
    expect(ignoreCacheStats.parsed).toBe(parsed);

    // Same size, and the mtime put back: the ctime (and the content) still changed.
    const before = await fs.stat(path.join(root, ".gitignore"));
    await fs.writeFile(path.join(root, ".gitignore"), "*.txt\n");
    utimesSync(path.join(root, ".gitignore"), before.atime, before.mtime);
    expect(await walk()).toEqual([".gitignore", "a.log", "sub/c.log"]);
    expect(ignoreCacheStats.parsed).toBe(parsed + 1);
  });

  it("reads a just-changed ignore file again at every walk until its stat can vouch for it", async () => {
    clearIgnoreCache();
    const file = path.join(root, ".gitignore");
    await fs.writeFile(file, "*.log\n");
    expect(await walk()).toEqual([".gitignore", "b.txt", "sub/d.txt"]);
    const { read, parsed } = ignoreCacheStats;
    // Changed within the last two seconds: a same-size rewrite could keep its whole stat, so it is
    // read again, and parsed again only if its text changed.
    expect(await walk()).toEqual([".gitignore", "b.txt", "sub/d.txt"]);
    expect(ignoreCacheStats.read).toBeGreaterThan(read);
    expect(ignoreCacheStats.parsed).toBe(parsed);
    // Later (the clock moved on, the file did not): one more read settles it, then the stat suffices.
    const later = Date.now() + 3000;
    const clock = vi.spyOn(Date, "now").mockReturnValue(later);
    try {
      await walk();
      const settled = ignoreCacheStats.read;
      expect(await walk()).toEqual([".gitignore", "b.txt", "sub/d.txt"]);
      expect(ignoreCacheStats.read).toBe(settled);
      expect(ignoreCacheStats.parsed).toBe(parsed);
    } finally {
      clock.mockRestore();
    }
  });

  it("sees an ignore file created or removed between walks", async () => {
    clearIgnoreCache();
    await fs.rm(path.join(root, ".gitignore"), { force: true });
    expect(await walk()).toEqual(["a.log", "b.txt", "sub/c.log", "sub/d.txt"]);
    await fs.writeFile(path.join(root, ".ignore"), "sub/\n");
    expect(await walk()).toEqual([".ignore", "a.log", "b.txt"]);
    await fs.rm(path.join(root, ".ignore"));
    expect(await walk()).toEqual(["a.log", "b.txt", "sub/c.log", "sub/d.txt"]);
  });

  it("stays bounded: a start deep enough to need more entries than the cap holds evicts the oldest", async () => {
    clearIgnoreCache();
    // Four ignore-file names per ancestor directory, so this depth needs more entries than the cap.
    const depth = Math.ceil(IGNORE_CACHE_MAX / 4) + 10;
    const deep = path.join(root, ...Array.from({ length: depth }, () => "n"));
    await fs.mkdir(deep, { recursive: true });
    ancestorLevels(deep);
    expect(ignoreCacheSize()).toBe(IGNORE_CACHE_MAX);
    await fs.rm(path.join(root, "n"), { recursive: true });
  });
});
