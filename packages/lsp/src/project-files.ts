import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  openSync,
  readlinkSync,
  realpathSync,
  type Stats,
  statSync,
} from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { type ResolvedPath, ToolbeltError } from "@toolbelt/core";
import { openForRead, PathResolver, readDescriptorBounded, readHandleBounded } from "@toolbelt/core/internal";

/**
 * How the lsp family reads a project file: only when its real path is inside the root, through core's
 * checked open (the path check and the open are one act, the last component is not followed, a FIFO
 * does not block), only a regular file, and never more than a bound.
 */
export interface ProjectFiles {
  /** The root, symlinks resolved. */
  readonly root: string;
  /** The most bytes one file may have to be read whole (`limits.fileMaxBytes`). */
  readonly maxBytes: number;
  /** `abs` resolved (symlinks included) when its real path is inside the root; undefined otherwise. */
  inside(abs: string): ResolvedPath | undefined;
  /** Core's checked open of a file inside the root (EPATH_ESCAPE when its real path leaves it). */
  open(abs: string): Promise<FileHandle>;
  /** The same, synchronously: a bare descriptor the caller closes. */
  openSync(abs: string): number;
}

/** What a session offers for opening files (Session.openFile / openFileSync), and its limits. */
export interface FileOpener {
  openFile?(abs: string): Promise<FileHandle>;
  openFileSync?(abs: string): number;
  readonly config?: { limits: { fileMaxBytes: number } };
}

/** limits.fileMaxBytes' default, for a manager used without a session. */
const DEFAULT_MAX_BYTES = 64 * 1024 * 1024;

/**
 * The project files of `root`: opened through the session's checked open when there is a session
 * (`opener`), through core's openForRead over a resolver of the root's own otherwise. Either way the
 * root's own resolver is asked first, so a session since switched to another root refuses too.
 */
export function projectFiles(root: string, opener: FileOpener = {}): ProjectFiles {
  const resolver = new PathResolver(root);
  const real = (abs: string): string => resolver.resolve(abs).abs;
  return {
    root: resolver.root,
    get maxBytes() {
      return opener.config?.limits.fileMaxBytes ?? DEFAULT_MAX_BYTES;
    },
    inside(abs) {
      try {
        return resolver.resolve(abs);
      } catch {
        // Leaves the root (EPATH_ESCAPE), or cannot be resolved at all: either way not a project file.
        return undefined;
      }
    },
    open(abs) {
      const target = real(abs);
      return opener.openFile ? opener.openFile(target) : openForRead(target, { root: resolver.root });
    },
    openSync(abs) {
      const target = real(abs);
      return opener.openFileSync ? opener.openFileSync(target) : openCheckedSync(target, resolver.root);
    },
  };
}

const READ_FLAGS =
  constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0) | (constants.O_NOCTTY ?? 0);

let procFd: boolean | undefined;

/**
 * For the lsp package used without a session (whose Session.openFileSync is core's checked open):
 * opens the real path `abs` without following its last component and without blocking, then proves
 * the descriptor is that very file — its kernel path (or, without /proc, its inode) is the one
 * checked inside the root — so a directory on the way swapped for a symlink meanwhile is refused.
 */
function openCheckedSync(abs: string, root: string): number {
  const fd = openSync(abs, READ_FLAGS);
  try {
    procFd ??= existsSync("/proc/self/fd");
    let same: boolean;
    if (procFd) same = readlinkSync(`/proc/self/fd/${fd}`) === abs;
    else {
      const now = realpathSync(abs);
      const a = fstatSync(fd);
      const b = statSync(now);
      same = now === abs && a.ino === b.ino && a.dev === b.dev;
    }
    const prefix = root.endsWith("/") ? root : `${root}/`;
    if (!same || !abs.startsWith(prefix))
      throw new ToolbeltError(
        "EPATH_ESCAPE",
        `${abs} changed while it was being opened (a directory on the way was replaced); nothing was read`,
      );
    return fd;
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

/** A file's text as read: `complete` is false when only its first `max` bytes were taken. */
export type FileText = { text: string; stat: Stats; complete: boolean };

function notRegular(rel: string): ToolbeltError {
  return new ToolbeltError("EINVAL_INPUT", `${rel} is not a regular file`, { details: { path: rel } });
}

function tooLarge(rel: string, size: number, max: number): ToolbeltError {
  return new ToolbeltError(
    "ETOO_LARGE",
    `${rel} is ${size} bytes, over the ${max}-byte file size limit (limits.fileMaxBytes)`,
    { details: { path: rel, bytes: size, limit: max } },
  );
}

/**
 * The text of an open file: a regular file only (EINVAL_INPUT otherwise), at most `max` bytes —
 * a larger one is ETOO_LARGE, or with `prefix` its first `max` bytes (`complete: false`).
 */
export async function readOpenFile(
  handle: FileHandle,
  rel: string,
  max: number,
  options: { prefix?: boolean } = {},
): Promise<FileText> {
  const stat = await handle.stat();
  if (!stat.isFile()) throw notRegular(rel);
  if (stat.size > max && !options.prefix) throw tooLarge(rel, stat.size, max);
  const bytes = await readHandleBounded(handle, max, stat.size);
  // It may have grown since the stat: what was read decides.
  if (bytes.length > max) {
    if (!options.prefix) throw tooLarge(rel, bytes.length, max);
    return { text: bytes.subarray(0, max).toString("utf8"), stat, complete: false };
  }
  return { text: bytes.toString("utf8"), stat, complete: true };
}

/** Opens `abs` through `open` (a checked open) and reads it as readOpenFile does. */
export async function readProjectFile(
  open: (abs: string) => Promise<FileHandle>,
  abs: string,
  rel: string,
  max: number,
  options: { prefix?: boolean } = {},
): Promise<FileText> {
  const handle = await open(abs);
  try {
    return await readOpenFile(handle, rel, max, options);
  } finally {
    await handle.close();
  }
}

/**
 * readProjectFile synchronously, whole files only: undefined for anything that is not a regular file
 * within `files.maxBytes`.
 */
export function readProjectFileSync(files: ProjectFiles, abs: string): string | undefined {
  const fd = files.openSync(abs);
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile() || stat.size > files.maxBytes) return undefined;
    const bytes = readDescriptorBounded(fd, files.maxBytes, stat.size);
    if (bytes.length > files.maxBytes) return undefined;
    return bytes.toString("utf8");
  } finally {
    closeSync(fd);
  }
}
