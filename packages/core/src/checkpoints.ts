import { createHash, randomBytes } from "node:crypto";
import { constants, promises as fs } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { ToolbeltError } from "./errors.js";
import { alive, stateDir } from "./temp-files.js";

// Every change a tool makes is recorded here, outside the project and its .git: content-addressed
// blobs (sha256 of the bytes) and one append-only journal per session. A change is recorded and
// fsynced before the file is touched, so a crash between the two leaves a record a restore can use.
//
// <stateDir>/checkpoints/<sha256(root) 16 hex>/
//   root                       the root this store belongs to (for people)
//   blobs/<2 hex>/<64 hex>     file contents, written once (temp + fsync + rename)
//   journals/<session>.<pid>.jsonl   one JSON record per line, appended with O_APPEND
//   horizon                    ms time before which records are pruned

export const MIB = 1024 * 1024;

export const checkpointsConfigSchema = z
  .strictObject({
    enabled: z.boolean().default(true).describe("Record every change tools make (default true)"),
    maxBytes: z
      .number()
      .int()
      .positive()
      .default(512 * MIB)
      .describe("Disk the store of one root may use; the oldest checkpoints are pruned first"),
    maxFileBytes: z
      .number()
      .int()
      .positive()
      .default(16 * MIB)
      .describe("Files larger than this are listed as changed but their content is not recorded"),
    maxAgeDays: z.number().positive().default(30).describe("Checkpoints older than this are pruned"),
    undoTool: z
      .boolean()
      .default(false)
      .describe("Bind the `undo` tool, which lets the model restore checkpoints"),
    shellMaxFiles: z
      .number()
      .int()
      .min(0)
      .default(2000)
      .describe(
        "Watch foreground shell commands for changed files only in roots with at most this many files (0: never)",
      ),
  })
  .default({
    enabled: true,
    maxBytes: 512 * MIB,
    maxFileBytes: 16 * MIB,
    maxAgeDays: 30,
    undoTool: false,
    shellMaxFiles: 2000,
  });

export type CheckpointsConfig = z.infer<typeof checkpointsConfigSchema>;

/** A file's state in a record: a blob hash, `null` for absent, or a marker for content not recorded. */
export type FileState = string | null | "too_large" | "unknown";

export interface CheckpointFile {
  path: string;
  before: FileState;
  after: FileState;
}

export interface Checkpoint {
  /** The id to restore by (the first record of the call). */
  id: string;
  session: string;
  call?: string;
  tool: string;
  /** ISO time of the first change. */
  at: string;
  files: CheckpointFile[];
  /** "pending": recorded but never confirmed written (in progress, or the writer died mid-change). */
  state: "done" | "pending";
  /** The checkpoint this one restored to, for a restore. */
  restore_of?: string;
}

/** One file as a transaction hands it to the recorder. */
export interface RecordedFile {
  path: string;
  before: Uint8Array | undefined | "too_large" | "unknown";
  after: Uint8Array | undefined | "too_large" | "unknown";
}

/** What the write path needs from the store. */
export interface CheckpointRecorder {
  readonly maxFileBytes: number;
  begin(
    meta: { call: string | undefined; tool: string; restore_of?: string },
    files: RecordedFile[],
  ): Promise<string>;
  end(id: string, state: "done" | "rolled_back"): Promise<void>;
}

type ChangeLine = {
  v: 1;
  t: "change";
  id: string;
  session: string;
  call?: string;
  tool: string;
  at: number;
  files: CheckpointFile[];
  restore_of?: string;
};
type EndLine = { v: 1; t: "end"; id: string; state: "done" | "rolled_back" };
type Line = ChangeLine | EndLine;

const HEX64 = /^[0-9a-f]{64}$/;
/** A blob younger than this is never pruned: its record may be about to be appended. */
const BLOB_GRACE_MS = 10 * 60 * 1000;
/** A process that writes little prunes the store on its first write only if nobody did for this long. */
const PRUNE_EVERY_MS = 60 * 60 * 1000;
/** A journal line past this is not ours (records are a few hundred bytes per file). */
const MAX_LINE = 4 * MIB;
/** Bytes of recent after-images kept with their hashes, so the next change of a file need not hash its before-image. */
const KNOWN_MAX_BYTES = 16 * MIB;

export function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** The store directory of a root. */
export function checkpointDir(root: string): string {
  const key = createHash("sha256").update(root).digest("hex").slice(0, 16);
  return path.join(stateDir(), "checkpoints", key);
}

async function syncDir(dir: string): Promise<void> {
  const handle = await fs.open(dir, constants.O_RDONLY);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** The checkpoint store of one root, as one session writes to it (and reads everyone's). */
export class CheckpointStore implements CheckpointRecorder {
  readonly dir: string;
  readonly root: string;
  readonly session: string;
  readonly options: CheckpointsConfig;
  readonly #journal: string;
  #ready: Promise<void> | undefined;
  #tail: Promise<unknown> = Promise.resolve();
  #sincePrune = 0;
  #checkedDue = false;
  /** Per path, the last after-image recorded and its hash (the usual before-image of the next change). */
  readonly #known = new Map<string, { bytes: Uint8Array; hash: string }>();
  #knownBytes = 0;

  constructor(root: string, session: string, options: CheckpointsConfig, dir = checkpointDir(root)) {
    this.root = root;
    this.session = session;
    this.options = options;
    this.dir = dir;
    const safe = session.replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 80);
    this.#journal = path.join(dir, "journals", `${safe}.${process.pid}.jsonl`);
  }

  get maxFileBytes(): number {
    return this.options.maxFileBytes;
  }

  #init(): Promise<void> {
    this.#ready ??= (async () => {
      await fs.mkdir(path.join(this.dir, "journals"), { recursive: true, mode: 0o700 });
      await fs.mkdir(path.join(this.dir, "blobs"), { recursive: true, mode: 0o700 });
      await fs.writeFile(path.join(this.dir, "root"), `${this.root}\n`, { mode: 0o600 });
    })();
    return this.#ready;
  }

  /** sha256 of `bytes`, taken from #known when they equal the last after-image of `rel` byte for byte. */
  #hashOf(rel: string, bytes: Uint8Array): string {
    const known = this.#known.get(rel);
    if (known && known.bytes.byteLength === bytes.byteLength) {
      const view = Buffer.from(known.bytes.buffer, known.bytes.byteOffset, known.bytes.byteLength);
      if (view.equals(bytes)) return known.hash;
    }
    return sha256(bytes);
  }

  #forget(rel: string): void {
    const old = this.#known.get(rel);
    if (!old) return;
    this.#knownBytes -= old.bytes.byteLength;
    this.#known.delete(rel);
  }

  #remember(rel: string, bytes: Uint8Array, hash: string): void {
    this.#forget(rel);
    if (bytes.byteLength > KNOWN_MAX_BYTES) return;
    this.#known.set(rel, { bytes, hash });
    this.#knownBytes += bytes.byteLength;
    for (const [key, entry] of this.#known) {
      if (this.#knownBytes <= KNOWN_MAX_BYTES) break;
      this.#known.delete(key);
      this.#knownBytes -= entry.bytes.byteLength;
    }
  }

  async #putBlob(bytes: Uint8Array, hash = sha256(bytes)): Promise<string> {
    const dir = path.join(this.dir, "blobs", hash.slice(0, 2));
    const file = path.join(dir, hash);
    try {
      // Already stored: refresh its time so a concurrent prune's grace period covers our record.
      const now = new Date();
      await fs.utimes(file, now, now);
      return hash;
    } catch {
      // not there yet
    }
    await fs.mkdir(dir, { recursive: true, mode: 0o700 });
    const tmp = path.join(dir, `.${hash}.${process.pid}.${randomBytes(4).toString("hex")}`);
    const handle = await fs.open(tmp, "wx", 0o600);
    try {
      await handle.writeFile(bytes);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.rename(tmp, file);
    await syncDir(dir);
    this.#sincePrune += bytes.byteLength;
    return hash;
  }

  async #append(line: Line, durable: boolean): Promise<void> {
    const text = `${JSON.stringify(line)}\n`;
    // One write() of one whole line on an O_APPEND descriptor: concurrent writers never interleave
    // within a record, and each session has its own journal besides.
    const run = async () => {
      const handle = await fs.open(
        this.#journal,
        constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT,
        0o600,
      );
      try {
        await handle.write(text);
        if (durable) await handle.sync();
      } finally {
        await handle.close();
      }
    };
    const next = this.#tail.then(run, run);
    this.#tail = next.catch(() => {});
    await next;
  }

  async begin(
    meta: { call: string | undefined; tool: string; restore_of?: string },
    files: RecordedFile[],
  ): Promise<string> {
    await this.#init();
    const max = this.options.maxFileBytes;
    // Hashes first: the record needs only them, so the blobs and the record are written (and
    // fsynced) at once. The caller touches no file before all of them are durable (see
    // runTransaction), which is the order a crash relies on: a record whose blob never landed
    // describes a file that was not changed either.
    const blobs = new Map<string, Uint8Array>();
    const state = (rel: string, b: RecordedFile["before"]): FileState => {
      if (b === undefined) return null;
      if (b === "too_large" || b === "unknown") return b;
      if (b.byteLength > max) return "too_large";
      const hash = this.#hashOf(rel, b);
      blobs.set(hash, b);
      return hash;
    };
    const recorded: CheckpointFile[] = files.map((f) => ({
      path: f.path,
      before: state(f.path, f.before),
      after: state(f.path, f.after),
    }));
    for (const [i, f] of files.entries()) {
      const after = (recorded[i] as CheckpointFile).after;
      if (f.after instanceof Uint8Array && typeof after === "string" && HEX64.test(after))
        this.#remember(f.path, f.after, after);
      else this.#forget(f.path);
    }
    const id = randomBytes(5).toString("hex");
    const line: ChangeLine = {
      v: 1,
      t: "change",
      id,
      session: this.session,
      ...(meta.call ? { call: meta.call } : {}),
      tool: meta.tool,
      at: Date.now(),
      files: recorded,
      ...(meta.restore_of ? { restore_of: meta.restore_of } : {}),
    };
    const appended = this.#append(line, true);
    const settled = await Promise.allSettled([
      appended,
      ...[...blobs].map(([hash, bytes]) => this.#putBlob(bytes, hash)),
    ]);
    const failed = settled.find((r) => r.status === "rejected");
    if (failed) {
      for (const f of files) this.#forget(f.path);
      // The record of a change that will not be made: marked so, as a rolled-back write is.
      if (settled[0]?.status === "fulfilled")
        await this.#append({ v: 1, t: "end", id, state: "rolled_back" }, false).catch(() => {});
      throw failed.reason;
    }
    if (this.#sincePrune > this.options.maxBytes / 16 || (await this.#pruneDue())) {
      this.#sincePrune = 0;
      // Pruning is housekeeping: a failure of it must not fail the write it follows.
      await this.prune().catch(() => {});
    }
    return id;
  }

  /**
   * Once per process: whether the store was last pruned over PRUNE_EVERY_MS ago (a short CLI run
   * writes little, but many of them add up; walking the store on every one would cost each of them).
   */
  async #pruneDue(): Promise<boolean> {
    if (this.#checkedDue) return false;
    this.#checkedDue = true;
    const st = await fs.stat(path.join(this.dir, "last-prune")).catch(() => undefined);
    return !st || Date.now() - st.mtimeMs > PRUNE_EVERY_MS;
  }

  async end(id: string, state: "done" | "rolled_back"): Promise<void> {
    // Not fsynced: a lost "done" leaves the record pending, which restore handles (see restore()).
    await this.#append({ v: 1, t: "end", id, state }, false);
  }

  async #horizon(): Promise<number> {
    try {
      return Number(await fs.readFile(path.join(this.dir, "horizon"), "utf8")) || 0;
    } catch {
      return 0;
    }
  }

  /** Every journal's lines, unparseable ones skipped (a line torn by a crash). */
  async #lines(): Promise<Array<{ file: string; lines: Line[] }>> {
    let names: string[];
    try {
      names = await fs.readdir(path.join(this.dir, "journals"));
    } catch {
      return [];
    }
    const out: Array<{ file: string; lines: Line[] }> = [];
    for (const name of names) {
      if (!name.endsWith(".jsonl")) continue;
      const file = path.join(this.dir, "journals", name);
      let text: string;
      try {
        text = await fs.readFile(file, "utf8");
      } catch {
        continue;
      }
      const lines: Line[] = [];
      for (const raw of text.split("\n")) {
        if (!raw || raw.length > MAX_LINE) continue;
        try {
          const parsed = JSON.parse(raw) as Line;
          if (parsed && parsed.v === 1 && (parsed.t === "change" || parsed.t === "end")) lines.push(parsed);
        } catch {
          // torn last line
        }
      }
      out.push({ file, lines });
    }
    return out;
  }

  /** Every checkpoint of this root not pruned, oldest first. */
  async list(): Promise<Checkpoint[]> {
    const horizon = await this.#horizon();
    const journals = await this.#lines();
    const changes: ChangeLine[] = [];
    const ends = new Map<string, EndLine["state"]>();
    for (const j of journals)
      for (const line of j.lines) {
        if (line.t === "end") ends.set(line.id, line.state);
        else if (line.at >= horizon) changes.push(line);
      }
    changes.sort((a, b) => a.at - b.at);
    const groups = new Map<string, Checkpoint>();
    const out: Checkpoint[] = [];
    for (const change of changes) {
      const end = ends.get(change.id);
      if (end === "rolled_back") continue;
      const key = change.call ? `${change.session}\u0000${change.call}` : `\u0000${change.id}`;
      let cp = groups.get(key);
      if (!cp) {
        cp = {
          id: change.id,
          session: change.session,
          ...(change.call ? { call: change.call } : {}),
          tool: change.tool,
          at: new Date(change.at).toISOString(),
          files: [],
          state: "done",
          ...(change.restore_of ? { restore_of: change.restore_of } : {}),
        };
        groups.set(key, cp);
        out.push(cp);
      }
      if (end === undefined) cp.state = "pending";
      for (const f of change.files) {
        const had = cp.files.find((x) => x.path === f.path);
        if (had) had.after = f.after;
        else cp.files.push({ ...f });
      }
    }
    return out;
  }

  /** Bytes the blobs take on disk now. */
  async usage(): Promise<number> {
    let bytes = 0;
    const blobRoot = path.join(this.dir, "blobs");
    for (const sub of await fs.readdir(blobRoot).catch(() => [] as string[]))
      for (const name of await fs.readdir(path.join(blobRoot, sub)).catch(() => [] as string[]))
        bytes += (await fs.stat(path.join(blobRoot, sub, name)).catch(() => undefined))?.size ?? 0;
    return bytes;
  }

  async blob(hash: string): Promise<Uint8Array | undefined> {
    if (!HEX64.test(hash)) return undefined;
    let bytes: Uint8Array;
    try {
      bytes = new Uint8Array(await fs.readFile(path.join(this.dir, "blobs", hash.slice(0, 2), hash)));
    } catch {
      return undefined;
    }
    // A blob that no longer hashes to its name (a torn disk write, a hand edit) is as good as missing:
    // a restore must never write bytes other than the ones recorded.
    return sha256(bytes) === hash ? bytes : undefined;
  }

  /**
   * Keeps the store within `maxBytes` and `maxAgeDays`: the oldest checkpoints are dropped first
   * (their records fall behind the horizon), then blobs no kept record names are deleted, and the
   * journals of dead processes that hold only pruned records. Returns the bytes the blobs take after.
   */
  async prune(now = Date.now()): Promise<{ bytes: number; pruned: number }> {
    await this.#init();
    const lock = path.join(this.dir, "prune.lock");
    try {
      await fs.mkdir(lock);
    } catch {
      // Someone else prunes (or a pruner died: its lock is stale after the grace period).
      const st = await fs.stat(lock).catch(() => undefined);
      if (!st || now - st.mtimeMs < BLOB_GRACE_MS) return { bytes: -1, pruned: 0 };
      await fs.rm(lock, { recursive: true, force: true });
      await fs.mkdir(lock).catch(() => {});
    }
    try {
      const blobs = new Map<string, { size: number; mtime: number; file: string }>();
      const blobRoot = path.join(this.dir, "blobs");
      for (const sub of await fs.readdir(blobRoot).catch(() => [] as string[])) {
        for (const name of await fs.readdir(path.join(blobRoot, sub)).catch(() => [] as string[])) {
          const file = path.join(blobRoot, sub, name);
          const st = await fs.stat(file).catch(() => undefined);
          if (st) blobs.set(name, { size: st.size, mtime: st.mtimeMs, file });
        }
      }
      const checkpoints = await this.list();
      const firstAt = (cp: Checkpoint) => Date.parse(cp.at);
      const refs = (cp: Checkpoint) =>
        cp.files
          .flatMap((f) => [f.before, f.after])
          .filter((h): h is string => typeof h === "string" && HEX64.test(h));
      const count = new Map<string, number>();
      for (const cp of checkpoints) for (const h of new Set(refs(cp))) count.set(h, (count.get(h) ?? 0) + 1);
      let bytes = 0;
      for (const h of count.keys()) bytes += blobs.get(h)?.size ?? 0;
      const maxAge = this.options.maxAgeDays * 24 * 3600 * 1000;
      let drop = 0;
      while (drop < checkpoints.length) {
        const cp = checkpoints[drop] as Checkpoint;
        if (bytes <= this.options.maxBytes && now - firstAt(cp) <= maxAge) break;
        for (const h of new Set(refs(cp))) {
          const left = (count.get(h) ?? 1) - 1;
          count.set(h, left);
          if (left === 0) bytes -= blobs.get(h)?.size ?? 0;
        }
        drop++;
      }
      if (drop > 0) {
        const keep = checkpoints[drop];
        const horizon = keep ? firstAt(keep) : now + 1;
        const tmp = path.join(this.dir, `.horizon.${process.pid}`);
        await fs.writeFile(tmp, String(Math.max(horizon, await this.#horizon())));
        await fs.rename(tmp, path.join(this.dir, "horizon"));
      }
      for (const [hash, b] of blobs) {
        if ((count.get(hash) ?? 0) > 0 || now - b.mtime < BLOB_GRACE_MS) continue;
        await fs.rm(b.file, { force: true });
      }
      const horizon = await this.#horizon();
      for (const j of await this.#lines()) {
        const pid = Number(/\.(\d+)\.jsonl$/.exec(j.file)?.[1]);
        if (!Number.isFinite(pid) || alive(pid)) continue;
        if (j.lines.every((l) => l.t === "end" || l.at < horizon)) await fs.rm(j.file, { force: true });
      }
      await fs.writeFile(path.join(this.dir, "last-prune"), `${now}\n`);
      return { bytes, pruned: drop };
    } finally {
      await fs.rm(lock, { recursive: true, force: true });
    }
  }
}

export interface Conflict {
  path: string;
  expected: FileState;
  found: string | null;
  why: string;
}

export type RestorePlan =
  | {
      ok: true;
      target: Checkpoint;
      changes: Array<{ path: string; before: Uint8Array | undefined }>;
      unchanged: string[];
    }
  | { ok: false; target: Checkpoint; conflicts: Conflict[] };

/** Finds a checkpoint by its id, the call id it recorded, or "last". */
export function findCheckpoint(list: Checkpoint[], ref: string): number {
  if (ref === "last") return list.length - 1;
  const byId = list.findIndex((c) => c.id === ref);
  if (byId !== -1) return byId;
  for (let i = list.length - 1; i >= 0; i--) if ((list[i] as Checkpoint).call === ref) return i;
  return -1;
}

/**
 * What restoring to just before `list[index]` means: every file changed at or after it goes back
 * to its state before its first change there. Each file must be as the last change left it (or, for
 * a change never confirmed written, as it was before), else it is a conflict and nothing is planned.
 */
export async function planRestore(
  store: CheckpointStore,
  list: Checkpoint[],
  index: number,
  read: (rel: string) => Promise<Uint8Array | undefined | "too_large" | "unknown">,
): Promise<RestorePlan> {
  const target = list[index] as Checkpoint;
  const first = new Map<string, FileState>();
  const last = new Map<string, { after: FileState; before: FileState; pending: boolean }>();
  for (const cp of list.slice(index)) {
    for (const f of cp.files) {
      if (!first.has(f.path)) first.set(f.path, f.before);
      last.set(f.path, { after: f.after, before: f.before, pending: cp.state === "pending" });
    }
  }
  const conflicts: Conflict[] = [];
  const changes: Array<{ path: string; before: Uint8Array | undefined }> = [];
  const unchanged: string[] = [];
  for (const [rel, want] of first) {
    const now = await read(rel);
    const l = last.get(rel) as { after: FileState; before: FileState; pending: boolean };
    if (typeof now === "string") {
      // Too large to read, or no longer a regular file: nothing to compare, so nothing to restore over.
      conflicts.push({
        path: rel,
        expected: l.after,
        found: now,
        why:
          now === "too_large"
            ? "it is now larger than checkpoints.maxFileBytes, so it cannot be compared"
            : "it is no longer a regular file",
      });
      continue;
    }
    const found = now === undefined ? null : sha256(now);
    const matches = found === l.after || (l.pending && found === l.before);
    if (!matches) {
      const expected = l.after;
      const why =
        expected === "too_large" || expected === "unknown"
          ? "its last recorded state is unknown, so a restore could overwrite changes"
          : "changed since the last recorded change (by hand or by another program)";
      conflicts.push({ path: rel, expected, found, why });
      continue;
    }
    if (want === "too_large" || want === "unknown") {
      conflicts.push({ path: rel, expected: want, found, why: "its earlier content was not recorded" });
      continue;
    }
    if (found === want) {
      unchanged.push(rel);
      continue;
    }
    if (want === null) {
      changes.push({ path: rel, before: undefined });
      continue;
    }
    const bytes = await store.blob(want);
    if (!bytes) {
      conflicts.push({
        path: rel,
        expected: want,
        found,
        why: "its earlier content was pruned from the store or is damaged",
      });
      continue;
    }
    changes.push({ path: rel, before: bytes });
  }
  if (conflicts.length) return { ok: false, target, conflicts };
  return { ok: true, target, changes, unchanged };
}

export function conflictError(target: Checkpoint, conflicts: Conflict[]): ToolbeltError {
  const short = (s: FileState) =>
    typeof s === "string" && HEX64.test(s) ? s.slice(0, 12) : String(s ?? "absent");
  const list = conflicts.map(
    (c) => `${c.path}: ${c.why} (expected ${short(c.expected)}, found ${short(c.found)})`,
  );
  return new ToolbeltError(
    "ECONFLICT",
    `restore of checkpoint ${target.id} refused, nothing was changed:\n${list.join("\n")}`,
    { details: { checkpoint: target.id, conflicts } },
  );
}
