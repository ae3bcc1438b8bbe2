import type { Dirent } from "node:fs";
import { promises as fs } from "node:fs";
import path from "node:path";
import ignore, { type Ignore } from "ignore";
import picomatch from "picomatch";

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

async function readRules(file: string): Promise<Ignore | undefined> {
  let text: string;
  try {
    text = await fs.readFile(file, "utf8");
  } catch {
    return undefined;
  }
  // git (and ripgrep) match ignore rules case-sensitively on Linux.
  return ignore({ ignorecase: false }).add(text);
}

async function levelFor(dir: string, names: ReadonlySet<string> | undefined, parent?: IgnoreLevel) {
  const has = (name: string) => names === undefined || names.has(name);
  const [rg, dot, git, exclude] = await Promise.all([
    has(".rgignore") ? readRules(path.join(dir, ".rgignore")) : undefined,
    has(".ignore") ? readRules(path.join(dir, ".ignore")) : undefined,
    has(".gitignore") ? readRules(path.join(dir, ".gitignore")) : undefined,
    has(".git") ? readRules(path.join(dir, ".git", "info", "exclude")) : undefined,
  ]);
  if (!rg && !dot && !git && !exclude) return parent;
  return { dir, rg, dot, git, exclude, parent } satisfies IgnoreLevel;
}

/** Ignore levels for every ancestor of `dir` (from `/`), `dir` included. */
export async function ancestorLevels(dir: string): Promise<IgnoreLevel | undefined> {
  const chain: string[] = [];
  let cursor = dir;
  while (true) {
    chain.unshift(cursor);
    const up = path.dirname(cursor);
    if (up === cursor) break;
    cursor = up;
  }
  let level: IgnoreLevel | undefined;
  for (const d of chain) level = await levelFor(d, undefined, level);
  return level;
}

function relFrom(dir: string, abs: string): string {
  const rel = path.relative(dir, abs);
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
  const match = picomatch(pattern, { dot: true, nocase: true });
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
  /** Directories read at once. */
  concurrency?: number;
};

export type WalkedFile = { abs: string; rel: string };

/**
 * Walks files under `start` with the semantics above, calling `onFile` for each regular file.
 * `onFile` returning false stops the walk. Directory reads run with bounded concurrency.
 */
export async function walkFiles(options: WalkOptions, onFile: (file: WalkedFile) => boolean): Promise<void> {
  const { root, override, signal } = options;
  const limit = options.concurrency ?? 8;
  const startLevel = await ancestorLevels(options.start);
  let stopped = false;
  const pending: Array<{ dir: string; level: IgnoreLevel | undefined }> = [
    { dir: options.start, level: startLevel },
  ];
  let active = 0;
  await new Promise<void>((resolve, reject) => {
    const pump = () => {
      if (signal?.aborted) stopped = true;
      while (!stopped && active < limit && pending.length > 0) {
        const job = pending.pop() as { dir: string; level: IgnoreLevel | undefined };
        active += 1;
        visit(job.dir, job.level).then(
          () => {
            active -= 1;
            pump();
          },
          (error: unknown) => {
            stopped = true;
            reject(error);
          },
        );
      }
      if (active === 0 && (stopped || pending.length === 0)) resolve();
    };
    const visit = async (dir: string, inherited: IgnoreLevel | undefined) => {
      let entries: Dirent[];
      try {
        entries = await fs.readdir(dir, { withFileTypes: true });
      } catch {
        // Unreadable directories are skipped, as ripgrep does (it reports them on stderr).
        return;
      }
      const names = new Set(entries.map((e) => e.name));
      const level =
        dir === options.start
          ? inherited
          : names.has(".gitignore") || names.has(".ignore") || names.has(".rgignore") || names.has(".git")
            ? await levelFor(dir, names, inherited)
            : inherited;
      for (const entry of entries) {
        if (stopped) return;
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
        if (isDir) pending.push({ dir: abs, level });
        else if (onFile({ abs, rel }) === false) stopped = true;
      }
    };
    pump();
  });
}
