import type { FileHandle } from "node:fs/promises";
import {
  type AtomicWriteOptions,
  type AtomicWriteResult,
  type PreparedWrite,
  prepareFileAtomic,
  removeFileAt,
  writeFileAtomic,
} from "./atomic-write.js";
import type { CheckpointRecorder, RecordedFile } from "./checkpoints.js";
import { normaliseError, ToolbeltError } from "./errors.js";
import type { ReadLedger } from "./ledger.js";
import type { WriteDiagnostics } from "./write-diagnostics.js";

/**
 * One file of a multi-file write: new content, or removal. `before` is what the caller read of the
 * file under its lock (an edit): the transaction still checks the file holds exactly those bytes at
 * write time, but need not read them into memory again.
 */
export type FileChange =
  | { abs: string; data: string | Uint8Array; before?: Uint8Array | undefined }
  | { abs: string; remove: true };

export interface WriteFilesOptions extends AtomicWriteOptions {}

export interface TransactionResult extends AtomicWriteResult {
  /** Root-relative path of the file. */
  path: string;
  /** Set for a removal: whether a file was there to remove. */
  removed?: boolean;
  notes: string[];
  /** The new diagnostics of the written file, when an afterWrite hook checked it. */
  diagnostics?: WriteDiagnostics;
}

/** What the afterWrite hooks are told about one written file, and what they add to its result. */
export interface AfterWriteInput {
  abs: string;
  rel: string;
  created: boolean;
  before: Uint8Array | undefined;
}

/** What the session lends a transaction: its checks, its root, its ledger and hooks, its recorder. */
export interface TransactionEnv {
  root: string;
  /** The session's write checks for one file (root, limits, allowlist, rules, protected paths, approvals). */
  check(abs: string, bytes: number): Promise<{ abs: string; rel: string }>;
  openFile(abs: string): Promise<FileHandle>;
  ledger: ReadLedger;
  /** afterWrite hooks, run once every file is written. */
  after(file: AfterWriteInput): Promise<Pick<TransactionResult, "notes" | "diagnostics">>;
  /** Records the call's before/after images before anything is written; absent when checkpoints are off. */
  recorder: CheckpointRecorder | undefined;
  call: string | undefined;
  tool: string;
  /** For the writes of a restore: the checkpoint restored to. */
  restoreOf?: string;
}

type Planned = {
  abs: string;
  rel: string;
  after: Uint8Array | undefined;
  before: Uint8Array | undefined;
  /** The before-image was not kept (too large, unreadable): it can be neither recorded nor put back. */
  notKept: "too_large" | "unknown" | undefined;
  /** What the caller says it read, checked against the file before it is used. */
  expected: Uint8Array | undefined;
};

function bytesOf(change: FileChange): Uint8Array | undefined {
  if ("remove" in change) return undefined;
  return typeof change.data === "string" ? Buffer.from(change.data, "utf8") : change.data;
}

const COMPARE_CHUNK = 256 * 1024;

/** Whether the open file holds exactly `expected`, read a chunk at a time (no second copy of a large file). */
async function holdsExactly(handle: FileHandle, expected: Uint8Array): Promise<boolean> {
  const chunk = Buffer.allocUnsafe(Math.min(COMPARE_CHUNK, Math.max(1, expected.byteLength)));
  const want = Buffer.from(expected.buffer, expected.byteOffset, expected.byteLength);
  let at = 0;
  for (;;) {
    const { bytesRead } = await handle.read(chunk, 0, chunk.length, at);
    if (bytesRead === 0) return at === expected.byteLength;
    if (at + bytesRead > expected.byteLength) return false;
    if (!chunk.subarray(0, bytesRead).equals(want.subarray(at, at + bytesRead))) return false;
    at += bytesRead;
  }
}

async function readBefore(
  env: TransactionEnv,
  abs: string,
  keepMax: number,
  expected?: Uint8Array,
): Promise<{ before: Uint8Array | undefined; notKept?: "too_large" | "unknown" }> {
  let handle: FileHandle;
  try {
    handle = await env.openFile(abs);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { before: undefined };
    // A symlink or special file in the way (the rename replaces the name), or a file we may write but
    // not read: the write itself decides; its earlier content is just not recorded.
    return { before: undefined, notKept: "unknown" };
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) return { before: undefined, notKept: "unknown" };
    if (st.size > keepMax) return { before: undefined, notKept: "too_large" };
    // What the caller read is the before-image only if the file still holds it, byte for byte.
    if (expected && st.size === expected.byteLength && (await holdsExactly(handle, expected)))
      return { before: expected };
    const read = await handle.readFile();
    return { before: new Uint8Array(read.buffer, read.byteOffset, read.byteLength) };
  } catch {
    return { before: undefined, notKept: "unknown" };
  } finally {
    await handle.close();
  }
}

/** Bytes of a before-image kept in memory to roll back a failed write (limits.fileMaxBytes is 64 MiB). */
const ROLLBACK_KEEP_BYTES = 64 * 1024 * 1024;

/**
 * Writes several files as one act: every file passes the session's checks first (nothing is
 * written if one is refused), the call's before- and after-images are recorded (fsynced) in the
 * checkpoint store, then each file is written atomically. If a write fails, the files already
 * written are put back to their before-images and the error says so; afterWrite hooks run only
 * once every file is written. Not locked: callers doing read-modify-write hold the files' locks.
 */
export async function runTransaction(
  env: TransactionEnv,
  changes: FileChange[],
  options: WriteFilesOptions = {},
): Promise<TransactionResult[]> {
  const planned: Planned[] = [];
  const seen = new Set<string>();
  for (const change of changes) {
    const after = bytesOf(change);
    const target = await env.check(change.abs, after?.byteLength ?? 0);
    if (seen.has(target.abs))
      throw new ToolbeltError("EINVAL_INPUT", `${target.rel} appears twice in one multi-file write`, {
        details: { path: target.rel },
      });
    seen.add(target.abs);
    planned.push({
      abs: target.abs,
      rel: target.rel,
      after,
      before: undefined,
      notKept: undefined,
      expected: "remove" in change ? undefined : change.before,
    });
  }
  const needBefore = env.recorder !== undefined || planned.length > 1;
  for (const p of planned) {
    if (!needBefore) break;
    const b = await readBefore(env, p.abs, ROLLBACK_KEEP_BYTES, p.expected);
    p.before = b.before;
    p.notKept = b.notKept;
  }
  // Staging starts first: its I/O runs in the thread pool while the recorder hashes the images.
  const early = Promise.allSettled(
    planned.map((p) =>
      p.after === undefined
        ? Promise.resolve(undefined)
        : prepareFileAtomic(p.abs, p.after, { ...options, root: env.root, mkdirs: false }),
    ),
  );
  const recording = env.recorder
    ? env.recorder.begin(
        { call: env.call, tool: env.tool, ...(env.restoreOf ? { restore_of: env.restoreOf } : {}) },
        planned.map((p): RecordedFile => ({ path: p.rel, before: p.notKept ?? p.before, after: p.after })),
      )
    : Promise.resolve(undefined);
  // The new contents go to their temp files (and are fsynced) while the record is made durable:
  // nothing is renamed over a file until the record is, so the order a crash relies on holds, and
  // the two waits for the disk overlap. Missing parent directories are created only once the record
  // is made (as a write in turn would), and a temp file that failed is reported when its turn comes,
  // after the files before it are written, exactly as if each were written in turn.
  const [recorded, firstTry] = await Promise.all([
    recording.then(
      (id) => ({ ok: true as const, id }),
      (error: unknown) => ({ ok: false as const, error }),
    ),
    early,
  ]);
  const staged: Array<PromiseSettledResult<PreparedWrite | undefined>> = firstTry;
  const abortStaged = async () => {
    for (const s of staged) if (s.status === "fulfilled") await s.value?.abort().catch(() => {});
  };
  if (!recorded.ok) {
    await abortStaged();
    throw recorded.error;
  }
  const record = recorded.id;
  const stagedAt = async (i: number, p: Planned): Promise<PreparedWrite | undefined> => {
    const s = staged[i] as PromiseSettledResult<PreparedWrite | undefined>;
    if (s.status === "fulfilled") return s.value;
    const missingParent = (s.reason as NodeJS.ErrnoException)?.code === "ENOENT" && options.mkdirs !== false;
    if (!missingParent || p.after === undefined) throw s.reason;
    return prepareFileAtomic(p.abs, p.after, { ...options, root: env.root });
  };
  const results: TransactionResult[] = [];
  const written: Planned[] = [];
  try {
    for (const [i, p] of planned.entries()) {
      const prepared = await stagedAt(i, p);
      if (prepared === undefined) {
        const removed = await removeFileAt(p.abs, env.root);
        results.push({ path: p.rel, created: false, bytes: 0, removed, notes: [] });
      } else {
        const r = await prepared.commit();
        results.push({ path: p.rel, ...r, notes: [] });
      }
      written.push(p);
      env.ledger.invalidate(p.abs);
    }
  } catch (error) {
    // The temp files not renamed yet go (a committed one refuses a second settle, harmlessly).
    await abortStaged();
    const failed = planned[written.length] as Planned;
    const unrestored: string[] = [];
    for (const w of [...written].reverse()) {
      try {
        if (w.notKept) throw new Error(`before-image not kept (${w.notKept})`);
        if (w.before === undefined) await removeFileAt(w.abs, env.root);
        else await writeFileAtomic(w.abs, w.before, { root: env.root });
        env.ledger.invalidate(w.abs);
      } catch {
        unrestored.push(w.rel);
      }
    }
    // A record whose files are all back where they were describes no change.
    if (record && unrestored.length === 0) await env.recorder?.end(record, "rolled_back");
    const { code, message: why } = normaliseError(error);
    const restored = written.map((w) => w.rel).filter((r) => !unrestored.includes(r));
    if (unrestored.length)
      throw new ToolbeltError(
        "EINTERNAL",
        `writing ${failed.rel} failed (${why}) and ${unrestored.join(", ")} could not be restored${record ? `; checkpoint ${record} holds their earlier content` : ""}`,
        { cause: error, details: { path: failed.rel, unrestored, restored } },
      );
    throw new ToolbeltError(
      code,
      `writing ${failed.rel} failed: ${why}; ${restored.length ? `${restored.join(", ")} restored, ` : ""}nothing was changed`,
      { cause: error, details: { path: failed.rel, restored } },
    );
  }
  if (record) await env.recorder?.end(record, "done");
  for (const [i, p] of planned.entries()) {
    if (p.after === undefined) continue;
    const result = results[i] as TransactionResult;
    // The content before the write, for hooks that compare (new diagnostics): the image read for the
    // checkpoint, else what the caller read under the file's lock.
    const before = result.created ? undefined : (p.before ?? p.expected);
    Object.assign(result, await env.after({ abs: p.abs, rel: p.rel, created: result.created, before }));
  }
  return results;
}
