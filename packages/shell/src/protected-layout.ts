import {
  closeSync,
  constants,
  type Dirent,
  fstatSync,
  openSync,
  readdirSync,
  readSync,
  realpathSync,
} from "node:fs";
import path from "node:path";
import { PROTECTED_PATHS } from "@toolbelt/core/internal";

/**
 * Directories a command's walk for nested repositories reads, breadth first from the root; nested
 * repositories deeper in a larger tree are neither bound read-only nor watched (the result says so).
 */
export const MAX_LAYOUT_DIRS = 1000;
/** Submodule git directories under `.git/modules` looked at. */
const MAX_MODULES = 256;

/**
 * Where a command could plant code that runs later, as the sandbox and the protected-path watch see
 * it at one moment: the fixed protected paths (`configs/app.json`, the root's `.git/hooks`…) and what
 * a bounded walk finds below — nested repositories (a `.git` directory or the `.git` file of a
 * worktree or submodule), the git directories of submodules in `.git/modules`, and `HEAD` files
 * (what makes git take a directory for a bare repository).
 */
export interface ProtectedLayout {
  /** Root-relative paths bound read-only for a sandboxed command and fingerprinted before and after. */
  readOnly: string[];
  /**
   * Root-relative nested `.git` directories: only whether they exist is watched (git itself changes
   * what is inside them); their `hooks` and `config` are in `readOnly`.
   */
  present: string[];
  /** The walk stopped at MAX_LAYOUT_DIRS directories: what lies beyond was not looked at. */
  truncated: boolean;
}

/**
 * The protected paths every root has, as a sandboxed command sees them read-only. Of `.git/` only
 * what runs code or redirects git (hooks, config): objects, refs and the index stay writable so
 * `git commit` and `git checkout` work. `node_modules/.bin/` stays writable for `npm install`.
 */
export function sandboxProtectedPaths(): string[] {
  const out: string[] = [];
  for (const pattern of PROTECTED_PATHS) {
    if (pattern === ".git/") out.push(".git/hooks", ".git/config");
    // npm install writes there; the lsp family never runs an untrusted project's repo-local binaries.
    else if (pattern === "node_modules/.bin/") continue;
    else out.push(pattern.replace(/\/+$/, ""));
  }
  return out;
}

/** The root-relative git directory a `.git` file points to, when it points inside the root. */
function gitfileTarget(root: string, rel: string): string | undefined {
  try {
    // Never blocks (a FIFO named .git) and reads no more than a gitfile holds.
    const fd = openSync(
      path.join(root, rel),
      constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW,
    );
    let text = "";
    try {
      if (!fstatSync(fd).isFile()) return undefined;
      const buf = Buffer.alloc(4096);
      text = buf.toString("utf8", 0, readSync(fd, buf, 0, buf.length, 0));
    } finally {
      closeSync(fd);
    }
    const m = /^gitdir:\s*(.+?)\s*$/m.exec(text);
    if (!m) return undefined;
    const real = realpathSync(path.resolve(path.dirname(path.join(root, rel)), m[1] as string));
    const inside = path.relative(realpathSync(root), real);
    if (inside === "" || inside.startsWith("..") || path.isAbsolute(inside)) return undefined;
    return inside.split(path.sep).join("/");
  } catch {
    return undefined;
  }
}

/** The git directories of submodules (`.git/modules/a`, `.git/modules/a/modules/b`…). */
function submoduleGitDirs(root: string): string[] {
  const out: string[] = [];
  const queue = [".git/modules"];
  while (queue.length > 0 && out.length < MAX_MODULES) {
    const rel = queue.shift() as string;
    let names: string[];
    try {
      names = readdirSync(path.join(root, rel), { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name);
    } catch {
      continue;
    }
    for (const name of names) {
      const dir = `${rel}/${name}`;
      // A submodule's name may hold slashes: a directory with a HEAD is a git directory, else go on.
      let entries: string[] = [];
      try {
        entries = readdirSync(path.join(root, dir));
      } catch {
        continue;
      }
      if (entries.includes("HEAD")) {
        out.push(dir);
        if (entries.includes("modules")) queue.push(`${dir}/modules`);
      } else queue.push(dir);
    }
  }
  return out;
}

/** The layout now (see ProtectedLayout). Costs one readdir per directory, at most MAX_LAYOUT_DIRS. */
export function protectedLayout(root: string): ProtectedLayout {
  const readOnly = sandboxProtectedPaths();
  const present: string[] = [];
  const gitDir = (dir: string) => readOnly.push(`${dir}/hooks`, `${dir}/config`);
  for (const dir of submoduleGitDirs(root)) gitDir(dir);
  const queue = [""];
  let walked = 0;
  while (queue.length > 0 && walked < MAX_LAYOUT_DIRS) {
    const rel = queue.shift() as string;
    walked++;
    let entries: Dirent[];
    try {
      entries = readdirSync(path.join(root, rel), { withFileTypes: true });
    } catch {
      continue;
    }
    for (const entry of entries) {
      const child = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.name.toLowerCase() === ".git") {
        // The root's own .git is among the fixed paths; git's internals are never walked.
        if (!rel) continue;
        if (entry.isDirectory()) {
          present.push(child);
          gitDir(child);
        } else {
          // A worktree's or submodule's `.git` file: the file itself, and the directory it names.
          readOnly.push(child);
          const target = gitfileTarget(root, child);
          if (target && !target.startsWith(".git/")) gitDir(target);
        }
      } else if (entry.name.toLowerCase() === "head" && !entry.isDirectory()) {
        readOnly.push(child);
      } else if (entry.isDirectory() && entry.name !== "node_modules") {
        queue.push(child);
      }
    }
  }
  return { readOnly: [...new Set(readOnly)], present, truncated: queue.length > 0 };
}
