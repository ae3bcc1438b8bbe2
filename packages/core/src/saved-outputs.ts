import { randomBytes } from "node:crypto";
import {
  closeSync,
  constants,
  fstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  realpathSync,
  rmSync,
  type Stats,
  unlinkSync,
  writeSync,
} from "node:fs";
import path from "node:path";
import type { Limits } from "./config.js";
import { ToolbeltError } from "./errors.js";
import type { OutsideFiles } from "./paths.js";
import { alive, stateDir } from "./temp-files.js";

/**
 * The files a session keeps of command output too long for a result, so what a result could not
 * show is not lost. One private directory per session (`<state dir>/outputs/<pid>-<random>/`, mode
 * 0700, outside every root and every path a sandboxed command may write), one file per command, each
 * capped at `limits.shellOutputSavedMaxBytes` and all of them together at
 * `limits.shellOutputSavedSessionMaxBytes` (the oldest files are removed first). The directory goes
 * when the session closes, at process exit if it never does, and after a crash at the next start.
 *
 * The session's read-only tools that declare `readsSavedOutput` may name these exact files (and only
 * these: a name planted beside them, a symlink out, another session's file are refused), and an open
 * checks it reached the very file written here (same device and inode).
 */
export class SavedOutputs implements OutsideFiles {
  readonly #limits: () => Limits;
  #dir: string | undefined;
  /** Open and finished files by real path, oldest first. */
  readonly #files = new Map<string, SavedOutputFile>();
  /** Files removed to make room (or when the session closed), with why; bounded. */
  readonly #removed = new Map<string, string>();
  #total = 0;
  #counter = 0;
  #closed = false;

  constructor(limits: () => Limits) {
    this.#limits = limits;
  }

  /** Bytes of one command's output saved at most (`limits.shellOutputSavedMaxBytes`; 0: saving is off). */
  get maxBytes(): number {
    return this.#limits().shellOutputSavedMaxBytes;
  }

  /** Bytes kept in all files now. */
  get totalBytes(): number {
    return this.#total;
  }

  /**
   * A new file for one command's output, named after `label` (letters, digits, `-` and `_`). Throws
   * EUNAVAILABLE when saving is off (`limits.shellOutputSavedMaxBytes` 0), the session is closed, or
   * the directory cannot be made (the message says why).
   */
  create(label: string): SavedOutputFile {
    const limits = this.#limits();
    if (limits.shellOutputSavedMaxBytes === 0)
      throw new ToolbeltError(
        "EUNAVAILABLE",
        "saving long output is off (limits.shellOutputSavedMaxBytes is 0)",
      );
    if (this.#closed) throw new ToolbeltError("EUNAVAILABLE", "the session is closed");
    const dir = this.#directory();
    const name = `${++this.#counter}-${label.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 40)}.log`;
    const abs = path.join(dir, name);
    let fd: number;
    try {
      fd = openSync(
        abs,
        constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0),
        0o600,
      );
    } catch (error) {
      throw new ToolbeltError("EUNAVAILABLE", `cannot create ${abs}: ${(error as Error).message}`, {
        cause: error,
      });
    }
    const file = new SavedOutputFile(abs, fd, fstatSync(fd), limits.shellOutputSavedMaxBytes, this);
    this.#files.set(abs, file);
    return file;
  }

  /** Whether `abs` is one of the files (still there). */
  admits(abs: string): boolean {
    return this.#files.has(abs);
  }

  removed(abs: string): string | undefined {
    return this.#removed.get(abs);
  }

  /** Throws EPATH_ESCAPE unless `st` (an opened descriptor's) is the file written at `abs`. */
  verify(abs: string, st: Stats): void {
    const file = this.#files.get(abs);
    if (file && file.dev === st.dev && file.ino === st.ino) return;
    throw new ToolbeltError(
      "EPATH_ESCAPE",
      `${abs} is no longer the output toolbelt saved there (it was replaced); nothing was read`,
      { details: { path: abs } },
    );
  }

  /**
   * Room for `bytes` more bytes of `file`: removes the oldest other files while the session's
   * total would pass its cap. Returns how many of the bytes fit.
   */
  reserve(file: SavedOutputFile, bytes: number): number {
    const cap = this.#limits().shellOutputSavedSessionMaxBytes;
    for (const [abs, other] of this.#files) {
      if (this.#total + bytes <= cap) break;
      if (other === file) continue;
      this.#remove(
        abs,
        other,
        `${abs} was removed to keep this session's saved output under limits.shellOutputSavedSessionMaxBytes (${cap} bytes; the oldest files go first)`,
      );
    }
    const fits = Math.max(0, Math.min(bytes, cap - this.#total));
    this.#total += fits;
    return fits;
  }

  /** Gives back bytes `reserve` counted that were not written. */
  release(bytes: number): void {
    this.#total -= bytes;
  }

  /** Removes the directory and everything in it; later reads of the files are ENOENT saying so. */
  close(): void {
    this.#closed = true;
    for (const [abs, file] of this.#files)
      this.#remove(abs, file, `${abs} was removed when its session closed`);
    if (this.#dir) {
      rmSync(this.#dir, { recursive: true, force: true });
      liveDirs.delete(this.#dir);
    }
  }

  #remove(abs: string, file: SavedOutputFile, why: string): void {
    file.stop(why);
    this.#files.delete(abs);
    this.#total -= file.bytes;
    try {
      unlinkSync(abs);
    } catch {
      // Gone already.
    }
    if (this.#removed.size >= MAX_REMEMBERED)
      this.#removed.delete(this.#removed.keys().next().value as string);
    this.#removed.set(abs, why);
  }

  #directory(): string {
    if (this.#dir) return this.#dir;
    const base = outputsBase();
    try {
      mkdirSync(base, { recursive: true, mode: 0o700 });
      const dir = path.join(base, `${process.pid}-${randomBytes(6).toString("hex")}`);
      mkdirSync(dir, { mode: 0o700 });
      // The real path is what the resolver compares (a state dir reached through a symlink).
      this.#dir = realpathSync(dir);
    } catch (error) {
      throw new ToolbeltError(
        "EUNAVAILABLE",
        `cannot make a directory under ${base}: ${(error as Error).message}`,
        {
          cause: error,
        },
      );
    }
    registerLive(this.#dir);
    return this.#dir;
  }
}

/** Removed files remembered for a clear ENOENT (older ones are then just unknown paths). */
const MAX_REMEMBERED = 1024;

/** One file of saved output, written in order as the command prints. */
export class SavedOutputFile {
  readonly path: string;
  readonly dev: number;
  readonly ino: number;
  /** Bytes written. */
  bytes = 0;
  /** Why writing stopped before the output ended (a cap, the file removed, a write error). */
  stoppedBecause: string | undefined;
  #fd: number | undefined;
  readonly #max: number;
  readonly #owner: SavedOutputs;

  constructor(abs: string, fd: number, st: Stats, max: number, owner: SavedOutputs) {
    this.path = abs;
    this.#fd = fd;
    this.dev = st.dev;
    this.ino = st.ino;
    this.#max = max;
    this.#owner = owner;
  }

  /** Appends `data`; past a cap the rest is dropped and `stoppedBecause` says which cap. */
  write(data: Buffer): void {
    if (this.#fd === undefined || data.length === 0) return;
    let chunk = data;
    let why: string | undefined;
    if (chunk.length > this.#max - this.bytes) {
      chunk = chunk.subarray(0, utf8Boundary(chunk, this.#max - this.bytes));
      why = `the file reached limits.shellOutputSavedMaxBytes (${this.#max} bytes); the rest of the output was not saved`;
    }
    const fits = this.#owner.reserve(this, chunk.length);
    if (fits < chunk.length) {
      const cut = utf8Boundary(chunk, fits);
      this.#owner.release(fits - cut);
      chunk = chunk.subarray(0, cut);
      why =
        "the session's saved output reached limits.shellOutputSavedSessionMaxBytes; the rest of the output was not saved";
    }
    let done = 0;
    try {
      while (done < chunk.length) done += writeSync(this.#fd, chunk, done, chunk.length - done);
    } catch (error) {
      why = `writing it failed (${(error as Error).message}); the rest of the output was not saved`;
    }
    this.bytes += done;
    this.#owner.release(chunk.length - done);
    if (why) this.stop(why);
  }

  /** Whether more writes are taken (not ended, stopped or removed). */
  get open(): boolean {
    return this.#fd !== undefined;
  }

  /** The output ended: the file is complete (or as complete as the caps allowed). */
  end(): void {
    this.#close();
  }

  /** Stops writing, saying why (a cap, the file removed to make room, the session closing). */
  stop(why: string): void {
    if (this.#fd === undefined) return;
    this.stoppedBecause = why;
    this.#close();
  }

  #close(): void {
    if (this.#fd === undefined) return;
    const fd = this.#fd;
    this.#fd = undefined;
    try {
      closeSync(fd);
    } catch {
      // Closed is closed.
    }
  }
}

/** The largest length <= `max` that does not split a UTF-8 character of `bytes`. */
function utf8Boundary(bytes: Buffer, max: number): number {
  if (max >= bytes.length) return bytes.length;
  let cut = Math.max(0, max);
  for (let back = 0; back < 3 && cut > 0 && ((bytes[cut] as number) & 0xc0) === 0x80; back++) cut--;
  return cut;
}

// Directories of sessions not closed yet: removed at process exit if their session never closes.
const liveDirs = new Set<string>();
let exitHook = false;

function registerLive(dir: string): void {
  liveDirs.add(dir);
  if (exitHook) return;
  exitHook = true;
  process.once("exit", () => {
    for (const d of liveDirs) rmSync(d, { recursive: true, force: true });
  });
}

function outputsBase(): string {
  return path.join(stateDir(), "outputs");
}

/** Directories looked at per sweep: a flood of names left by a broken host is cleaned over several starts. */
const MAX_SWEPT = 4096;
let swept = false;

/**
 * Removes the saved output of processes that died without closing their sessions (SIGKILL, power
 * loss), once per process, at the first session's start: one readdir when there is nothing to clean.
 */
export function sweepSavedOutputs(): void {
  if (swept) return;
  swept = true;
  const base = outputsBase();
  let names: string[];
  try {
    names = readdirSync(base);
  } catch {
    return;
  }
  for (const name of names.slice(0, MAX_SWEPT)) {
    const match = /^(\d+)-[0-9a-f]+$/.exec(name);
    if (!match) continue;
    const pid = Number(match[1]);
    if (pid === process.pid || alive(pid)) continue;
    rmSync(path.join(base, name), { recursive: true, force: true });
  }
}
