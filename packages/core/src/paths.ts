import { lstatSync, readlinkSync, realpathSync } from "node:fs";
import path from "node:path";
import { ToolbeltError } from "./errors.js";

export interface ResolvedPath {
  /** Absolute path with every symlink resolved (the part that does not exist yet appended as written). */
  abs: string;
  /** Path relative to the root, with `/` separators; `.` for the root itself. */
  rel: string;
  /** Whether the path exists now. */
  exists: boolean;
  /**
   * Set for a file outside the root that the caller admitted read-only (a session's saved command
   * output, see `OutsideFiles`); `rel` is then the absolute path.
   */
  outside?: true;
}

/**
 * Files outside the root one caller may read: exact real paths, never a directory or what lies
 * beneath one (a session's saved command output, see saved-outputs.ts).
 */
export interface OutsideFiles {
  /** Whether `abs` (real) is one of the files. */
  admits(abs: string): boolean;
  /** Why `abs` (real) is no longer there when it was one of the files, else undefined. */
  removed(abs: string): string | undefined;
}

const MAX_SYMLINK_HOPS = 40;

function isInside(root: string, candidate: string): boolean {
  if (candidate === root) return true;
  const prefix = root.endsWith(path.sep) ? root : root + path.sep;
  return candidate.startsWith(prefix);
}

function realpathOrUndefined(absolute: string): string | undefined {
  try {
    return realpathSync.native(absolute);
  } catch {
    return undefined;
  }
}

/**
 * Resolves every symlink along `absolute`, component by component, so that a path whose tail
 * does not exist yet is still judged by where its existing parents really are.
 */
function resolveLenient(absolute: string): { real: string; exists: boolean } {
  // Most paths exist and hold no symlink: then one realpath(3) in C says so, and the walk below
  // (one lstat per component, each building a Stats object) would return `absolute` unchanged.
  // Any other answer (a symlink on the way, a missing tail, an error) takes the walk, whose result
  // and errors are the ones callers know.
  if (realpathOrUndefined(absolute) === absolute) return { real: absolute, exists: true };
  let pending = absolute.split(path.sep).filter(Boolean);
  let current: string = path.sep;
  let hops = 0;
  while (pending.length > 0) {
    const part = pending[0] as string;
    pending = pending.slice(1);
    const next = path.join(current, part);
    let isLink = false;
    try {
      isLink = lstatSync(next).isSymbolicLink();
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") {
        return { real: path.join(next, ...pending), exists: false };
      }
      if (code === "ENAMETOOLONG") {
        throw new ToolbeltError("EINVAL_INPUT", `path component too long: ${part.slice(0, 40)}…`, {
          cause: error,
        });
      }
      throw error;
    }
    if (!isLink) {
      current = next;
      continue;
    }
    hops += 1;
    if (hops > MAX_SYMLINK_HOPS) {
      throw new ToolbeltError("EPATH_ESCAPE", `too many symbolic links while resolving ${absolute}`);
    }
    let target: string;
    try {
      target = readlinkSync(next);
    } catch (error) {
      // A symlink swapped for a directory between the lstat and the readlink: look at it again.
      if ((error as NodeJS.ErrnoException).code !== "EINVAL") throw error;
      pending = [part, ...pending];
      continue;
    }
    const resolved = path.resolve(current, target);
    pending = [...resolved.split(path.sep).filter(Boolean), ...pending];
    current = path.sep;
  }
  return { real: current, exists: true };
}

/** Resolves paths inside one root. The one resolver every family uses. */
export class PathResolver {
  /** The root with symlinks resolved. */
  readonly root: string;

  constructor(root: string) {
    try {
      this.root = realpathSync(path.resolve(root));
    } catch (error) {
      throw new ToolbeltError("ENOENT", `root does not exist: ${root}`, { cause: error });
    }
  }

  /**
   * Resolves `input` (relative to `cwd`, itself inside the root) and refuses with EPATH_ESCAPE
   * anything that leaves the root: `..`, absolute paths elsewhere, symlinks pointing out (also
   * dangling ones and symlinked parents of files not created yet), NUL bytes. `outside` admits its
   * files (judged on the real path too, so a symlink to one of them is one of them, and a symlink
   * beside them to anywhere else is refused); only read-only callers pass it.
   */
  resolve(input: string, cwd: string = this.root, outside?: OutsideFiles): ResolvedPath {
    if (typeof input !== "string") throw new ToolbeltError("EINVAL_INPUT", "path must be a string");
    if (input.includes("\0")) {
      throw new ToolbeltError("EPATH_ESCAPE", "path contains a NUL byte", { details: { path: input } });
    }
    const lexical = path.resolve(cwd, input === "" ? "." : input);
    const { real, exists } = resolveLenient(lexical);
    if (!isInside(this.root, real)) {
      if (outside?.admits(real)) return { abs: real, rel: real, exists, outside: true };
      const removed = outside?.removed(real);
      if (removed) throw new ToolbeltError("ENOENT", removed, { details: { path: input } });
      throw new ToolbeltError("EPATH_ESCAPE", `path escapes the project root: ${input}`, {
        details: { path: input },
      });
    }
    return { abs: real, rel: this.relative(real), exists };
  }

  /** Root-relative display form of an absolute path already inside the root. */
  relative(abs: string): string {
    const rel = path.relative(this.root, abs);
    return rel === "" ? "." : rel.split(path.sep).join("/");
  }

  contains(abs: string): boolean {
    return isInside(this.root, abs);
  }
}
