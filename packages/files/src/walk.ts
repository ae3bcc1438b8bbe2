import { type Dirent, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
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

function readRules(file: string): Ignore | undefined {
  // Taken before the stat: the file is read no earlier than this.
  const now = Date.now();
  // No exception for the common case of a missing file: they are costly on a hot path.
  const stat = statSync(file, { throwIfNoEntry: false });
  const key = stat?.isFile()
    ? { ino: stat.ino, size: stat.size, mtimeMs: stat.mtimeMs, ctimeMs: stat.ctimeMs }
    : { ino: 0, size: 0, mtimeMs: 0, ctimeMs: 0 };
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
    try {
      ignoreCacheStats.read++;
      text = readFileSync(file, "utf8");
      if (hit?.text === text) rules = hit.rules;
      else {
        ignoreCacheStats.parsed++;
        // git (and ripgrep) match ignore rules case-sensitively on Linux.
        rules = loadIgnore()({ ignorecase: false }).add(text);
      }
    } catch {
      rules = undefined;
      text = undefined;
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

function levelFor(
  dir: string,
  names: ReadonlySet<string> | undefined,
  parent?: IgnoreLevel,
): IgnoreLevel | undefined {
  const has = (name: string) => names === undefined || names.has(name);
  const rg = has(".rgignore") ? readRules(path.join(dir, ".rgignore")) : undefined;
  const dot = has(".ignore") ? readRules(path.join(dir, ".ignore")) : undefined;
  const git = has(".gitignore") ? readRules(path.join(dir, ".gitignore")) : undefined;
  const exclude = has(".git") ? readRules(path.join(dir, ".git", "info", "exclude")) : undefined;
  if (!rg && !dot && !git && !exclude) return parent;
  return { dir, rg, dot, git, exclude, parent };
}

/** Ignore levels for every ancestor of `dir` (from `/`), `dir` included. */
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

export type WalkedFile = { abs: string; rel: string };

/** How long a walk runs synchronously before it yields to the event loop. */
const SLICE_MS = 8;

const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Walks files under `start` with the semantics above, calling `onFile` for each regular file;
 * `onFile` returning false stops the walk. The walk (and whatever `onFile` does) runs in short
 * synchronous slices: on page-cached trees a promise round trip through the thread pool per
 * directory or file costs more than the system call itself, and yielding keeps the process
 * responsive and the abort signal honoured.
 */
export async function walkFiles(options: WalkOptions, onFile: (file: WalkedFile) => boolean): Promise<void> {
  const { root, override, signal } = options;
  // A directory still to read, or the files of one whose subdirectories are all done: files come
  // out in comparePaths order (subdirectories before files, each by name), so a walk stopped early
  // has seen exactly the first files of the full answer.
  type Frame = { dir: string; level: IgnoreLevel | undefined } | { files: WalkedFile[] };
  const stack: Frame[] = [{ dir: options.start, level: ancestorLevels(options.start) }];
  let sliceEnd = performance.now() + SLICE_MS;
  while (stack.length > 0) {
    if (performance.now() > sliceEnd) {
      await yieldToLoop();
      sliceEnd = performance.now() + SLICE_MS;
    }
    signal?.throwIfAborted();
    const frame = stack.pop() as Frame;
    if ("files" in frame) {
      for (const file of frame.files) if (onFile(file) === false) return;
      continue;
    }
    const { dir, level: inherited } = frame;
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      // Unreadable directories are skipped, as ripgrep does (it reports them on stderr).
      continue;
    }
    entries.sort((a, b) => compareNames(a.name, b.name));
    let level = inherited;
    if (dir !== options.start) {
      const names = new Set<string>();
      for (const e of entries) if (IGNORE_FILES.has(e.name)) names.add(e.name);
      if (names.size > 0) level = levelFor(dir, names, inherited);
    }
    const subdirs: string[] = [];
    const files: WalkedFile[] = [];
    for (const entry of entries) {
      if (entry.name === ".git") continue;
      const isDir = entry.isDirectory();
      if (!isDir && !entry.isFile()) continue;
      const abs = dir.endsWith(path.sep) ? dir + entry.name : dir + path.sep + entry.name;
      const rel = relFrom(root, abs);
      const verdict = override?.test(rel, isDir);
      if (verdict === "ignore") continue;
      if (verdict === undefined) {
        if (override?.whitelist && !isDir) continue;
        if (isIgnored(level, abs, isDir)) continue;
      }
      if (isDir) subdirs.push(abs);
      else files.push({ abs, rel });
    }
    if (files.length > 0) stack.push({ files });
    // Reversed so the stack pops them in name order.
    for (let i = subdirs.length - 1; i >= 0; i--) stack.push({ dir: subdirs[i] as string, level });
  }
}

const IGNORE_FILES = new Set([".gitignore", ".ignore", ".rgignore", ".git"]);
