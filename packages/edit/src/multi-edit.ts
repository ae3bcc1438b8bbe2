import {
  type ErrorCode,
  type ErrorPayload,
  errorPayload,
  isErrorPayload,
  type ResolvedPath,
  ToolbeltError,
  type ToolContext,
  z,
} from "@toolbelt/core";
import {
  commitAll,
  type EditResult,
  editResult,
  type LoadedFile,
  loadFile,
  type PendingWrite,
  resolveIn,
  withFileLocks,
} from "./apply.js";
import { encodedText, type TextDocument } from "./document.js";

/**
 * Edits one call may carry. Each is matched under the matcher's own work budget, so this bounds the
 * whole call; a model that needs more sends several calls.
 */
export const MAX_EDITS = 100;

/** A file as the earlier edits of this call left it (nothing is written until every edit applied). */
export type WorkingFile = { file: LoadedFile; doc: TextDocument; exists: boolean };

export type PlannedEdit = { after: TextDocument; strategies: string[] };

/** One edit's whole decision, without I/O: what the file becomes, or why the edit cannot apply. */
export type EditPlanner<E> = (working: WorkingFile, edit: E) => PlannedEdit | ErrorPayload;

/** An edit of a multi-edit call that did not apply, and why. */
export type EditFailure = { edit: number; path: string; code: ErrorCode; message: string };

/**
 * A tool's input with both forms: the single edit's fields (optional here; `editList` says which are
 * missing) and `edits`, a list of them, each with an optional path of its own.
 */
export function editInput<S extends z.ZodRawShape>(single: S, editsDescription: string) {
  const entry = z.object({
    path: z.string().optional().describe("File of this edit (default: the top-level path)"),
    ...single,
  });
  return z.object({
    path: z.string().optional().describe("File to edit, relative to the project root"),
    ...z.object(single).partial().shape,
    edits: z
      .array(entry)
      .min(1)
      .max(MAX_EDITS)
      .optional()
      .describe(`${editsDescription}; at most ${MAX_EDITS}`),
  });
}

/** Which file each edit goes to: its own path, else the call's. */
export function editPaths(
  top: string | undefined,
  edits: ReadonlyArray<{ path?: string | undefined }>,
): string[] {
  return edits.map((e) => e.path ?? top).filter((p): p is string => p !== undefined);
}

/**
 * Applies edits to one or more files, all or nothing. Every file is locked (in one global order, so
 * concurrent calls never deadlock) and read once; the edits to a file apply in the order given, each
 * to the text the previous ones produced; only when every edit applied is anything written, through
 * core's write path, which checks every file before writing the first.
 *
 * With `labelled` false (a single edit sent without `edits`) a failure is returned exactly as the
 * planner gave it; otherwise the error names each failed edit by its index in `edits`.
 */
export async function applyEdits<E extends { path?: string | undefined }>(
  ctx: ToolContext,
  top: string | undefined,
  edits: readonly E[],
  plan: EditPlanner<E>,
  labelled: boolean,
): Promise<EditResult | ErrorPayload> {
  const resolved: ResolvedPath[] = [];
  for (const [i, edit] of edits.entries()) {
    const file = edit.path ?? top;
    if (file === undefined)
      return errorPayload("EINVAL_INPUT", `edits[${i}] has no path and the call gives none`, { edit: i });
    try {
      resolved.push(resolveIn(ctx, file));
    } catch (error) {
      if (!labelled || !ToolbeltError.isInstance(error)) throw error;
      const payload = error.toPayload();
      return { ...payload, message: `edits[${i}]: ${payload.message}; nothing was written`, edit: i };
    }
  }
  return withFileLocks(
    ctx,
    resolved.map((t) => t.abs),
    async () => {
      const files = new Map<string, WorkingFile & { strategies: string[]; failed: boolean }>();
      // A file that cannot be edited at all (too large, binary, a directory) fails its first edit.
      const unloadable = new Map<string, ErrorPayload>();
      for (const target of resolved) {
        if (files.has(target.abs) || unloadable.has(target.abs)) continue;
        try {
          const file = await loadFile(ctx, target.abs, target.rel);
          files.set(target.abs, { file, doc: file.doc, exists: file.exists, strategies: [], failed: false });
        } catch (error) {
          if (!labelled || !ToolbeltError.isInstance(error)) throw error;
          unloadable.set(target.abs, error.toPayload());
        }
      }
      const failures: Failure[] = [];
      for (const [i, edit] of edits.entries()) {
        const target = resolved[i] as ResolvedPath;
        const refused = unloadable.get(target.abs);
        if (refused) {
          unloadable.delete(target.abs);
          const { kind: _kind, code, message, ...details } = refused;
          failures.push({ edit: i, path: target.rel, code, message, details });
          continue;
        }
        const working = files.get(target.abs);
        // Later edits of a file whose earlier edit failed would be judged against text that never existed.
        if (!working || working.failed) continue;
        const planned = plan(working, edit);
        if (isErrorPayload(planned)) {
          if (!labelled) return planned;
          working.failed = true;
          const { kind: _kind, code, message, ...details } = planned;
          failures.push({ edit: i, path: working.file.rel, code, message, details });
          continue;
        }
        working.doc = planned.after;
        working.exists = true;
        working.strategies.push(...planned.strategies);
      }
      if (failures.length > 0) return failuresPayload(failures, edits.length);
      const pending: PendingWrite[] = [];
      for (const w of files.values()) {
        const changed = w.exists && (!w.file.exists || encodedText(w.doc) !== encodedText(w.file.doc));
        if (changed) pending.push({ file: w.file, after: w.doc, strategies: w.strategies });
      }
      if (pending.length === 0)
        return errorPayload(
          "EINVAL_INPUT",
          "together the edits leave every file as it was; nothing to change",
        );
      const { edits: written, notes } = await commitAll(ctx, pending);
      return editResult(written, notes);
    },
  );
}

type Failure = EditFailure & { details: Record<string, unknown> };

function failuresPayload(failures: Failure[], total: number): ErrorPayload {
  const first = failures[0] as Failure;
  const text = failures.map((f) => `edits[${f.edit}] (${f.path}): [${f.code}] ${f.message}`).join("\n\n");
  return errorPayload(
    first.code,
    `${failures.length} of ${total} edit${total === 1 ? "" : "s"} failed; nothing was written.\n\n${text}`,
    {
      // The first failure's details (candidate, match lines) stay at the top, as a single edit's would.
      ...first.details,
      edit: first.edit,
      path: first.path,
      failures: failures.map(({ details: _details, ...f }) => f),
      edits: total,
    },
  );
}

/**
 * The edits of a call: its `edits` array, or the one edit its top-level fields describe. Sending both
 * is refused rather than guessed at.
 */
export function editList<E extends { path?: string | undefined }>(
  args: { edits?: E[] | undefined } & Record<string, unknown>,
  required: readonly string[],
  optional: readonly string[] = [],
): { edits: E[]; labelled: boolean } | ErrorPayload {
  const fields = [...required, ...optional];
  const sent = fields.filter((f) => args[f] !== undefined);
  if (args.edits !== undefined) {
    if (sent.length > 0) {
      return errorPayload(
        "EINVAL_INPUT",
        `give either edits or ${required.join(" and ")}, not both (${sent.join(", ")} sent with edits); put every edit in edits`,
      );
    }
    return { edits: args.edits, labelled: true };
  }
  const missing = ["path", ...required].filter((f) => args[f] === undefined);
  if (missing.length > 0) {
    return errorPayload(
      "EINVAL_INPUT",
      `${missing.join(" and ")} ${missing.length === 1 ? "is" : "are"} required (or give edits: [{ path, ${required.join(", ")} }, ...])`,
    );
  }
  const single: Record<string, unknown> = { path: args.path };
  for (const f of sent) single[f] = args[f];
  return { edits: [single as E], labelled: false };
}
