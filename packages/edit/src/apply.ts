import path from "node:path";
import { fingerprintOf, type ResolvedPath, ToolbeltError, type ToolContext } from "@toolbelt/core";
import { FILE_HEADERS_ONLY, formatPatch, structuredPatch } from "diff";
import {
  decodeDocument,
  type EolStyle,
  emptyDocument,
  encodeDocument,
  eolStyle,
  type TextDocument,
} from "./document.js";

/** One file as loaded for an edit, under its lock. */
export type LoadedFile = {
  abs: string;
  rel: string;
  exists: boolean;
  doc: TextDocument;
  /** The exact bytes read, to restore the file if a later write of the same call fails. */
  original: Uint8Array | undefined;
  /** The file differs from the version this session last read. */
  stale: boolean;
};

export type FileEdit = {
  path: string;
  created: boolean;
  /** The file changed on disk since this session last read it; the edit applied to the current content. */
  changed_on_disk: boolean;
  /** Strategy of each replacement, in order. */
  strategies: string[];
  replacements: number;
  eol: EolStyle;
  bom: boolean;
  added: number;
  removed: number;
  diff: string;
};

export type EditResult = {
  kind: "edit_result";
  /** Set when one file was edited. */
  path?: string;
  /** Set when one strategy explains the whole edit. */
  strategy?: string;
  files: FileEdit[];
  /** Unified diff of every edited file. */
  diff: string;
  /** Notes from afterWrite hooks (diagnostics and the like). */
  notes: string[];
};

/** Resolves a model-given path, relative to an optional base directory that must itself be inside the root. */
export function resolveIn(ctx: ToolContext, file: string, base?: string): ResolvedPath {
  if (typeof file !== "string" || file.trim() === "")
    throw new ToolbeltError("EINVAL_INPUT", "a file path is required");
  if (!base) return ctx.resolve(file);
  const dir = ctx.resolve(base);
  return ctx.resolve(path.isAbsolute(file) ? file : path.join(dir.abs, file));
}

/** Reads a file for editing; a missing file loads as empty with `exists: false`. Call under the file's lock. */
export async function loadFile(ctx: ToolContext, abs: string, rel: string): Promise<LoadedFile> {
  // Opened through core: the path check holds at the open, and the stat and the bytes are of one descriptor.
  let handle: Awaited<ReturnType<ToolContext["openFile"]>>;
  try {
    handle = await ctx.openFile(abs);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") {
      return { abs, rel, exists: false, doc: emptyDocument(), original: undefined, stale: false };
    }
    throw error;
  }
  try {
    const stat = await handle.stat();
    if (stat.isDirectory())
      throw new ToolbeltError("EISDIR", `${rel} is a directory`, { details: { path: rel } });
    if (!stat.isFile()) throw new ToolbeltError("EINVAL_INPUT", `${rel} is not a regular file`);
    // The file may be larger than fileWriteMaxBytes (which bounds what an edit sends and adds, in
    // core's write path); fileMaxBytes bounds what is loaded at all.
    if (stat.size > ctx.limits.fileMaxBytes) {
      throw new ToolbeltError(
        "ETOO_LARGE",
        `${rel} is ${stat.size} bytes, over the ${ctx.limits.fileMaxBytes}-byte file size limit (limits.fileMaxBytes)`,
        { details: { path: rel } },
      );
    }
    const bytes = new Uint8Array(await handle.readFile());
    const stale = ctx.ledger.status(abs, fingerprintOf(bytes, stat)) === "stale";
    return { abs, rel, exists: true, doc: decodeDocument(bytes, rel), original: bytes, stale };
  } finally {
    await handle.close();
  }
}

const DIFF_MAX_LINES = 400;
const DIFF_CONTEXT = 3;
/** Past this many edit steps the minimal diff is not searched for: the changed span is shown as removed and added. */
const DIFF_MAX_EDIT_LENGTH = 2000;
const NO_NEWLINE = "\\ No newline at end of file";

type Hunk = { oldStart: number; oldLines: number; newStart: number; newLines: number; lines: string[] };

export type DiffSummary = { diff: string; added: number; removed: number };

/** Lines with their terminators, so a missing final newline is a difference like any other. */
function splitKeepingEnds(text: string): string[] {
  return text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
}

/** One hunk of `old` → `next` (both windows of whole lines) without searching for a minimal diff. */
function replacementHunk(old: string[], next: string[], start: number, lead: number, trail: number): Hunk {
  const lines: string[] = [];
  const push = (prefix: string, line: string) => {
    if (line.endsWith("\n")) lines.push(prefix + line.slice(0, -1));
    else lines.push(prefix + line, NO_NEWLINE);
  };
  for (const line of old.slice(0, lead)) push(" ", line);
  for (const line of old.slice(lead, old.length - trail)) push("-", line);
  for (const line of next.slice(lead, next.length - trail)) push("+", line);
  for (const line of old.slice(old.length - trail)) push(" ", line);
  const hunk = {
    oldStart: start + 1,
    oldLines: old.length,
    newStart: start + 1,
    newLines: next.length,
    lines,
  };
  if (hunk.oldLines === 0) hunk.oldStart -= 1;
  if (hunk.newLines === 0) hunk.newStart -= 1;
  return hunk;
}

/**
 * The unified diff of an edit, costing the size of the change rather than the file: the common head and
 * tail are cut off first (linear), the minimal diff is searched only inside the changed window and only up
 * to a bounded edit length, and past that the window is shown as removed and added. Counts come from the
 * hunks, so they stay right when the text is truncated for display.
 */
export function unifiedDiff(rel: string, before: string, after: string, created: boolean): DiffSummary {
  const old = splitKeepingEnds(before);
  const next = splitKeepingEnds(after);
  let head = 0;
  while (head < old.length && head < next.length && old[head] === next[head]) head++;
  let tail = 0;
  while (
    tail < old.length - head &&
    tail < next.length - head &&
    old[old.length - 1 - tail] === next[next.length - 1 - tail]
  )
    tail++;
  const start = Math.max(0, head - DIFF_CONTEXT);
  const keepTail = Math.min(tail, DIFF_CONTEXT);
  const oldWindow = old.slice(start, old.length - tail + keepTail);
  const newWindow = next.slice(start, next.length - tail + keepTail);
  let hunks: Hunk[];
  if (head === old.length && head === next.length) {
    hunks = [];
  } else {
    const found = structuredPatch("", "", oldWindow.join(""), newWindow.join(""), undefined, undefined, {
      context: DIFF_CONTEXT,
      maxEditLength: DIFF_MAX_EDIT_LENGTH,
    });
    hunks = found
      ? found.hunks.map((h) => ({ ...h, oldStart: h.oldStart + start, newStart: h.newStart + start }))
      : [replacementHunk(oldWindow, newWindow, start, head - start, keepTail)];
  }
  let added = 0;
  let removed = 0;
  for (const hunk of hunks)
    for (const line of hunk.lines) {
      if (line.startsWith("+")) added++;
      else if (line.startsWith("-")) removed++;
    }
  const patch = formatPatch(
    {
      oldFileName: created ? "/dev/null" : `a/${rel}`,
      newFileName: `b/${rel}`,
      oldHeader: undefined,
      newHeader: undefined,
      hunks,
    },
    FILE_HEADERS_ONLY,
  );
  const lines = patch.split("\n");
  if (lines.length <= DIFF_MAX_LINES) return { diff: patch, added, removed };
  const shown = `${lines.slice(0, DIFF_MAX_LINES).join("\n")}\n… diff truncated: ${lines.length} lines (capped at ${DIFF_MAX_LINES} lines)\n`;
  return { diff: shown, added, removed };
}

export type PendingWrite = { file: LoadedFile; after: TextDocument; strategies: string[] };

/**
 * Writes every pending file as one core transaction (ctx.writeFiles) and reports the edits: a call
 * applies wholly or not at all.
 */
export async function commitAll(
  ctx: ToolContext,
  pending: PendingWrite[],
): Promise<{ edits: FileEdit[]; notes: string[] }> {
  const data = pending.map((p) => encodeDocument(p.after));
  // One core transaction: every file passes the write checks (size: what the edit adds, see
  // write-size.ts; allowlist; protected-path approval) before the first is written, the checkpoint
  // is recorded, and a failed write puts back the files already written.
  const results = await ctx.writeFiles(pending.map((p, i) => ({ abs: p.file.abs, data: data[i] as string })));
  const notes = results.flatMap((r) => r.notes);
  const edits = pending.map((p): FileEdit => {
    const created = !p.file.exists;
    const { diff, added, removed } = unifiedDiff(p.file.rel, p.file.doc.text, p.after.text, created);
    return {
      path: p.file.rel,
      created,
      changed_on_disk: p.file.stale,
      strategies: p.strategies,
      replacements: p.strategies.length,
      eol: eolStyle(p.after),
      bom: p.after.bom,
      added,
      removed,
      diff,
    };
  });
  return { edits, notes };
}

export function editResult(edits: FileEdit[], notes: string[]): EditResult {
  const strategies = new Set(edits.flatMap((e) => e.strategies));
  const only = edits.length === 1 ? edits[0] : undefined;
  return {
    kind: "edit_result",
    ...(only ? { path: only.path } : {}),
    ...(strategies.size === 1 ? { strategy: [...strategies][0] as string } : {}),
    files: edits,
    diff: edits.map((e) => e.diff).join(""),
    notes,
  };
}

/** Runs `fn` holding the locks of every file, taken in one global order so two calls never deadlock. */
export async function withFileLocks<T>(ctx: ToolContext, abs: string[], fn: () => Promise<T>): Promise<T> {
  const sorted = [...new Set(abs)].sort();
  const take = (i: number): Promise<T> => {
    const next = sorted[i];
    return next === undefined ? fn() : ctx.withFileLock(next, () => take(i + 1));
  };
  return take(0);
}
