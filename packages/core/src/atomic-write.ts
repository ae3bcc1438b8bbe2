import { constants, promises as fs } from "node:fs";
import path from "node:path";
import { ToolbeltError } from "./errors.js";
import { type DirRef, openDirCreating } from "./safe-open.js";
import { markLive, recordTempDir, sweepOnFirstWrite, tempName } from "./temp-files.js";

export interface AtomicWriteOptions {
  /** File mode for a new file; an existing file keeps its own mode. */
  mode?: number;
  /** Create missing parent directories (default true). */
  mkdirs?: boolean;
  /**
   * The root the write must stay in. With it, `abs` must be a real path (as `PathResolver` gives
   * it): the parent directory is opened and proven to be exactly `dirname(abs)`, and nothing at or
   * above the root is created.
   */
  root?: string;
}

export interface AtomicWriteResult {
  created: boolean;
  bytes: number;
}

const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0;

/**
 * Writes through a temporary file in the same directory, fsyncs it and renames it over the target,
 * so a crash at any point leaves the old file or the new one, never a torn one. The directory is
 * held open by descriptor from the check to the rename (see safe-open.ts): the temp file is created
 * exclusively in it and the rename lands in it, even if a name on the way is swapped for a symlink.
 */
export async function writeFileAtomic(
  abs: string,
  data: string | Uint8Array,
  options: AtomicWriteOptions = {},
): Promise<AtomicWriteResult> {
  return (await prepareFileAtomic(abs, data, options)).commit();
}

/** A write whose new content is durable in its temp file; nothing is visible until `commit`. */
export interface PreparedWrite {
  /** Renames the temp file over the target and syncs the directory. */
  commit(): Promise<AtomicWriteResult>;
  /** Removes the temp file; the target is untouched. */
  abort(): Promise<void>;
}

/**
 * The first half of writeFileAtomic: the temp file is created, written and fsynced in the held
 * directory. Split out so a caller can make the new content durable while it does other durable
 * work (the checkpoint record) and rename only once both are done.
 */
export async function prepareFileAtomic(
  abs: string,
  data: string | Uint8Array,
  options: AtomicWriteOptions = {},
): Promise<PreparedWrite> {
  const base = path.basename(abs);
  // Without a root the caller may pass a path through symlinks; the directory is proven against its real path.
  const parent = options.root ? path.dirname(abs) : await realOrSame(path.dirname(abs));
  const dir = await openDirCreating(parent, options.root, options.mkdirs !== false);
  let staged: { tmp: string; tmpAbs: string; result: AtomicWriteResult };
  try {
    staged = await stageIn(dir, base, data, options);
  } catch (error) {
    await dir.close();
    throw error;
  }
  const { tmp, tmpAbs, result } = staged;
  let settled = false;
  const settle = async (fn: () => Promise<void>) => {
    if (settled) throw new Error("a prepared write is committed or aborted once");
    settled = true;
    try {
      await fn();
    } finally {
      markLive(tmpAbs, false);
      await dir.close();
    }
  };
  return {
    commit: async () => {
      await settle(async () => {
        try {
          await fs.rename(dir.at(tmp), dir.at(base));
        } catch (error) {
          await fs.unlink(dir.at(tmp)).catch(() => {});
          throw error;
        }
        // The rename is durable only once the directory is.
        await dir.sync();
      });
      return result;
    },
    abort: () => settle(() => fs.unlink(dir.at(tmp)).catch(() => {})),
  };
}

async function stageIn(
  dir: DirRef,
  base: string,
  data: string | Uint8Array,
  options: AtomicWriteOptions,
): Promise<{ tmp: string; tmpAbs: string; result: AtomicWriteResult }> {
  await sweepOnFirstWrite(dir);
  let mode = options.mode ?? 0o644;
  let created = true;
  try {
    // lstat: the name itself is replaced by the rename, a symlink there included, never followed.
    const st = await fs.lstat(dir.at(base));
    if (st.isDirectory()) {
      const error = new Error(`${path.join(dir.path, base)} is a directory`) as NodeJS.ErrnoException;
      error.code = "EISDIR";
      throw error;
    }
    if (st.isFile()) mode = st.mode & 0o7777;
    created = false;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data;
  const tmp = tempName(base);
  const tmpAbs = path.join(dir.path, tmp);
  await recordTempDir(dir.path);
  markLive(tmpAbs, true);
  try {
    const handle = await fs.open(
      dir.at(tmp),
      constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY | O_NOFOLLOW,
      mode,
    );
    try {
      // The temp file must be where the directory was proven to be; a rename of the directory
      // since (it is held, not locked) is caught here, before any byte is written.
      const where = await dir.pathOf(handle);
      if (where !== undefined && where !== tmpAbs) {
        throw new ToolbeltError(
          "EPATH_ESCAPE",
          `${dir.path} moved while writing ${base}; nothing was written`,
          { details: { expected: tmpAbs, actual: where } },
        );
      }
      await handle.writeFile(bytes);
      await handle.chmod(mode);
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch (error) {
    await fs.unlink(dir.at(tmp)).catch(() => {});
    markLive(tmpAbs, false);
    throw error;
  }
  return { tmp, tmpAbs, result: { created, bytes: bytes.byteLength } };
}

async function realOrSame(p: string): Promise<string> {
  try {
    return await fs.realpath(p);
  } catch {
    return p;
  }
}

/** Removes the file `abs` through its verified directory (see writeFileAtomic); a missing file is fine. */
export async function removeFileAt(abs: string, root?: string): Promise<boolean> {
  let dir: DirRef;
  try {
    dir = await openDirCreating(path.dirname(abs), root, false);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw error;
  }
  try {
    await fs.unlink(dir.at(path.basename(abs)));
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw error;
  } finally {
    await dir.close();
  }
}

/** Serialises work per key (an absolute path): concurrent edits of one file run one after another. */
export class KeyedLock {
  readonly #tails = new Map<string, Promise<unknown>>();

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    const next = previous.then(fn, fn);
    const tail = next.catch(() => {});
    this.#tails.set(key, tail);
    try {
      return await next;
    } finally {
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    }
  }
}
