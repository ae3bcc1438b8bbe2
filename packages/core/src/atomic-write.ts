import { randomBytes } from "node:crypto";
import { constants, promises as fs } from "node:fs";
import path from "node:path";

export interface AtomicWriteOptions {
  /** File mode for a new file; an existing file keeps its own mode. */
  mode?: number;
  /** Create missing parent directories (default true). */
  mkdirs?: boolean;
}

export interface AtomicWriteResult {
  created: boolean;
  bytes: number;
}

/**
 * Writes through a temporary file in the same directory, fsyncs it and renames it over the target,
 * so a crash at any point leaves the old file or the new one, never a torn one.
 */
export async function writeFileAtomic(
  abs: string,
  data: string | Uint8Array,
  options: AtomicWriteOptions = {},
): Promise<AtomicWriteResult> {
  const dir = path.dirname(abs);
  if (options.mkdirs !== false) await fs.mkdir(dir, { recursive: true });
  let mode = options.mode ?? 0o644;
  let created = true;
  try {
    const st = await fs.stat(abs);
    if (st.isDirectory()) {
      const error = new Error(`${abs} is a directory`) as NodeJS.ErrnoException;
      error.code = "EISDIR";
      throw error;
    }
    mode = st.mode & 0o7777;
    created = false;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data;
  const tmp = path.join(dir, `.${path.basename(abs)}.${randomBytes(6).toString("hex")}.tbtmp`);
  const handle = await fs.open(tmp, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, mode);
  try {
    await handle.writeFile(bytes);
    await handle.chmod(mode);
    await handle.sync();
  } catch (error) {
    await handle.close().catch(() => {});
    await fs.rm(tmp, { force: true });
    throw error;
  }
  await handle.close();
  try {
    await fs.rename(tmp, abs);
  } catch (error) {
    await fs.rm(tmp, { force: true });
    throw error;
  }
  return { created, bytes: bytes.byteLength };
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
