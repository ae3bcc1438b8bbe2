import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { ToolbeltError } from "./errors.js";
import { PathResolver } from "./paths.js";
import { openForReadSync } from "./safe-open.js";

// Files of a checkout that toolbelt reads on its own, outside any tool call — a project's AGENTS.md,
// its skills, its configs/app.json and .mcp.json — are as hostile as anything a tool is asked to read:
// a symlink to a secret, a FIFO (an open or a read that never returns), /dev/zero or a sparse
// terabyte. These two readers are the one way to read such a file: by descriptor, without blocking,
// only a regular file, and never more than a stated number of bytes.

/** The largest JSON config file read (configs/app.json, .mcp.json, the user's config and trust list). */
export const MAX_CONFIG_BYTES = 1024 * 1024;

export interface BoundedReadOptions {
  /** Read at most this many bytes; a larger file comes back `truncated`. */
  maxBytes: number;
}

export interface BoundedFile {
  /** What was read: the whole file, or its first `maxBytes` bytes when `truncated`. */
  bytes: Buffer;
  /** The file's size (fstat of the open descriptor). */
  size: number;
  /** The file held more than `maxBytes` bytes when it was read. */
  truncated: boolean;
  /** The path that was opened (for `readFileInRoot`, its real path inside the root). */
  path: string;
}

/** Why a bounded read refused a file, in `details.reason` of the error it throws. */
export type BoundedReadRefusal = "missing" | "outside_root" | "not_regular";

// Node opens every descriptor close-on-exec itself.
const USER_FILE_FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOCTTY ?? 0);

/**
 * Reads `file` (relative to `root`, or absolute) only if its real path stays inside `root`: every
 * symlink on the way is resolved and judged first, then the file is opened through core's checked
 * open (its parent directory held and verified by descriptor, the last component not followed, no
 * blocking), and read only if fstat says it is a regular file, at most `maxBytes` bytes of it.
 * Throws a ToolbeltError: `EPATH_ESCAPE` (reason `outside_root`) for a path or symlink leaving the
 * root, `ENOENT` (`missing`, also for a dangling symlink), `EINVAL_INPUT` (`not_regular`) for a
 * FIFO, device, socket or directory.
 */
export function readFileInRoot(root: string, file: string, options: BoundedReadOptions): BoundedFile {
  const resolver = new PathResolver(root);
  let target: ReturnType<PathResolver["resolve"]>;
  try {
    target = resolver.resolve(file);
  } catch (error) {
    if (ToolbeltError.isInstance(error) && error.code === "EPATH_ESCAPE")
      throw new ToolbeltError(
        "EPATH_ESCAPE",
        `${file} points outside ${resolver.root} (a symbolic link or a path leaving it)`,
        { cause: error, details: { path: file, reason: "outside_root" satisfies BoundedReadRefusal } },
      );
    throw error;
  }
  if (!target.exists) throw missing(file);
  let fd: number;
  try {
    fd = openForReadSync(target.abs, { root: resolver.root });
  } catch (error) {
    throw openError(error, file);
  }
  try {
    return readOpen(fd, file, target.abs, options.maxBytes);
  } finally {
    closeSync(fd);
  }
}

/**
 * Reads a file the user owns (their config folder, a `--config` they named): symlinks are followed,
 * as the user may keep such files anywhere, but the open never blocks, only a regular file is read,
 * and at most `maxBytes` bytes of it. Errors as `readFileInRoot`'s (no `outside_root`).
 */
export function readRegularFile(file: string, options: BoundedReadOptions): BoundedFile {
  let fd: number;
  try {
    fd = openSync(file, USER_FILE_FLAGS);
  } catch (error) {
    throw openError(error, file);
  }
  try {
    return readOpen(fd, file, file, options.maxBytes);
  } finally {
    closeSync(fd);
  }
}

function missing(file: string, cause?: unknown): ToolbeltError {
  return new ToolbeltError("ENOENT", `${file} does not exist`, {
    ...(cause === undefined ? {} : { cause }),
    details: { path: file, reason: "missing" satisfies BoundedReadRefusal },
  });
}

function openError(error: unknown, file: string): unknown {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "ENOENT") return missing(file, error);
  // O_NOFOLLOW met a symlink: the name was swapped for one after it was judged.
  if (code === "ELOOP")
    return new ToolbeltError("EPATH_ESCAPE", `${file} became a symbolic link while it was opened`, {
      cause: error,
      details: { path: file, reason: "outside_root" satisfies BoundedReadRefusal },
    });
  return error;
}

function kindOf(st: Stats): string {
  if (st.isDirectory()) return "a directory";
  if (st.isFIFO()) return "a FIFO";
  if (st.isCharacterDevice()) return "a character device";
  if (st.isBlockDevice()) return "a block device";
  if (st.isSocket()) return "a socket";
  return "not a regular file";
}

/** fstat says regular, then reads from offset 0 until EOF or `maxBytes + 1` bytes, whichever first. */
function readOpen(fd: number, shown: string, opened: string, maxBytes: number): BoundedFile {
  const st = fstatSync(fd);
  if (!st.isFile())
    throw new ToolbeltError("EINVAL_INPUT", `${shown} is ${kindOf(st)}, not a regular file`, {
      details: { path: shown, reason: "not_regular" satisfies BoundedReadRefusal },
    });
  const read = readDescriptorBounded(fd, maxBytes, st.size);
  const truncated = read.length > maxBytes;
  return {
    bytes: truncated ? read.subarray(0, maxBytes) : read,
    size: st.size,
    truncated,
    path: opened,
  };
}

/**
 * Reads an open descriptor from offset 0 until its end or `maxBytes + 1` bytes, whichever comes
 * first: more than `maxBytes` bytes back means the file is larger than the bound (or grew since it
 * was measured). The buffer starts at `sizeHint` (an fstat's size) and grows only while the file
 * keeps giving bytes, so a file that lies about its size costs no more than the bound. The caller
 * checks the file type first (a FIFO would give bytes for as long as its writer writes).
 */
export function readDescriptorBounded(fd: number, maxBytes: number, sizeHint = 0): Buffer {
  const limit = maxBytes + 1;
  let buffer: Buffer = Buffer.allocUnsafe(Math.max(1, Math.min(sizeHint + 1, limit)));
  let filled = 0;
  for (;;) {
    if (filled === buffer.length) {
      if (buffer.length >= limit) break;
      buffer = grown(buffer, filled, limit);
    }
    const got = readSync(fd, buffer, filled, buffer.length - filled, filled);
    if (got === 0) break;
    filled += got;
  }
  return buffer.subarray(0, filled);
}

/** readDescriptorBounded for a FileHandle. */
export async function readHandleBounded(handle: FileHandle, maxBytes: number, sizeHint = 0): Promise<Buffer> {
  const limit = maxBytes + 1;
  let buffer: Buffer = Buffer.allocUnsafe(Math.max(1, Math.min(sizeHint + 1, limit)));
  let filled = 0;
  for (;;) {
    if (filled === buffer.length) {
      if (buffer.length >= limit) break;
      buffer = grown(buffer, filled, limit);
    }
    const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return buffer.subarray(0, filled);
}

function grown(buffer: Buffer, filled: number, limit: number): Buffer {
  const larger = Buffer.allocUnsafe(Math.min(buffer.length * 2, limit));
  buffer.copy(larger, 0, 0, filled);
  return larger;
}

/**
 * A web stream's bytes (a fetch body, a Blob's stream), or undefined once they pass `maxBytes`: the
 * rest is not read and the stream is cancelled, so an endless or huge body costs no more than the bound.
 */
export async function readStreamBounded(
  stream: ReadableStream<Uint8Array>,
  maxBytes: number,
): Promise<Buffer | undefined> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}
