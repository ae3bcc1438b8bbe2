import { spawnSync } from "node:child_process";
import {
  closeSync,
  promises as fs,
  fstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { hasProcFd } from "@toolbelt/core/internal";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { lacks } from "../../../test-support/capability.js";
import {
  ancestorLevels,
  clearIgnoreCache,
  IGNORE_CACHE_MAX,
  ignoreCacheSize,
  ignoreCacheStats,
  TreeWalk,
  type WalkedFile,
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

// What the walk holds while it runs, and what a name swapped after its directory was listed gives.
// The swaps are made between two steps of the walk, so each case is hit exactly (the race itself is
// packages/toolbelt/test/reliability/walk-race.test.ts).
const noProc = lacks("linux", !hasProcFd() && "no /proc/self/fd: the walk falls back to paths");
const noFifo = noProc || lacks("linux", spawnSync("mkfifo", ["--version"]).error && "no mkfifo on PATH");

describe.skipIf(noProc)("the walk holds each directory by descriptor", () => {
  let base: string;
  beforeAll(async () => {
    base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "tb-walk-fd-")));
  });
  afterAll(() => fs.rm(base, { recursive: true, force: true }));

  const openFds = () => readdirSync("/proc/self/fd").length;

  /** A root with d/a/x.txt, d/b/y.txt, d/f.txt, d/p.txt, and an outside directory full of secrets. */
  function project(name: string): { root: string; outside: string } {
    const root = path.join(base, name, "root");
    const outside = path.join(base, name, "outside");
    for (const dir of ["d/a", "d/b"]) mkdirSync(path.join(root, dir), { recursive: true });
    writeFileSync(path.join(root, "d/a/x.txt"), "inside x\n");
    writeFileSync(path.join(root, "d/b/y.txt"), "inside y\n");
    writeFileSync(path.join(root, "d/f.txt"), "inside f\n");
    writeFileSync(path.join(root, "d/p.txt"), "inside p\n");
    mkdirSync(path.join(outside, "secret-dir"), { recursive: true });
    writeFileSync(path.join(outside, "f.txt"), "OUTSIDE\n");
    writeFileSync(path.join(outside, "y.txt"), "OUTSIDE\n");
    writeFileSync(path.join(outside, "secret-dir", "s.txt"), "OUTSIDE\n");
    return { root, outside };
  }

  /** Walks to the end, reading each file as the JS search does: what it read, or why not. */
  function drain(walk: TreeWalk, seen: Record<string, string>): void {
    for (let file = walk.next(); file !== undefined; file = walk.next()) {
      if (file !== null) seen[file.rel] = read(file);
    }
  }

  function read(file: WalkedFile): string {
    let fd: number;
    try {
      fd = file.dir.openFile(file.name);
    } catch (error) {
      return (error as NodeJS.ErrnoException).code ?? "error";
    }
    try {
      const st = fstatSync(fd);
      if (!st.isFile()) return st.isFIFO() ? "fifo, not read" : "not a file";
      return readFileSync(fd, "utf8").trim();
    } finally {
      closeSync(fd);
    }
  }

  function walkTo(walk: TreeWalk, rel: string, seen: Record<string, string>): void {
    for (let file = walk.next(); file !== undefined; file = walk.next()) {
      if (file === null) continue;
      seen[file.rel] = read(file);
      if (file.rel === rel) return;
    }
    throw new Error(`the walk never reached ${rel}`);
  }

  it("skips a subdirectory or file swapped for a symlink after its directory was listed", () => {
    const { root, outside } = project("names");
    const seen: Record<string, string> = {};
    const walk = new TreeWalk({ root, start: root });
    try {
      walkTo(walk, "d/a/x.txt", seen);
      // d is listed (a, b, f.txt, p.txt); b and f.txt are not opened yet.
      renameSync(path.join(root, "d/b"), path.join(root, "d/b.real"));
      symlinkSync(outside, path.join(root, "d/b"));
      renameSync(path.join(root, "d/f.txt"), path.join(root, "d/f.real"));
      symlinkSync(path.join(outside, "f.txt"), path.join(root, "d/f.txt"));
      drain(walk, seen);
    } finally {
      walk.close();
    }
    // b: not descended into (it is a symlink now); f.txt: its name was listed, its open refused.
    expect(seen).toEqual({ "d/a/x.txt": "inside x", "d/f.txt": "ELOOP", "d/p.txt": "inside p" });
  });

  it("keeps listing the directory it holds when the name above it is swapped for a symlink", () => {
    const { root, outside } = project("parent");
    const seen: Record<string, string> = {};
    const walk = new TreeWalk({ root, start: root });
    try {
      walkTo(walk, "d/a/x.txt", seen);
      renameSync(path.join(root, "d"), path.join(root, "d.held"));
      symlinkSync(outside, path.join(root, "d"));
      drain(walk, seen);
    } finally {
      walk.close();
    }
    // The rest of d comes from the directory that was listed (now d.held), none from outside.
    expect(seen).toEqual({
      "d/a/x.txt": "inside x",
      "d/b/y.txt": "inside y",
      "d/f.txt": "inside f",
      "d/p.txt": "inside p",
    });
  });

  it.skipIf(noFifo)("opens a file swapped for a FIFO without blocking, and it is no regular file", () => {
    const { root } = project("fifo");
    const seen: Record<string, string> = {};
    const walk = new TreeWalk({ root, start: root });
    try {
      walkTo(walk, "d/a/x.txt", seen);
      renameSync(path.join(root, "d/p.txt"), path.join(root, "d/p.real"));
      expect(spawnSync("mkfifo", [path.join(root, "d/p.txt")]).status).toBe(0);
      drain(walk, seen);
    } finally {
      walk.close();
    }
    expect(seen["d/p.txt"]).toBe("fifo, not read");
    expect(seen["d/b/y.txt"]).toBe("inside y");
  });

  it("refuses a start whose directory was swapped for a symlink since it was resolved", () => {
    const { root, outside } = project("start");
    renameSync(path.join(root, "d"), path.join(root, "d.held"));
    symlinkSync(outside, path.join(root, "d"));
    expect(() => new TreeWalk({ root, start: path.join(root, "d") })).toThrow(
      /changed while it was being walked/,
    );
    expect(() => new TreeWalk({ root, start: path.join(root, "d", "a") })).toThrow(/EPATH_ESCAPE|changed/);
  });

  it("reads ignore files through the descriptors: .git/info/exclude, a symlink to a rule file inside the root, not one outside; a .git file is no repository", async () => {
    const { root, outside } = project("rules");
    mkdirSync(path.join(root, ".git", "info"), { recursive: true });
    writeFileSync(path.join(root, ".git", "info", "exclude"), "*.ex\n");
    mkdirSync(path.join(root, "rules"));
    writeFileSync(path.join(root, "rules", "shared"), "*.sym\n");
    symlinkSync(path.join(root, "rules", "shared"), path.join(root, "d", "a", ".gitignore"));
    writeFileSync(path.join(outside, "rules"), "*.txt\n");
    symlinkSync(path.join(outside, "rules"), path.join(root, "d", "b", ".ignore"));
    // A worktree or submodule: `.git` is a file, so there is no .git/info/exclude below it.
    mkdirSync(path.join(root, "wt"));
    writeFileSync(path.join(root, "wt", ".git"), "gitdir: /nowhere\n");
    for (const f of ["top.ex", "d/a/k.sym", "d/a/k.txt", "d/b/k.sym", "wt/k.ex", "wt/k.txt"])
      writeFileSync(path.join(root, f), "x\n");
    const found: string[] = [];
    await walkFiles({ root, start: root }, ({ rel }) => {
      found.push(rel);
      return true;
    });
    // (Symlinks and anything named .git are never listed themselves.)
    expect(found.sort()).toEqual([
      "d/a/k.txt",
      "d/a/x.txt",
      "d/b/k.sym",
      "d/b/y.txt",
      "d/f.txt",
      "d/p.txt",
      "rules/shared",
      "wt/k.txt",
    ]);
    // The same rules when the walk starts below the root (read on the way down to the start).
    const below: string[] = [];
    await walkFiles({ root, start: path.join(root, "d", "a") }, ({ rel }) => {
      below.push(rel);
      return true;
    });
    expect(below.sort()).toEqual(["d/a/k.txt", "d/a/x.txt"]);
  });

  it("holds one descriptor per directory on the current path, and none once the walk ends", async () => {
    const { root } = project("bounded");
    const depth = 40;
    let dir = root;
    for (let i = 0; i < depth; i++) {
      dir = path.join(dir, `n${i}`);
      mkdirSync(dir);
      writeFileSync(path.join(dir, "leaf.txt"), "x\n");
    }
    const before = openFds();
    let most = 0;
    const found: string[] = [];
    await walkFiles({ root, start: root }, (file) => {
      found.push(file.rel);
      most = Math.max(most, openFds() - before);
      return true;
    });
    expect(found).toHaveLength(depth + 4);
    // The root, and each directory from it down to the deepest: depth + 1.
    expect(most).toBeLessThanOrEqual(depth + 1);
    expect(openFds()).toBe(before);

    // Stopped by its caller, aborted, or left half-way: every descriptor is closed.
    let n = 0;
    await walkFiles({ root, start: root }, () => ++n < 5);
    expect(openFds()).toBe(before);
    const controller = new AbortController();
    const aborted = walkFiles({ root, start: root, signal: controller.signal }, () => {
      controller.abort();
      return true;
    });
    await expect(aborted).rejects.toThrow();
    expect(openFds()).toBe(before);
    const walk = new TreeWalk({ root, start: root });
    walk.next();
    walk.next();
    walk.close();
    expect(openFds()).toBe(before);
  });
});
