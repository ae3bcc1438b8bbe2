import { defineTool, type ErrorPayload, errorPayload, type ToolContext } from "@toolbelt/core";
import { z } from "zod";
import { commitAll, type EditResult, editResult, loadFile, resolveIn, withFileLocks } from "./apply.js";
import { fromRaw, keepFinalNewline, spliceDocument, type TextDocument, toLf } from "./document.js";
import { ALL_STRATEGIES, locate, type Match, type MatchFailure } from "./matcher.js";
import { renderEdit } from "./render.js";

export function isFailure<T extends object>(value: T | MatchFailure): value is MatchFailure {
  return "code" in value;
}

export function failurePayload(failure: MatchFailure, extra: Record<string, unknown> = {}): ErrorPayload {
  return errorPayload(failure.code, failure.message, {
    ...extra,
    ...(failure.strategy ? { strategy: failure.strategy } : {}),
    // A one-character search can match thousands of times; the payload keeps the first 50.
    ...(failure.lines ? { match_count: failure.lines.length, match_lines: failure.lines.slice(0, 50) } : {}),
    ...(failure.candidate ? { candidate: failure.candidate } : {}),
    tried: failure.tried,
  });
}

export function strategyName(match: Match): string {
  return match.via ? `${match.strategy}+${match.via}` : match.strategy;
}

const input = z.object({
  path: z.string().describe("File to edit, relative to the project root"),
  old_text: z
    .string()
    .describe(
      "The lines to replace, copied from the file. Must identify exactly one place; include a few surrounding lines when in doubt.",
    ),
  new_text: z.string().describe("The text to put in their place"),
});

const mouaifInput = z
  .object({
    path: z.string().optional().describe("File to edit"),
    file: z.string().optional().describe("File to edit (alias of path)"),
    oldText: z.string().describe("Text to find; must match exactly one place"),
    newText: z.string().describe("Replacement text"),
  })
  .refine((v) => v.path !== undefined || v.file !== undefined, {
    message: "give path (or file)",
    path: ["path"],
  });

const DESCRIPTION =
  "Replace one span of a file. old_text is matched exactly first; if that fails, ignoring line endings, then indentation, " +
  "then formatting (blank lines, line wrapping, spaces around punctuation), then once more after undoing JSON escaping. " +
  "Every stage must find exactly one place: several is EMULTI_MATCH, none is ENO_MATCH with the closest candidate. " +
  "The result says which strategy matched and shows a unified diff. Line endings, BOM, final newline and mode are kept.";

/** edit_file's whole decision, without I/O: where old_text goes and what the file becomes. */
export function planEdit(
  doc: TextDocument,
  oldText: string,
  newText: string,
  label = "old_text",
): { after: TextDocument; match: Match } | MatchFailure {
  const match = locate(doc, oldText, newText, { strategies: ALL_STRATEGIES, label });
  if (isFailure(match)) return match;
  return {
    after: keepFinalNewline(doc, spliceDocument(doc, match.start, match.end, match.replacement)),
    match,
  };
}

export async function editFile(
  ctx: ToolContext,
  args: { path: string; old_text: string; new_text: string },
): Promise<EditResult | ErrorPayload> {
  // Messages name the parameters the caller sent: mouaif's are oldText/newText.
  const [oldName, newName] = ctx.profile === "mouaif" ? ["oldText", "newText"] : ["old_text", "new_text"];
  const target = resolveIn(ctx, args.path);
  return withFileLocks(ctx, [target.abs], async () => {
    const file = await loadFile(ctx, target.abs, target.rel);
    const empty = file.doc.text === "" && !file.doc.bom;
    if (args.old_text === "") {
      if (file.exists && !empty) {
        return errorPayload(
          "EINVAL_INPUT",
          `${oldName} is empty but ${target.rel} is not: an empty search would match everywhere. Give the lines to replace.`,
          { path: target.rel },
        );
      }
      const after = { ...fromRaw(toLf(args.new_text)), bom: file.doc.bom };
      const { edits, notes } = await commitAll(ctx, [{ file, after, strategies: ["create"] }]);
      return editResult(edits, notes);
    }
    if (!file.exists) {
      return errorPayload("ENOENT", `${target.rel} does not exist (to create it, send an empty ${oldName})`, {
        path: target.rel,
      });
    }
    const planned = planEdit(file.doc, args.old_text, args.new_text, oldName);
    if (isFailure(planned)) return failurePayload(planned, { path: target.rel });
    const { after, match } = planned;
    if (after.text === file.doc.text) {
      return errorPayload(
        "EINVAL_INPUT",
        `${oldName} and ${newName} are the same at lines ${match.startLine}-${match.endLine}; nothing to change`,
        {
          path: target.rel,
        },
      );
    }
    const { edits, notes } = await commitAll(ctx, [{ file, after, strategies: [strategyName(match)] }]);
    return editResult(edits, notes);
  });
}

export const editFileTool = defineTool({
  name: "edit_file",
  family: "edit",
  access: "write",
  editBackend: "edit_file",
  description: DESCRIPTION,
  input,
  paths: (i) => [i.path],
  execute: (i, ctx) => editFile(ctx, i),
  render: renderEdit,
  profiles: {
    mouaif: {
      name: "edit_file",
      description: DESCRIPTION.replace(/old_text/g, "oldText").replace(/new_text/g, "newText"),
      input: mouaifInput,
      toInput: (v) => ({ path: v.path ?? v.file, old_text: v.oldText, new_text: v.newText }),
    },
  },
});
