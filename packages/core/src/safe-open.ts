import {
  closeSync,
  constants,
  existsSync,
  promises as fs,
  fstatSync,
  lstatSync,
  openSync,
  readlinkSync,
  realpathSync,
  statSync,
} from "node:fs";
import type { FileHandle } from "node:fs/promises";
import path from "node:path";
import { ToolbeltError } from "./errors.js";

// Node has no openat(2). On Linux, `/proc/self/fd/<dirfd>/<name>` resolves `<name>` inside the
// directory the descriptor holds, whatever its path is now: opening through it is openat() on that
// directory. A directory descriptor whose kernel path (readlink of its /proc entry) is the path we
// checked is therefore a check and an open in one act, and every later open, create, rename or
// unlink through it stays in that directory even if a name on the way is swapped for a symlink.
const PROC_FD = "/proc/self/fd";

let procFd: boolean | undefined;
/** Whether `/proc/self/fd` works here (Linux with /proc mounted). Probed once per process. */
export function hasProcFd(): boolean {
  if (procFd === undefined) {
    try {
      procFd = existsSync(PROC_FD);
    } catch {
      procFd = false;
    }
  }
  return procFd;
}

const O_DIRECTORY = constants.O_DIRECTORY ?? 0;
const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const O_NONBLOCK = constants.O_NONBLOCK ?? 0;
const O_NOCTTY = constants.O_NOCTTY ?? 0;

function swapped(what: string, expected: string, actual: string): ToolbeltError {
  return new ToolbeltError(
    "EPATH_ESCAPE",
    `${what} changed while it was being opened (a directory on the way was replaced, e.g. by a symlink); nothing was done`,
    { details: { expected, actual } },
  );
}

/**
 * A directory held open by descriptor: names under it are resolved in that very directory.
 * Without /proc (not Linux) it falls back to plain paths, which is only as safe as the resolver's check.
 */
export class DirRef {
  readonly path: string;
  readonly #handle: FileHandle | undefined;

  private constructor(dir: string, handle: FileHandle | undefined) {
    this.path = dir;
    this.#handle = handle;
  }

  /**
   * Opens `dir` (absolute, symlinks already resolved) without following a symlink in its last
   * component, and proves the descriptor is `dir` itself: a directory swapped for a symlink
   * anywhere on the way makes the kernel's path of the descriptor differ, and the open is refused.
   */
  static async open(dir: string): Promise<DirRef> {
    if (!hasProcFd()) {
      const st = await fs.stat(dir);
      if (!st.isDirectory()) throw errnoError("ENOTDIR", dir);
      return new DirRef(dir, undefined);
    }
    const handle = await openDirectory(dir, dir);
    try {
      const actual = await fs.readlink(`${PROC_FD}/${handle.fd}`);
      if (actual !== dir) throw swapped(dir, dir, actual);
    } catch (error) {
      await handle.close().catch(() => {});
      throw error;
    }
    return new DirRef(dir, handle);
  }

  /** Opens (creating when `create`) the directory `name` directly under this one, never through a symlink. */
  async child(name: string, create: boolean): Promise<DirRef> {
    checkName(name);
    const target = this.at(name);
    if (create) {
      try {
        await fs.mkdir(target);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      }
    }
    const full = path.join(this.path, name);
    if (!this.#handle) return DirRef.open(full);
    const handle = await openDirectory(target, full);
    return new DirRef(full, handle);
  }

  /** The path to use for `name` in this directory: through the descriptor when there is one. */
  at(name: string): string {
    checkName(name);
    return this.#handle ? `${PROC_FD}/${this.#handle.fd}/${name}` : path.join(this.path, name);
  }

  /** A path that lists this very directory (for readdir/opendir). */
  listPath(): string {
    return this.#handle ? `${PROC_FD}/${this.#handle.fd}` : this.path;
  }

  /** The kernel's path of this directory now (it may have been renamed since it was opened). */
  async currentPath(): Promise<string> {
    if (!this.#handle) return this.path;
    return fs.readlink(`${PROC_FD}/${this.#handle.fd}`);
  }

  /** The kernel's path of a descriptor opened under this directory, or `undefined` without /proc. */
  async pathOf(handle: FileHandle): Promise<string | undefined> {
    if (!this.#handle) return undefined;
    return fs.readlink(`${PROC_FD}/${handle.fd}`);
  }

  async sync(): Promise<void> {
    await this.#handle?.sync().catch(() => {});
  }

  async close(): Promise<void> {
    await this.#handle?.close().catch(() => {});
  }
}

/** open(O_DIRECTORY|O_NOFOLLOW); a symlink where a directory was checked is reported as a swap. */
async function openDirectory(target: string, shown: string): Promise<FileHandle> {
  try {
    return await fs.open(target, constants.O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ELOOP" || code === "ENOTDIR") {
      // A symlink there, or a directory again by now: the name changed under us. A file: a real ENOTDIR.
      const st = await fs.lstat(target).catch(() => undefined);
      if (st?.isSymbolicLink() || st?.isDirectory()) throw swapped(shown, shown, "a symbolic link");
    }
    throw error;
  }
}

function checkName(name: string): void {
  if (name === "" || name === "." || name === ".." || name.includes("/") || name.includes("\0")) {
    throw new ToolbeltError("EINVAL_INPUT", `not a single file name: ${JSON.stringify(name)}`);
  }
}

function errnoError(code: string, p: string): NodeJS.ErrnoException {
  const error = new Error(`${code}: ${p}`) as NodeJS.ErrnoException;
  error.code = code;
  return error;
}

/**
 * Opens the directory `dir` (absolute, real), creating the missing directories below the deepest
 * one that exists, each created and opened through its verified parent. `root` bounds the walk up:
 * nothing at or above it is created.
 */
export async function openDirCreating(
  dir: string,
  root: string | undefined,
  create: boolean,
): Promise<DirRef> {
  const missing: string[] = [];
  let current = dir;
  let ref: DirRef;
  for (;;) {
    try {
      ref = await DirRef.open(current);
      break;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      const parent = path.dirname(current);
      const atTop =
        parent === current || (root !== undefined && (current === root || !isBelow(root, current)));
      if (code !== "ENOENT" || !create || atTop) throw error;
      missing.push(path.basename(current));
      current = parent;
    }
  }
  try {
    for (const name of missing.reverse()) {
      const next = await ref.child(name, true);
      await ref.close();
      ref = next;
    }
  } catch (error) {
    await ref.close();
    throw error;
  }
  return ref;
}

function isBelow(root: string, p: string): boolean {
  const prefix = root.endsWith(path.sep) ? root : root + path.sep;
  return p.startsWith(prefix);
}

export interface OpenForReadOptions {
  /** The root every result must stay in (checked on the real path of the descriptor). */
  root: string;
}

/**
 * Opens the file `abs` (absolute, real: what `PathResolver` returns) for reading, so that what is
 * opened is the entry `basename(abs)` of the directory `dirname(abs)` as it is at the open — never a
 * file elsewhere reached through a symlink swapped in between the check and the open. The last
 * component is not followed either, and a FIFO opens without blocking (callers fstat the handle).
 */
export async function openForRead(abs: string, options: OpenForReadOptions): Promise<FileHandle> {
  if (!hasProcFd()) {
    if (abs === options.root) refuseRoot(abs);
    return openByPathChecked(abs, options.root, READ_FLAGS);
  }
  // The directory's open and its /proc check are the same acts as DirRef.open's, done synchronously:
  // each is a metadata syscall of a few microseconds, and three thread-pool round trips were most of
  // what a small read cost. Only the file's open stays asynchronous (a FileHandle has no sync form).
  const { dirFd, name } = checkedParent(abs, options.root);
  try {
    return await fs.open(`${PROC_FD}/${dirFd}/${name}`, READ_FLAGS);
  } finally {
    closeSync(dirFd);
  }
}

/**
 * openForRead's checks and open, synchronously, returning the bare descriptor (the caller closes it
 * with closeSync). For a caller that reads a small file at once: the same acts, without the two
 * thread-pool round trips of a FileHandle's open and close.
 */
export function openForReadSync(abs: string, options: OpenForReadOptions): number {
  if (!hasProcFd()) {
    if (abs === options.root) refuseRoot(abs);
    return openByPathCheckedSync(abs, options.root, READ_FLAGS);
  }
  const { dirFd, name } = checkedParent(abs, options.root);
  try {
    return openSync(`${PROC_FD}/${dirFd}/${name}`, READ_FLAGS);
  } finally {
    closeSync(dirFd);
  }
}

const READ_FLAGS = constants.O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY;

/** The root is a directory: EISDIR once it is shown to be one (ENOTDIR, or a swap, otherwise). */
function refuseRoot(abs: string): never {
  if (hasProcFd()) closeSync(openDirectorySync(abs));
  else if (!statSync(abs).isDirectory()) throw errnoError("ENOTDIR", abs);
  throw errnoError("EISDIR", abs);
}

/** The checked descriptor of `abs`'s directory (see openDirectorySync) and the name to open in it. */
function checkedParent(abs: string, root: string): { dirFd: number; name: string } {
  if (abs === root) refuseRoot(abs);
  const name = path.basename(abs);
  checkName(name);
  return { dirFd: openDirectorySync(path.dirname(abs)), name };
}

/** DirRef.open's checks on a bare descriptor: open(O_DIRECTORY|O_NOFOLLOW), then its kernel path is `dir`. */
function openDirectorySync(dir: string): number {
  let fd: number;
  try {
    fd = openSync(dir, constants.O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ELOOP" || code === "ENOTDIR") {
      const st = lstatSync(dir, { throwIfNoEntry: false });
      if (st?.isSymbolicLink() || st?.isDirectory()) throw swapped(dir, dir, "a symbolic link");
    }
    throw error;
  }
  try {
    const actual = readlinkSync(`${PROC_FD}/${fd}`);
    if (actual !== dir) throw swapped(dir, dir, actual);
  } catch (error) {
    closeSync(fd);
    throw error;
  }
  return fd;
}

/**
 * A directory held by a bare descriptor, for synchronous walks: listed through the descriptor, its
 * subdirectories and files opened by name inside it, never through a symlink. `open` checks the
 * descriptor as openForRead checks a parent (its kernel path is the path asked for); a child is an
 * entry of this very directory at the moment it is opened, whatever happened to the names above it.
 * Close it with `close()` (idempotent).
 *
 * Without /proc (not Linux) it holds no descriptor and uses plain paths: listing and opening a child
 * follow a name swapped for a symlink on the way (files are still opened `O_NOFOLLOW|O_NONBLOCK`), so
 * there it is only as safe as the resolver's check.
 */
export class CheckedDir {
  /** The directory's path when it was opened (a child's is its parent's path and its name). */
  readonly path: string;
  /** The descriptor; undefined without /proc, -1 once closed. */
  #fd: number | undefined;
  /** `/proc/self/fd/<fd>`, built once: every name opened under this directory starts with it. */
  #proc: string | undefined;

  private constructor(dir: string, fd: number | undefined) {
    this.path = dir;
    this.#fd = fd;
    this.#proc = fd === undefined ? undefined : `${PROC_FD}/${fd}`;
  }

  /**
   * Opens `dir` (absolute, real) checked: a symlink as its last component, or a directory on the
   * way swapped for one, is `EPATH_ESCAPE`; a missing one or a file throws the errno (`ENOENT`, `ENOTDIR`).
   */
  static open(dir: string): CheckedDir {
    if (!hasProcFd()) {
      if (!statSync(dir).isDirectory()) throw errnoError("ENOTDIR", dir);
      return new CheckedDir(dir, undefined);
    }
    return new CheckedDir(dir, openDirectorySync(dir));
  }

  /**
   * Opens the directory `name` of this one (O_DIRECTORY|O_NOFOLLOW through the descriptor). A name
   * that is a symlink (or no directory) now throws `ENOTDIR` (or `ELOOP`): it is never followed.
   */
  child(name: string): CheckedDir {
    checkName(name);
    const full = this.path.endsWith(path.sep) ? this.path + name : this.path + path.sep + name;
    if (this.#fd === undefined) return new CheckedDir(full, undefined);
    return new CheckedDir(full, openSync(this.at(name), CHILD_DIR_FLAGS));
  }

  /**
   * Opens the file `name` of this one for reading, `O_NOFOLLOW|O_NONBLOCK|O_NOCTTY`: a symlink is
   * refused (`ELOOP`) and a FIFO opens without blocking. Returns the bare descriptor; the caller
   * fstats it (only a regular file is content) and closes it with closeSync.
   */
  openFile(name: string): number {
    checkName(name);
    return openSync(this.at(name), READ_FLAGS);
  }

  /**
   * A path naming `name` in this very directory (a relative path below it is resolved from there,
   * following symlinks on the way: for stat, not for opening content).
   */
  at(name: string): string {
    return this.#fd === undefined ? path.join(this.path, name) : `${this.listPath()}/${name}`;
  }

  /** A path that lists this very directory (readdir of it), whatever its name points to now. */
  listPath(): string {
    if (this.#proc === undefined) return this.path;
    if (this.#fd === -1) throw new Error(`CheckedDir used after close: ${this.path}`);
    return this.#proc;
  }

  close(): void {
    const fd = this.#fd;
    if (fd === undefined || fd === -1) return;
    this.#fd = -1;
    closeSync(fd);
  }
}

const CHILD_DIR_FLAGS = constants.O_RDONLY | O_DIRECTORY | O_NOFOLLOW;

// Without /proc: open, then check that the descriptor's file is the one the real path inside the
// root names now. A race can still turn this into a refusal, and, narrowly, into a read elsewhere.
async function openByPathChecked(abs: string, root: string, flags: number): Promise<FileHandle> {
  const handle = await fs.open(abs, flags);
  try {
    const real = realpathSync(abs);
    const [a, b] = await Promise.all([handle.stat(), fs.stat(real)]);
    if ((real !== root && !isBelow(root, real)) || a.ino !== b.ino || a.dev !== b.dev)
      throw swapped(abs, abs, real);
    return handle;
  } catch (error) {
    await handle.close().catch(() => {});
    throw error;
  }
}

// openByPathChecked's checks, synchronously (see openForReadSync).
function openByPathCheckedSync(abs: string, root: string, flags: number): number {
  const fd = openSync(abs, flags);
  try {
    const real = realpathSync(abs);
    const a = fstatSync(fd);
    const b = statSync(real);
    if ((real !== root && !isBelow(root, real)) || a.ino !== b.ino || a.dev !== b.dev)
      throw swapped(abs, abs, real);
    return fd;
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}
