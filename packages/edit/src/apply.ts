import path from "node:path";
import { fingerprintOf, type ResolvedPath, ToolbeltError, type ToolContext } from "@toolbelt/core";
import { createTwoFilesPatch, FILE_HEADERS_ONLY } from "diff";
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
    if (stat.size > ctx.limits.fileWriteMaxBytes) {
      throw new ToolbeltError(
        "ETOO_LARGE",
        `${rel} is ${stat.size} bytes, over the ${ctx.limits.fileWriteMaxBytes}-byte edit limit (limits.fileWriteMaxBytes)`,
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

export function unifiedDiff(rel: string, before: string, after: string, created: boolean): string {
  const patch = createTwoFilesPatch(
    created ? "/dev/null" : `a/${rel}`,
    `b/${rel}`,
    before,
    after,
    undefined,
    undefined,
    {
      context: 3,
      headerOptions: FILE_HEADERS_ONLY,
    },
  );
  const lines = patch.split("\n");
  if (lines.length <= DIFF_MAX_LINES) return patch;
  return `${lines.slice(0, DIFF_MAX_LINES).join("\n")}\n… diff truncated: ${lines.length} lines (capped at ${DIFF_MAX_LINES} lines)\n`;
}

function countChanges(diff: string): { added: number; removed: number } {
  let added = 0;
  let removed = 0;
  for (const line of diff.split("\n")) {
    if (line.startsWith("+") && !line.startsWith("+++")) added++;
    else if (line.startsWith("-") && !line.startsWith("---")) removed++;
  }
  return { added, removed };
}

export type PendingWrite = { file: LoadedFile; after: TextDocument; strategies: string[] };

/**
 * Writes every pending file (atomically, one by one) and reports the edits. If a write fails, the
 * files already written by this call are put back to their original bytes, so a call applies wholly
 * or not at all.
 */
export async function commitAll(
  ctx: ToolContext,
  pending: PendingWrite[],
): Promise<{ edits: FileEdit[]; notes: string[] }> {
  const data = pending.map((p) => encodeDocument(p.after));
  for (const [i, text] of data.entries()) {
    const bytes = Buffer.byteLength(text, "utf8");
    if (bytes > ctx.limits.fileWriteMaxBytes) {
      const rel = (pending[i] as PendingWrite).file.rel;
      throw new ToolbeltError(
        "ETOO_LARGE",
        `the edited ${rel} would be ${bytes} bytes, over the ${ctx.limits.fileWriteMaxBytes}-byte limit; nothing was changed`,
        { details: { path: rel } },
      );
    }
  }
  // Every file passes core's write checks (allowlist, protected-path approval) before the first is written.
  for (const [i, p] of pending.entries()) {
    await ctx.checkWrite(p.file.abs, Buffer.byteLength(data[i] as string, "utf8"));
  }
  const notes: string[] = [];
  const written: PendingWrite[] = [];
  try {
    for (const [i, p] of pending.entries()) {
      const result = await ctx.writeFile(p.file.abs, data[i] as string);
      written.push(p);
      notes.push(...result.notes);
    }
  } catch (error) {
    for (const p of written) {
      if (p.file.original) await ctx.writeFile(p.file.abs, p.file.original).catch(() => {});
      else await ctx.removeFile(p.file.abs).catch(() => {});
    }
    throw error;
  }
  const edits = pending.map((p): FileEdit => {
    const created = !p.file.exists;
    const diff = unifiedDiff(p.file.rel, p.file.doc.text, p.after.text, created);
    return {
      path: p.file.rel,
      created,
      changed_on_disk: p.file.stale,
      strategies: p.strategies,
      replacements: p.strategies.length,
      eol: eolStyle(p.after),
      bom: p.after.bom,
      ...countChanges(diff),
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
