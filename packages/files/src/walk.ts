import {
  closeSync,
  constants,
  type Dirent,
  fstatSync,
  lstatSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  type Stats,
  statSync,
} from "node:fs";
import path from "node:path";
import { ToolbeltError } from "@toolbelt/core";
import { CheckedDir, openForReadSync } from "@toolbelt/core/internal";
import type { Ignore } from "ignore";
import { loadIgnore, loadPicomatch } from "./glob-libs.js";
import { compareNames } from "./tree-order.js";

/**
 * The walk semantics every listing and the JS search share, chosen to be exactly ripgrep's with
 * `--hidden --no-require-git --glob '!.git'` and no `--follow`:
 * - hidden files and directories are included; anything named `.git` is skipped;
 * - `.gitignore`, `.ignore`, `.rgignore` and `.git/info/exclude` are honoured in every directory
 *   from the filesystem root down to the file, git repository or not;
 * - for one path, the deepest directory with a matching rule decides per kind of file, and the
 *   kinds rank `.rgignore` > `.ignore` > `.gitignore` > `.git/info/exclude`;
 * - symbolic links are never followed (neither to files nor to directories).
 *
 * And one rule of its own: the walk holds at the moment of each open (DESIGN.md, Trust). Each
 * directory is held by a descriptor (core's CheckedDir: the start checked against its real path, every
 * other one opened by name inside its parent's descriptor with O_NOFOLLOW) and listed through it; a
 * file is opened by name inside its directory's descriptor with O_NOFOLLOW|O_NONBLOCK and read only if
 * it is a regular file. So a name swapped for a symlink, or a file swapped for a FIFO, by a process in
 * the checkout while the walk runs is skipped, never followed out of the root nor blocked on. Ignore
 * files inside the root are read the same way. Without /proc (not Linux) CheckedDir falls back to
 * paths, which is only as safe as the resolver's check.
 */

type Verdict = "ignore" | "whitelist" | undefined;

type IgnoreLevel = {
  dir: string;
  rg: Ignore | undefined;
  dot: Ignore | undefined;
  git: Ignore | undefined;
  exclude: Ignore | undefined;
  parent: IgnoreLevel | undefined;
};

type RuleTester = { test(path: string, mode: string): { ignored: boolean; unignored: boolean } };

/**
 * Tests one path against one ignore file's rules, without the "a parent directory is ignored"
 * inheritance `ignore.test()` adds: ripgrep judges each path on its own rules (it simply does
 * not descend into ignored directories), which differs when another ignore file re-includes
 * the parent. `ignore` keeps that per-path test on its rule manager; fall back to `test()`.
 */
function verdictOf(matcher: Ignore, rel: string, isDir: boolean): Verdict {
  const target = isDir ? `${rel}/` : rel;
  const rules = (matcher as unknown as { _rules?: RuleTester })._rules;
  const result = typeof rules?.test === "function" ? rules.test(target, "regex") : matcher.test(target);
  if (result.ignored) return "ignore";
  if (result.unignored) return "whitelist";
  return undefined;
}

type CachedRules = {
  ino: number;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  rules: Ignore | undefined;
  /**
   * The text the rules were parsed from, kept while the entry is not yet settled (see RACY_MS):
   * such an entry is read again at every use, and parsed again only when this text changed.
   */
  text?: string;
  /** The file's timestamps were older than RACY_MS when it was read: its stat alone vouches for it. */
  settled: boolean;
};

/**
 * A file changed this recently when it was read may change again without its inode, size, mtime or
 * ctime changing: timestamps have a granularity (a clock tick on Linux before 6.13, a second or two
 * on some file systems), so a same-size rewrite within it keeps them all. As git does for racily
 * clean entries, such a file's stat is not trusted: it is read again (not parsed again unless its
 * text changed) until it was last changed longer ago than this when read. 2 s covers FAT's mtime.
 */
const RACY_MS = 2000;

/**
 * Parsed ignore files by path, shared by every walk in the process (listings and searches re-read
 * the same ancestors' files on every call). A settled entry holds while the file's inode, size,
 * mtime and ctime are unchanged; a stat per file replaces a read and a parse. Absent files are
 * cached too (as inode 0), so a `.gitignore` created later is seen at the next call.
 */
const rulesCache = new Map<string, CachedRules>();
/** Directories of a large monorepo fit; past it the least recently used entries go. */
export const IGNORE_CACHE_MAX = 4096;

/** How many ignore files were read, and parsed, rather than served from the cache: for tests. */
export const ignoreCacheStats = { read: 0, parsed: 0 };

export function ignoreCacheSize(): number {
  return rulesCache.size;
}

export function clearIgnoreCache(): void {
  rulesCache.clear();
}

type Key = { ino: number; size: number; mtimeMs: number; ctimeMs: number };

/** The key of a file that is not there (or no regular file): cached as inode 0. */
const ABSENT: Key = { ino: 0, size: 0, mtimeMs: 0, ctimeMs: 0 };

function keyOf(stat: Stats | undefined): Key {
  return stat?.isFile()
    ? { ino: stat.ino, size: stat.size, mtimeMs: stat.mtimeMs, ctimeMs: stat.ctimeMs }
    : ABSENT;
}

/**
 * The rules of the ignore file `file` (its path: the cache's key). `probe` stats it (following a
 * symlink, as ripgrep's open does: metadata only, for the cache key); `open` opens its content for
 * reading, race-free, or answers undefined when it must not be read (a symlink out of the root).
 */
function readRules(
  file: string,
  probe: () => Stats | undefined,
  open: () => number | undefined,
): Ignore | undefined {
  // Taken before the stat: the file is read no earlier than this.
  const now = Date.now();
  let key = ABSENT;
  try {
    key = keyOf(probe());
  } catch {
    // ENOTDIR: `.git` is a file (a worktree or a submodule), so there is no `.git/info/exclude`.
  }
  const hit = rulesCache.get(file);
  const sameKey =
    hit !== undefined &&
    hit.ino === key.ino &&
    hit.size === key.size &&
    hit.mtimeMs === key.mtimeMs &&
    hit.ctimeMs === key.ctimeMs;
  if (sameKey && hit.settled) {
    // Re-inserted so the Map's insertion order doubles as recency.
    rulesCache.delete(file);
    rulesCache.set(file, hit);
    return hit.rules;
  }
  let rules: Ignore | undefined;
  let text: string | undefined;
  if (key.ino !== 0) {
    let fd: number | undefined;
    try {
      fd = open();
      const stat = fd === undefined ? undefined : fstatSync(fd);
      // Not readable here, or no regular file by the time it was opened (swapped for a FIFO, say):
      // no rules this time, and nothing cached, so the next walk looks again.
      if (fd === undefined || !stat?.isFile()) return undefined;
      // The key of what is read: the file opened, not the name probed a moment before.
      key = keyOf(stat);
      ignoreCacheStats.read++;
      text = readFileSync(fd, "utf8");
      if (hit?.text === text) rules = hit.rules;
      else {
        ignoreCacheStats.parsed++;
        // git (and ripgrep) match ignore rules case-sensitively on Linux.
        rules = loadIgnore()({ ignorecase: false }).add(text);
      }
    } catch {
      return undefined;
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  }
  const settled = key.ino === 0 || now - Math.max(key.mtimeMs, key.ctimeMs) >= RACY_MS;
  rulesCache.delete(file);
  rulesCache.set(
    file,
    settled || text === undefined ? { ...key, rules, settled } : { ...key, rules, text, settled },
  );
  if (rulesCache.size > IGNORE_CACHE_MAX) {
    const oldest = rulesCache.keys().next().value as string;
    rulesCache.delete(oldest);
  }
  return rules;
}

const RULES_FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOCTTY ?? 0);

/** An ignore file above the root (the user's own directories): by path, following symlinks. */
function readRulesByPath(file: string): Ignore | undefined {
  return readRules(
    file,
    // No exception for the common case of a missing file: they are costly on a hot path.
    () => statSync(file, { throwIfNoEntry: false }),
    () => openSync(file, RULES_FLAGS),
  );
}

/** A directory of the walk, held open, and the root the walk stays in. */
type Held = { ref: CheckedDir; root: string };

/**
 * An ignore file in a directory the walk holds (`parts`: `.gitignore`, or `.git`, `info`, `exclude`),
 * opened name by name through the descriptor without following a symlink. A symlinked one is read as
 * ripgrep reads it (its target), but only when that target lies inside the root, and opened there
 * with the same checks as any read.
 */
function readRulesHeld(held: Held, dir: string, parts: readonly string[]): Ignore | undefined {
  return readRules(
    path.join(dir, ...parts),
    () => statSync(held.ref.at(parts.join("/")), { throwIfNoEntry: false }),
    () => openRulesHeld(held, parts),
  );
}

function openRulesHeld({ ref, root }: Held, parts: readonly string[]): number | undefined {
  const opened: CheckedDir[] = [];
  try {
    let dir = ref;
    for (const name of parts.slice(0, -1)) {
      dir = dir.child(name);
      opened.push(dir);
    }
    return dir.openFile(parts[parts.length - 1] as string);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "ELOOP" && code !== "ENOTDIR") throw error;
    // A symlink on the way: followed to a file inside the root only.
    const real = realpathSync(ref.at(parts.join("/")));
    if (real === root || !isBelow(root, real)) return undefined;
    return openForReadSync(real, { root });
  } finally {
    for (const dir of opened) dir.close();
  }
}

function isBelow(dir: string, p: string): boolean {
  return p.startsWith(dir.endsWith(path.sep) ? dir : dir + path.sep);
}

function levelFor(
  dir: string,
  names: ReadonlySet<string> | undefined,
  parent: IgnoreLevel | undefined,
  held?: Held,
): IgnoreLevel | undefined {
  const has = (name: string) => names === undefined || names.has(name);
  const read = (...parts: string[]) =>
    held ? readRulesHeld(held, dir, parts) : readRulesByPath(path.join(dir, ...parts));
  const rg = has(".rgignore") ? read(".rgignore") : undefined;
  const dot = has(".ignore") ? read(".ignore") : undefined;
  const git = has(".gitignore") ? read(".gitignore") : undefined;
  const exclude = has(".git") ? read(".git", "info", "exclude") : undefined;
  if (!rg && !dot && !git && !exclude) return parent;
  return { dir, rg, dot, git, exclude, parent };
}

/** Ignore levels for every ancestor of `dir` (from `/`), `dir` included, read by path. */
export function ancestorLevels(dir: string): IgnoreLevel | undefined {
  const chain: string[] = [];
  let cursor = dir;
  while (true) {
    chain.unshift(cursor);
    const up = path.dirname(cursor);
    if (up === cursor) break;
    cursor = up;
  }
  let level: IgnoreLevel | undefined;
  for (const d of chain) level = levelFor(d, undefined, level);
  return level;
}

/**
 * Opens the walk's start: the root checked against its real path, then each directory down to
 * `start` by name inside the one above it, never through a symlink; the ignore files of the ones
 * above the root are read by path, those from the root down through the descriptors. A symlink met on
 * the way (a name swapped since the path was resolved) is `EPATH_ESCAPE`.
 */
function openStart(start: string, root: string): { ref: CheckedDir; level: IgnoreLevel | undefined } {
  if (start !== root && !isBelow(root, start)) {
    // Not under the root: checked at its own path, its ancestors read by path.
    const ref = CheckedDir.open(start);
    try {
      return { ref, level: ancestorLevels(start) };
    } catch (error) {
      ref.close();
      throw error;
    }
  }
  const above = path.dirname(root);
  let level = above === root ? undefined : ancestorLevels(above);
  let ref = CheckedDir.open(root);
  try {
    level = levelFor(root, undefined, level, { ref, root });
    if (start !== root) {
      for (const name of relFrom(root, start).split("/")) {
        let next: CheckedDir;
        try {
          next = ref.child(name);
        } catch (error) {
          const code = (error as NodeJS.ErrnoException).code;
          const st = code === "ELOOP" || code === "ENOTDIR" ? lstatQuiet(ref.at(name)) : undefined;
          if (st?.isSymbolicLink() || st?.isDirectory()) {
            throw new ToolbeltError(
              "EPATH_ESCAPE",
              `${relFrom(root, path.join(ref.path, name))} changed while it was being walked (replaced, e.g. by a symlink); nothing was listed`,
              { details: { path: relFrom(root, start) } },
            );
          }
          throw error;
        }
        ref.close();
        ref = next;
        level = levelFor(ref.path, undefined, level, { ref, root });
      }
    }
  } catch (error) {
    ref.close();
    throw error;
  }
  return { ref, level };
}

function lstatQuiet(p: string): Stats | undefined {
  try {
    return lstatSync(p, { throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}

/** `abs` relative to `dir`, with `/` separators; `abs` is always inside `dir` here. */
function relFrom(dir: string, abs: string): string {
  const prefix = dir.endsWith(path.sep) ? dir.length : dir.length + 1;
  const rel = abs.startsWith(dir) ? abs.slice(prefix) : path.relative(dir, abs);
  return path.sep === "/" ? rel : rel.split(path.sep).join("/");
}

export function isIgnored(level: IgnoreLevel | undefined, abs: string, isDir: boolean): boolean {
  let rg: Verdict;
  let dot: Verdict;
  let git: Verdict;
  let exclude: Verdict;
  for (let l = level; l; l = l.parent) {
    if (abs === l.dir) continue;
    const rel = relFrom(l.dir, abs);
    if (!rg && l.rg) rg = verdictOf(l.rg, rel, isDir);
    if (!dot && l.dot) dot = verdictOf(l.dot, rel, isDir);
    if (!git && l.git) git = verdictOf(l.git, rel, isDir);
    if (!exclude && l.exclude) exclude = verdictOf(l.exclude, rel, isDir);
  }
  return (rg ?? dot ?? git ?? exclude) === "ignore";
}

/**
 * A ripgrep-style override glob (`--iglob`): gitignore syntax, so a glob without a slash matches
 * the file name at any depth and one with a slash is anchored at the root; a leading `!` excludes.
 * Matched case-insensitively. A whitelisted path is taken whatever the ignore files say; with a
 * whitelist glob, a file it does not match is left out.
 */
export type Override = { test(rel: string, isDir: boolean): Verdict; whitelist: boolean };

export function makeOverride(glob: string): Override {
  const negated = glob.startsWith("!");
  let body = negated ? glob.slice(1) : glob;
  const dirOnly = body.endsWith("/");
  if (dirOnly) body = body.slice(0, -1);
  const anchored = body.includes("/");
  if (body.startsWith("/")) body = body.slice(1);
  const pattern = anchored || body.startsWith("**") ? body : `**/${body}`;
  // `s`: names may hold newlines, which ripgrep's globs match like any other character.
  const match = loadPicomatch()(pattern, { dot: true, nocase: true, flags: "is" });
  // gitignore semantics: `dir/**` matches everything inside dir, and so does a trailing `/**`.
  return {
    whitelist: !negated,
    test(rel, isDir) {
      if (dirOnly && !isDir) return undefined;
      if (!match(rel)) return undefined;
      return negated ? "ignore" : "whitelist";
    },
  };
}

export type WalkOptions = {
  /** The directory to walk (absolute, real, inside the root). */
  start: string;
  /** The real root; reported paths are relative to it. */
  root: string;
  override?: Override;
  signal?: AbortSignal;
};

export type WalkedFile = {
  abs: string;
  rel: string;
  /** Its name in `dir`. */
  name: string;
  /**
   * Its directory, held open: `dir.openFile(name)` opens this very file, never a symlink or a FIFO
   * swapped in for it since (check it is a regular file with fstat). Valid until the walk moves on:
   * while `onFile` runs, or until TreeWalk's next `next()`.
   */
  dir: CheckedDir;
};

/** How long a walk runs synchronously before it yields to the event loop. */
const SLICE_MS = 8;

const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * A path longer than this many bytes cannot be opened by name (PATH_MAX); the walk, which opens
 * directories through descriptors and so could go deeper, stops there as a walk by path does. That
 * also bounds the descriptors a walk holds: one per directory on the current path.
 */
const PATH_MAX_BYTES = 4095;

/** A listed directory, open while a subdirectory of it is still to be opened or a file of it to be read. */
type DirNode = { ref: CheckedDir; refs: number };
/** A directory still to open and list (the start comes already open, as `ref`). */
type DirFrame = {
  parent: DirNode | undefined;
  name: string;
  dir: string;
  level: IgnoreLevel | undefined;
  ref?: CheckedDir;
};
/** The files of a directory whose subdirectories are all done. */
type FilesFrame = { files: WalkedFile[]; node: DirNode; next: number };

function release(node: DirNode): void {
  if (--node.refs === 0) node.ref.close();
}

/**
 * The walk, one step at a time, for a caller that reads each file as it comes (the JS search): files
 * come out in comparePaths order (subdirectories before files, each by name), so a walk stopped early
 * has seen exactly the first files of the full answer. Always `close()` it (it holds descriptors).
 */
export class TreeWalk {
  readonly #start: string;
  readonly #root: string;
  readonly #override: Override | undefined;
  readonly #stack: Array<DirFrame | FilesFrame> = [];
  #files: FilesFrame | undefined;

  /** Opens the start (see openStart): a swap on the way to it throws EPATH_ESCAPE. */
  constructor(options: WalkOptions) {
    this.#start = options.start;
    this.#root = options.root;
    this.#override = options.override;
    let start: { ref: CheckedDir; level: IgnoreLevel | undefined };
    try {
      start = openStart(options.start, options.root);
    } catch (error) {
      if (ToolbeltError.isInstance(error)) throw error;
      // Missing or unreadable: nothing to walk, as ripgrep skips an unreadable directory.
      return;
    }
    this.#stack.push({ parent: undefined, name: "", dir: options.start, level: start.level, ref: start.ref });
  }

  /**
   * The next file; `null` after listing a directory that gave none yet (the caller may yield or check
   * its signal, then asks again); undefined at the end. The file's `dir` stays open until the next call.
   */
  next(): WalkedFile | null | undefined {
    for (;;) {
      const current = this.#files;
      if (current) {
        if (current.next < current.files.length) return current.files[current.next++] as WalkedFile;
        this.#files = undefined;
        release(current.node);
      }
      const frame = this.#stack.pop();
      if (frame === undefined) return undefined;
      if ("files" in frame) {
        this.#files = frame;
        continue;
      }
      this.#list(frame);
      return null;
    }
  }

  /** Closes every directory still held; the walk is over. */
  close(): void {
    if (this.#files) release(this.#files.node);
    this.#files = undefined;
    for (const frame of this.#stack) {
      if ("files" in frame) release(frame.node);
      else if (frame.ref) frame.ref.close();
      else if (frame.parent) release(frame.parent);
    }
    this.#stack.length = 0;
  }

  /** Opens (through its parent) and lists one directory, pushing its files and subdirectories. */
  #list(frame: DirFrame): void {
    const { dir, level: inherited } = frame;
    let ref = frame.ref;
    if (!ref) {
      const parent = frame.parent as DirNode;
      try {
        if (dir.length > PATH_MAX_BYTES / 3 && Buffer.byteLength(dir) > PATH_MAX_BYTES) return;
        ref = parent.ref.child(frame.name);
      } catch {
        // Swapped for a symlink or a file since it was listed, removed, or unreadable: skipped, as
        // ripgrep skips an unreadable directory (it reports it on stderr).
        return;
      } finally {
        release(parent);
      }
    }
    let node: DirNode | undefined;
    try {
      let entries: Dirent[];
      try {
        entries = readdirSync(ref.listPath(), { withFileTypes: true });
      } catch {
        return;
      }
      entries.sort((a, b) => compareNames(a.name, b.name));
      let level = inherited;
      if (dir !== this.#start) {
        const names = new Set<string>();
        for (const e of entries) if (IGNORE_FILES.has(e.name)) names.add(e.name);
        if (names.size > 0) level = levelFor(dir, names, inherited, { ref, root: this.#root });
      }
      const override = this.#override;
      const subdirs: Array<{ name: string; abs: string }> = [];
      const files: WalkedFile[] = [];
      for (const entry of entries) {
        if (entry.name === ".git") continue;
        const isDir = entry.isDirectory();
        if (!isDir && !entry.isFile()) continue;
        const abs = dir.endsWith(path.sep) ? dir + entry.name : dir + path.sep + entry.name;
        const rel = relFrom(this.#root, abs);
        const verdict = override?.test(rel, isDir);
        if (verdict === "ignore") continue;
        if (verdict === undefined) {
          if (override?.whitelist && !isDir) continue;
          if (isIgnored(level, abs, isDir)) continue;
        }
        if (isDir) subdirs.push({ name: entry.name, abs });
        else files.push({ abs, rel, name: entry.name, dir: ref });
      }
      const refs = (files.length > 0 ? 1 : 0) + subdirs.length;
      if (refs === 0) return;
      node = { ref, refs };
      if (files.length > 0) this.#stack.push({ files, node, next: 0 });
      // Reversed so the stack pops them in name order.
      for (let i = subdirs.length - 1; i >= 0; i--) {
        const sub = subdirs[i] as { name: string; abs: string };
        this.#stack.push({ parent: node, name: sub.name, dir: sub.abs, level });
      }
    } finally {
      if (!node) ref.close();
    }
  }
}

/**
 * Walks files under `start` with the semantics above, calling `onFile` for each regular file;
 * `onFile` returning false stops the walk. The walk (and whatever `onFile` does) runs in short
 * synchronous slices: on page-cached trees a promise round trip through the thread pool per
 * directory or file costs more than the system call itself, and yielding keeps the process
 * responsive and the abort signal honoured.
 */
export async function walkFiles(options: WalkOptions, onFile: (file: WalkedFile) => boolean): Promise<void> {
  const { signal } = options;
  signal?.throwIfAborted();
  const walk = new TreeWalk(options);
  try {
    let sliceEnd = performance.now() + SLICE_MS;
    for (;;) {
      const file = walk.next();
      if (file === undefined) return;
      if (file === null) {
        if (performance.now() > sliceEnd) {
          await yieldToLoop();
          sliceEnd = performance.now() + SLICE_MS;
        }
        signal?.throwIfAborted();
        continue;
      }
      if (onFile(file) === false) return;
    }
  } finally {
    walk.close();
  }
}

const IGNORE_FILES = new Set([".gitignore", ".ignore", ".rgignore", ".git"]);
