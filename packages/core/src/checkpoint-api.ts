import { type Dirent, lstatSync, readdirSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { readHandleBounded } from "./bounded-read.js";
import {
  type Checkpoint,
  CheckpointStore,
  type CheckpointsConfig,
  checkpointsConfigSchema,
  conflictError,
  type FileState,
  findCheckpoint,
  planRestore,
  type RecordedFile,
} from "./checkpoints.js";
import { ToolbeltError } from "./errors.js";
import type { Session } from "./session.js";
import type { FileChange, TransactionResult } from "./transaction.js";

export interface CheckpointFileDiff {
  path: string;
  before: FileState;
  after: FileState;
  /** Unified diff of the text, or a note when the content is binary or was not recorded. */
  diff: string;
}

/** What a restore did (the `undo` tool's result). */
export const restoreResultSchema = z.object({
  kind: z.literal("checkpoint_restore"),
  restored_to: z.string().describe("the checkpoint restored to (the state just before it)"),
  checkpoint: z
    .string()
    .optional()
    .describe("the checkpoint the restore itself made, to undo it with; absent when nothing changed"),
  files: z.array(z.object({ path: z.string(), action: z.enum(["written", "removed"]) })),
  unchanged: z.array(z.string()),
});

export type RestoreResult = z.output<typeof restoreResultSchema>;

type Apply = (
  changes: FileChange[],
  meta: { tool: string; call?: string; restoreOf: string },
) => Promise<TransactionResult[]>;

/** A writer of restores; a tool passes its own (`ctx.writeFiles`) so its policy applies. */
export type RestoreWriter = (changes: FileChange[]) => Promise<TransactionResult[]>;

/** Where a session's checkpoints are kept and what bounds them. */
export interface CheckpointsSummary {
  /** The store's directory (a workspace's is named with the workspace: `ssh me@box: /home/me/...`). */
  where: string;
  /** Bytes its blobs take now. */
  bytes: number;
  /** The bounds it is kept within (the settings of the toolbelt that records them). */
  config: CheckpointsConfig;
}

/**
 * Checkpoints kept elsewhere: a workspace's, recorded and restored by the toolbelt there under its
 * own policy. Errors are the same codes as locally (ENOENT, ECONFLICT with `details.conflicts`,
 * EDENIED), and EWORKSPACE when the workspace cannot be reached.
 */
export interface RemoteCheckpoints {
  list(): Promise<Checkpoint[]>;
  diff(ref: string): Promise<{ checkpoint: Checkpoint; files: CheckpointFileDiff[] }>;
  /** Restores there as a write by `tool` (its policy, protected paths and approvals apply there). */
  restore(ref: string, tool: string): Promise<RestoreResult>;
  summary(): Promise<CheckpointsSummary>;
}

const DIFF_CONTEXT = 3;
const DIFF_MAX_LINES = 2000;

/**
 * `session.checkpoints`: every change tools made in the session's root, and restores to them. For a
 * session whose tools run in a workspace, the workspace's (see {@link RemoteCheckpoints}).
 */
export class SessionCheckpoints {
  readonly #session: Session;
  readonly #apply: Apply;
  readonly #remote: RemoteCheckpoints | undefined;
  readonly #stores = new Map<string, CheckpointStore>();

  constructor(session: Session, apply: Apply, remote?: RemoteCheckpoints) {
    this.#session = session;
    this.#apply = apply;
    this.#remote = remote;
  }

  get config(): CheckpointsConfig {
    const c = (this.#session.config as { checkpoints?: CheckpointsConfig }).checkpoints;
    return c ?? checkpointsConfigSchema.parse(undefined);
  }

  /**
   * The store of the current root on this machine (listing works whether or not recording is on).
   * A session whose checkpoints are a workspace's has none here: EUNAVAILABLE (use list, diff,
   * restore and summary, which reach the workspace).
   */
  store(): CheckpointStore {
    if (this.#remote)
      throw new ToolbeltError(
        "EUNAVAILABLE",
        "this session's checkpoints are kept in its workspace, not on this machine: use list, diff, restore and summary",
      );
    const root = this.#session.root;
    let store = this.#stores.get(root);
    if (!store) {
      store = new CheckpointStore(root, this.#session.id, this.config);
      this.#stores.set(root, store);
    }
    return store;
  }

  /**
   * The recorder the write path uses, or undefined when `checkpoints.enabled` is false, or when the
   * checkpoints are a workspace's (what this machine's session writes would not be among them).
   */
  recorder(): CheckpointStore | undefined {
    return this.config.enabled && !this.#remote ? this.store() : undefined;
  }

  list(): Promise<Checkpoint[]> {
    return this.#remote ? this.#remote.list() : this.store().list();
  }

  /** Where the checkpoints are kept, how much disk they take, and the bounds they are kept within. */
  async summary(): Promise<CheckpointsSummary> {
    if (this.#remote) return this.#remote.summary();
    const store = this.store();
    return { where: store.dir, bytes: await store.usage(), config: this.config };
  }

  async #find(ref: string): Promise<{ list: Checkpoint[]; index: number }> {
    const list = await this.list();
    const index = findCheckpoint(list, ref);
    if (index === -1)
      throw new ToolbeltError(
        "ENOENT",
        list.length
          ? `no checkpoint ${JSON.stringify(ref)} in this root (ids, call ids or "last"; see checkpoints list)`
          : "no checkpoints recorded in this root yet",
        { details: { checkpoint: ref } },
      );
    return { list, index };
  }

  /** What one checkpoint changed, file by file. */
  async diff(ref: string): Promise<{ checkpoint: Checkpoint; files: CheckpointFileDiff[] }> {
    if (this.#remote) return this.#remote.diff(ref);
    const { list, index } = await this.#find(ref);
    const cp = list[index] as Checkpoint;
    const store = this.store();
    const text = async (s: FileState): Promise<string | undefined | null> => {
      if (s === null) return "";
      if (s === "too_large" || s === "unknown") return null;
      const bytes = await store.blob(s);
      if (!bytes) return null;
      if (bytes.includes(0)) return undefined;
      return Buffer.from(bytes).toString("utf8");
    };
    const files: CheckpointFileDiff[] = [];
    for (const f of cp.files) {
      const a = await text(f.before);
      const b = await text(f.after);
      let diff: string;
      if (a === null || b === null) diff = "(content not recorded: too large, unknown or pruned)\n";
      else if (a === undefined || b === undefined) diff = "(binary file changed)\n";
      else diff = unifiedDiff(f.path, a, b, f.before === null, f.after === null);
      files.push({ path: f.path, before: f.before, after: f.after, diff });
    }
    return { checkpoint: cp, files };
  }

  /**
   * Puts every file changed at or after the checkpoint back as it was just before it. Refuses with
   * ECONFLICT (changing nothing) when a file is not as the last recorded change left it. The restore
   * goes through the session's write path (policy, protected paths) and is itself a checkpoint. A
   * workspace's checkpoints are restored there, through its write path (a `writer` of this machine
   * has no say there).
   */
  async restore(
    ref: string,
    options: { writer?: RestoreWriter; tool?: string } = {},
  ): Promise<RestoreResult> {
    if (this.#remote) return this.#remote.restore(ref, options.tool ?? "checkpoints_restore");
    const { list, index } = await this.#find(ref);
    const target = list[index] as Checkpoint;
    const root = this.#session.root;
    const files = [...new Set(list.slice(index).flatMap((c) => c.files.map((f) => f.path)))].sort();
    const absOf = (rel: string) => this.#session.resolver.resolve(path.join(root, rel)).abs;
    const locked = async (i: number): Promise<RestoreResult> => {
      const next = files[i];
      if (next !== undefined) return this.#session.withFileLock(absOf(next), () => locked(i + 1));
      const plan = await planRestore(this.store(), list, index, (rel) => this.#read(absOf(rel)));
      if (!plan.ok) throw conflictError(plan.target, plan.conflicts);
      const changes: FileChange[] = plan.changes.map((c) =>
        c.before === undefined
          ? { abs: absOf(c.path), remove: true }
          : { abs: absOf(c.path), data: c.before },
      );
      if (changes.length) {
        if (options.writer) await options.writer(changes);
        else
          await this.#apply(changes, { tool: options.tool ?? "checkpoints_restore", restoreOf: target.id });
      }
      const mine = (await this.list()).filter((c) => c.session === this.#session.id);
      const after = changes.length ? mine.at(-1) : undefined;
      return {
        kind: "checkpoint_restore",
        restored_to: target.id,
        checkpoint: after && !list.some((c) => c.id === after.id) ? after.id : undefined,
        files: plan.changes.map((c) => ({
          path: c.path,
          action: c.before === undefined ? "removed" : "written",
        })),
        unchanged: plan.unchanged,
      };
    };
    return locked(0);
  }

  /**
   * Notes the tree's file metadata before a command runs, so `finish()` can record what it changed:
   * files it created (restorable: they were absent), and files it changed or removed, whose earlier
   * content is unknown (a restore to before the command refuses those, honestly). Roots with more
   * than `checkpoints.shellMaxFiles` files (after skipping .git and node_modules) are not watched.
   */
  async watch(tool: string, call: string | undefined): Promise<{ finish(): Promise<void> } | undefined> {
    const recorder = this.recorder();
    const max = this.config.shellMaxFiles;
    if (!recorder || max === 0) return undefined;
    const root = this.#session.root;
    const before = await snapshot(root, max);
    if (!before) return undefined;
    return {
      finish: async () => {
        const after = await snapshot(root, max);
        if (!after) return;
        const files: RecordedFile[] = [];
        for (const [rel, sig] of after) {
          const was = before.get(rel);
          if (was === sig) continue;
          const bytes = await this.#read(path.join(root, rel)).catch(() => "unknown" as const);
          files.push({
            path: rel,
            before: was === undefined ? undefined : "unknown",
            after: bytes ?? "unknown",
          });
        }
        for (const rel of before.keys())
          if (!after.has(rel)) files.push({ path: rel, before: "unknown", after: undefined });
        if (files.length) await recorder.end(await recorder.begin({ call, tool }, files), "done");
      },
    };
  }

  /**
   * A file's bytes for a record or a restore check: undefined when it is absent, "too_large" past the
   * store's maxFileBytes (never read whole: a command can make a file of gigabytes), "unknown" when it
   * is not a regular file (a FIFO swapped in would be read for as long as its writer writes).
   */
  async #read(abs: string): Promise<Uint8Array | undefined | "too_large" | "unknown"> {
    let handle: Awaited<ReturnType<Session["openFile"]>>;
    try {
      handle = await this.#session.openFile(abs);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
    try {
      const st = await handle.stat();
      if (!st.isFile()) return "unknown";
      const max = this.config.maxFileBytes;
      if (st.size > max) return "too_large";
      // Read by the descriptor up to one byte past the limit: the file may grow after the stat.
      const bytes = await readHandleBounded(handle, max, st.size);
      return bytes.length > max ? "too_large" : new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length);
    } finally {
      await handle.close();
    }
  }
}

function lines(text: string): string[] {
  return text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
}

/** A unified diff that costs the size of the file: common head and tail cut, the rest shown as one hunk. */
export function unifiedDiff(
  rel: string,
  before: string,
  after: string,
  created: boolean,
  removed: boolean,
): string {
  const a = lines(before);
  const b = lines(after);
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (
    tail < a.length - head &&
    tail < b.length - head &&
    a[a.length - 1 - tail] === b[b.length - 1 - tail]
  )
    tail++;
  const out = [`--- ${created ? "/dev/null" : `a/${rel}`}`, `+++ ${removed ? "/dev/null" : `b/${rel}`}`];
  if (head === a.length && head === b.length) return `${out.join("\n")}\n`;
  const start = Math.max(0, head - DIFF_CONTEXT);
  const keep = Math.min(tail, DIFF_CONTEXT);
  const oldWin = a.slice(start, a.length - tail + keep);
  const newWin = b.slice(start, b.length - tail + keep);
  const lead = head - start;
  const body: string[] = [];
  const push = (prefix: string, line: string) => {
    body.push(prefix + line.replace(/\n$/, ""));
    if (!line.endsWith("\n")) body.push("\\ No newline at end of file");
  };
  for (const l of oldWin.slice(0, lead)) push(" ", l);
  for (const l of oldWin.slice(lead, oldWin.length - keep)) push("-", l);
  for (const l of newWin.slice(lead, newWin.length - keep)) push("+", l);
  for (const l of oldWin.slice(oldWin.length - keep)) push(" ", l);
  const range = (s: number, n: number) => `${n === 0 ? s : s + 1},${n}`;
  out.push(`@@ -${range(start, oldWin.length)} +${range(start, newWin.length)} @@`);
  const shown =
    body.length > DIFF_MAX_LINES
      ? [...body.slice(0, DIFF_MAX_LINES), `… ${body.length - DIFF_MAX_LINES} more lines`]
      : body;
  return `${[...out, ...shown].join("\n")}\n`;
}

const WATCH_SKIP = new Set([".git", "node_modules"]);

/** Root-relative path → metadata signature of every regular file, or undefined past `max` files. */
async function snapshot(root: string, max: number): Promise<Map<string, string> | undefined> {
  const out = new Map<string, string>();
  // Synchronous on purpose: a few thousand lstat calls as promises go through the thread pool, which
  // made every command slower (benchmarks/RESULTS.md).
  const stack = [""];
  while (stack.length) {
    const rel = stack.pop() as string;
    let entries: Dirent[];
    try {
      entries = readdirSync(path.join(root, rel), { withFileTypes: true });
    } catch {
      continue;
    }
    for (const e of entries) {
      const child = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) {
        if (!WATCH_SKIP.has(e.name)) stack.push(child);
        continue;
      }
      if (!e.isFile()) continue;
      if (out.size >= max) return undefined;
      try {
        const st = lstatSync(path.join(root, child));
        out.set(child, `${st.size}:${st.mtimeMs}:${st.ctimeMs}:${st.ino}`);
      } catch {
        // Gone between the listing and the stat: not there to compare.
      }
    }
  }
  return out;
}
