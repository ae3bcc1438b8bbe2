import path from "node:path";
import {
  type ResolvedPath,
  ToolbeltError,
  type ToolContext,
  writeDiagnosticsSchema,
  z,
} from "@toolbelt/core";
import { fingerprintOf } from "@toolbelt/core/internal";
import { FILE_HEADERS_ONLY, formatPatch, structuredPatch } from "diff";
import {
  decodeDocument,
  EOL_STYLES,
  emptyDocument,
  encodedText,
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

const fileEditEntry = z.object({
  path: z.string(),
  created: z.boolean(),
  changed_on_disk: z
    .boolean()
    .describe(
      "the file changed on disk since this session last read it; the edit applied to the current content",
    ),
  strategies: z.array(z.string()).describe("strategy of each replacement, in order"),
  replacements: z.number().int(),
  eol: z.enum(EOL_STYLES),
  bom: z.boolean(),
  added: z.number().int(),
  removed: z.number().int(),
  diff: z.string(),
  diagnostics: writeDiagnosticsSchema
    .optional()
    .describe("new problems this edit introduced into the file, when a language server checked it"),
});

/** What every edit tool returns. */
export const editResultPayload = z.object({
  kind: z.literal("edit_result"),
  path: z.string().optional().describe("set when one file was edited"),
  strategy: z.string().optional().describe("set when one strategy explains the whole edit"),
  files: z.array(fileEditEntry),
  diff: z.string().describe("unified diff of every edited file"),
  notes: z.array(z.string()).describe("notes from afterWrite hooks (diagnostics and the like)"),
});

export type FileEdit = z.output<typeof fileEditEntry>;
export type EditResult = z.output<typeof editResultPayload>;

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
    // A view of the buffer read, not a copy of it (a large file would be held twice).
    const read = await handle.readFile();
    const bytes = new Uint8Array(read.buffer, read.byteOffset, read.byteLength);
    // Only a file this session has read can be stale; hashing an unread one would decide nothing.
    const stale =
      ctx.ledger.status(abs) !== "unread" && ctx.ledger.status(abs, fingerprintOf(bytes, stat)) === "stale";
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

/** Where `a` and `b` first differ (UTF-16 index), compared a block at a time. */
function commonPrefix(a: string, b: string, limit: number): number {
  let i = 0;
  const BLOCK = 4096;
  while (i + BLOCK <= limit && a.slice(i, i + BLOCK) === b.slice(i, i + BLOCK)) i += BLOCK;
  while (i < limit && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

/** How many characters `a` and `b` share at their ends, at most `limit`. */
function commonSuffix(a: string, b: string, limit: number): number {
  let n = 0;
  const BLOCK = 4096;
  while (
    n + BLOCK <= limit &&
    a.slice(a.length - n - BLOCK, a.length - n) === b.slice(b.length - n - BLOCK, b.length - n)
  )
    n += BLOCK;
  while (n < limit && a.charCodeAt(a.length - 1 - n) === b.charCodeAt(b.length - 1 - n)) n++;
  return n;
}

function countNewlines(text: string, from: number, to: number): number {
  let n = 0;
  for (let i = text.indexOf("\n", from); i !== -1 && i < to; i = text.indexOf("\n", i + 1)) n++;
  return n;
}

/**
 * The changed lines of an edit with up to DIFF_CONTEXT lines of context around them, found by
 * comparing characters from both ends, so only the window is ever split into lines: an edit of one
 * line in a 100,000-line file costs that line's neighbourhood, not two whole-file splits.
 * `head` is the number of equal leading lines, `start` the first line of the window (0-based).
 */
function changedWindow(before: string, after: string, tailContext: number) {
  const prefix = commonPrefix(before, after, Math.min(before.length, after.length));
  // Whole lines only: the equal head ends after the last newline inside the common prefix.
  const headEnd = before.lastIndexOf("\n", prefix - 1) + 1;
  const head = headEnd === 0 ? 0 : countNewlines(before, 0, headEnd);
  const suffix = commonSuffix(before, after, Math.min(before.length, after.length) - headEnd);
  // The equal tail starts at the first line start inside the common suffix.
  // It must start a line in both texts: past the suffix's first newline unless both break there.
  let tailStart = before.length - suffix;
  const startsLine = (text: string, at: number) => at === 0 || text.charCodeAt(at - 1) === 10;
  if (!startsLine(before, tailStart) || !startsLine(after, tailStart + after.length - before.length)) {
    const nl = before.indexOf("\n", tailStart);
    tailStart = nl === -1 ? before.length : nl + 1;
  }
  const tailChars = before.length - tailStart;
  // Context: up to DIFF_CONTEXT lines before the change and after it.
  let from = headEnd;
  let contextBefore = 0;
  while (contextBefore < DIFF_CONTEXT && from > 0) {
    from = from >= 2 ? before.lastIndexOf("\n", from - 2) + 1 : 0;
    contextBefore++;
  }
  let oldTo = tailStart;
  let keepTail = 0;
  while (keepTail < tailContext && oldTo < before.length) {
    const nl = before.indexOf("\n", oldTo);
    oldTo = nl === -1 ? before.length : nl + 1;
    keepTail++;
  }
  const keptChars = oldTo - tailStart;
  const newTo = after.length - tailChars + keptChars;
  const old = splitKeepingEnds(before.slice(from, oldTo));
  const next = splitKeepingEnds(after.slice(from, newTo));
  const unchanged = prefix === before.length && prefix === after.length;
  const toEnd = oldTo === before.length;
  return unchanged
    ? { head, start: head, old: [] as string[], next: [] as string[], keepTail: 0, toEnd }
    : { head, start: head - contextBefore, old, next, keepTail, toEnd };
}

/** Context lines after a hunk's last change ("\\ No newline" markers are not lines). */
function trailingContext(hunk: Hunk): number {
  let n = 0;
  for (let i = hunk.lines.length - 1; i >= 0; i--) {
    const line = hunk.lines[i] as string;
    if (line.startsWith(" ")) n++;
    else if (!line.startsWith("\\")) break;
  }
  return n;
}

/**
 * The unified diff of an edit, costing the size of the change rather than the file: the common head and
 * tail are cut off first (linear), the minimal diff is searched only inside the changed window and only up
 * to a bounded edit length, and past that the window is shown as removed and added. Counts come from the
 * hunks, so they stay right when the text is truncated for display.
 */
export function unifiedDiff(rel: string, before: string, after: string, created: boolean): DiffSummary {
  let hunks: Hunk[] = [];
  // The minimal diff may place a change lower than where the texts' common tail begins (a run of equal
  // lines can be matched either way), leaving the last hunk short of context inside the window: then the
  // window takes more of the tail and the diff is searched again.
  for (let tailContext = DIFF_CONTEXT; ; tailContext *= 4) {
    const { head, start, old, next, keepTail, toEnd } = changedWindow(before, after, tailContext);
    if (old.length === 0 && next.length === 0) {
      hunks = [];
      break;
    }
    const found = structuredPatch("", "", old.join(""), next.join(""), undefined, undefined, {
      context: DIFF_CONTEXT,
      maxEditLength: DIFF_MAX_EDIT_LENGTH,
    });
    if (!found) {
      hunks = [replacementHunk(old, next, start, head - start, keepTail)];
      break;
    }
    hunks = found.hunks.map((h) => ({ ...h, oldStart: h.oldStart + start, newStart: h.newStart + start }));
    const last = hunks[hunks.length - 1];
    if (toEnd || !last || trailingContext(last) >= DIFF_CONTEXT) break;
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
  const data = pending.map((p) => encodedText(p.after));
  // One core transaction: every file passes the write checks (size: what the edit adds, see
  // write-size.ts; allowlist; protected-path approval) before the first is written, the checkpoint
  // is recorded, and a failed write puts back the files already written.
  // The bytes each file was loaded from go along: the checkpoint's before-image is what is on disk
  // at write time, and core checks it still is these bytes rather than reading the file again.
  const results = await ctx.writeFiles(
    pending.map((p, i) => ({ abs: p.file.abs, data: data[i] as string, before: p.file.original })),
  );
  const notes = results.flatMap((r) => r.notes);
  const edits = pending.map((p, i): FileEdit => {
    const created = !p.file.exists;
    const diagnostics = results[i]?.diagnostics;
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
      ...(diagnostics ? { diagnostics } : {}),
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
