import { promises as fs } from "node:fs";
import { ToolbeltError } from "./errors.js";

/** The limits a write's size is held to (see docs/configuration.md, "Write sizes"). */
export interface WriteSizeLimits {
  /** What one call may send: a new file's whole content, or how much a rewrite grows a file by. */
  fileWriteMaxBytes: number;
  /** No file is written larger than this, however it got there. */
  fileMaxBytes: number;
}

/**
 * The size rule of the core write path. `fileWriteMaxBytes` is about what a caller sends, not
 * about the file: a write within it always passes (up to `fileMaxBytes`); past it, only the rewrite
 * of an existing regular file that grows it by at most `fileWriteMaxBytes` does — a small edit to a
 * 3 MiB file — and never past `fileMaxBytes`. Tools that take whole contents from the model
 * (write_file) hold those contents to `fileWriteMaxBytes` themselves.
 */
export async function checkWriteSize(
  who: string,
  target: { abs: string; rel: string },
  bytes: number,
  limits: WriteSizeLimits,
): Promise<void> {
  const max = limits.fileWriteMaxBytes;
  const hard = Math.max(limits.fileMaxBytes, max);
  if (bytes <= max) return;
  if (bytes > hard) {
    throw new ToolbeltError(
      "ETOO_LARGE",
      `${who}: ${target.rel} would be ${bytes} bytes, over the ${hard}-byte file size limit (limits.fileMaxBytes); not written`,
      { details: { path: target.rel, size: bytes, limit: hard } },
    );
  }
  // lstat: the resolver already gave the real path; a leaf symlink is no existing file to grow.
  const existing = await fs.lstat(target.abs).catch(() => undefined);
  const before = existing?.isFile() ? existing.size : 0;
  if (bytes - before <= max) return;
  throw new ToolbeltError(
    "ETOO_LARGE",
    before > 0
      ? `${who}: ${target.rel} would grow from ${before} to ${bytes} bytes, more than the ${max}-byte write limit (limits.fileWriteMaxBytes); not written`
      : `${who}: ${target.rel} would be ${bytes} bytes, over the ${max}-byte write limit (limits.fileWriteMaxBytes); not written`,
    { details: { path: target.rel, size: bytes, limit: max } },
  );
}
