import path from "node:path";
import { defineTool, type ErrorPayload, errorPayload, type ToolContext } from "@toolbelt/core";
import { z } from "zod";
import { commitAll, type EditResult, editResult, loadFile, resolveIn, withFileLocks } from "./apply.js";
import {
  fromRaw,
  hasFinalNewline,
  keepFinalNewline,
  spliceDocument,
  type TextDocument,
  toLf,
} from "./document.js";
import { failurePayload, isFailure, strategyName } from "./edit-file.js";
import { closestCandidate, locate, locateAll, STRICT_STRATEGIES } from "./matcher.js";
import { renderEdit } from "./render.js";

const input = z.object({
  path: z.string().describe("File to edit, relative to the project root"),
  old_string: z
    .string()
    .describe(
      "Exact text to replace (line endings may differ). Empty appends new_string, creating the file if needed.",
    ),
  new_string: z.string().describe("Replacement text"),
  replace_all: z
    .boolean()
    .optional()
    .describe("Replace every occurrence instead of requiring exactly one (default false)"),
});

const mewboInput = z.object({
  file_path: z.string().describe("Path to the file to edit"),
  old_string: z.string().describe("Exact string to find in the file (empty: append new_string)"),
  new_string: z.string().describe("Replacement string"),
  replace_all: z.boolean().optional().describe("Replace all occurrences (default false)"),
  root: z.string().optional().describe("Directory file_path is relative to (inside the project)"),
});

const DESCRIPTION =
  "Exact string replacement in one file. old_string must occur exactly once (only line endings may differ) unless " +
  "replace_all is set; more than one match is EMULTI_MATCH, none is ENO_MATCH with the closest candidate and line numbers. " +
  "An empty old_string appends new_string, creating the file if needed. Returns a unified diff; line endings, BOM, " +
  "final newline and mode are kept.";

type Args = { path: string; old_string: string; new_string: string; replace_all?: boolean | undefined };

function append(doc: TextDocument, addition: string): TextDocument {
  const text = toLf(addition);
  if (doc.text === "") return { ...fromRaw(text), bom: doc.bom };
  const joiner = hasFinalNewline(doc) ? "" : "\n";
  // The appended lines take the file's own line ending.
  return spliceDocument({ ...doc, eols: [...doc.eols] }, doc.text.length, doc.text.length, joiner + text);
}

export async function structuredPatch(ctx: ToolContext, args: Args): Promise<EditResult | ErrorPayload> {
  const target = resolveIn(ctx, args.path);
  return withFileLocks(ctx, [target.abs], async () => {
    const file = await loadFile(ctx, target.abs, target.rel);
    if (args.old_string === "") {
      if (args.new_string === "")
        return errorPayload("EINVAL_INPUT", "old_string and new_string are both empty; nothing to do");
      const after = append(file.doc, args.new_string);
      const { edits, notes } = await commitAll(ctx, [
        { file, after, strategies: [file.exists ? "append" : "create"] },
      ]);
      return editResult(edits, notes);
    }
    if (!file.exists) {
      return errorPayload("ENOENT", `${target.rel} does not exist (an empty old_string creates it)`, {
        path: target.rel,
      });
    }
    if (args.old_string === args.new_string) {
      return errorPayload("EINVAL_INPUT", "old_string and new_string are identical; nothing to change", {
        path: target.rel,
      });
    }
    if (args.replace_all) {
      if (args.old_string.trim() === "") {
        return errorPayload(
          "EINVAL_INPUT",
          "old_string is whitespace only; replace_all would rewrite every gap",
          {
            path: target.rel,
          },
        );
      }
      const matches = locateAll(file.doc, args.old_string, args.new_string);
      if (matches.length === 0) {
        const candidate = closestCandidate(file.doc, args.old_string);
        const where = candidate
          ? `\nClosest candidate, lines ${candidate.start_line}-${candidate.end_line}:\n${candidate.text}`
          : "";
        return errorPayload(
          "ENO_MATCH",
          `old_string was not found in ${target.rel} (exact match, line endings ignored); nothing was changed.${where}`,
          {
            path: target.rel,
            ...(candidate ? { candidate } : {}),
          },
        );
      }
      let after = file.doc;
      for (const m of [...matches].reverse()) after = spliceDocument(after, m.start, m.end, m.replacement);
      after = keepFinalNewline(file.doc, after);
      const { edits, notes } = await commitAll(ctx, [{ file, after, strategies: matches.map(strategyName) }]);
      return editResult(edits, notes);
    }
    const match = locate(file.doc, args.old_string, args.new_string, {
      strategies: STRICT_STRATEGIES,
      label: "old_string",
    });
    if (isFailure(match)) {
      const hint = match.code === "EMULTI_MATCH" ? " Or set replace_all to change every occurrence." : "";
      return failurePayload({ ...match, message: match.message + hint }, { path: target.rel });
    }
    const after = keepFinalNewline(
      file.doc,
      spliceDocument(file.doc, match.start, match.end, match.replacement),
    );
    const { edits, notes } = await commitAll(ctx, [{ file, after, strategies: [strategyName(match)] }]);
    return editResult(edits, notes);
  });
}

export const structuredPatchTool = defineTool({
  name: "structured_patch",
  family: "edit",
  access: "write",
  editBackend: "structured_patch",
  description: DESCRIPTION,
  input,
  paths: (i) => [i.path],
  execute: (i, ctx) => structuredPatch(ctx, i),
  render: renderEdit,
  profiles: {
    mewbo: {
      name: "file_edit_tool",
      description: DESCRIPTION.replace(/\bpath\b/, "file_path"),
      input: mewboInput,
      toInput: (v) => {
        const file = String(v.file_path);
        const root = typeof v.root === "string" && v.root !== "" ? v.root : undefined;
        return {
          path: root && !path.isAbsolute(file) ? path.join(root, file) : file,
          old_string: v.old_string,
          new_string: v.new_string,
          ...(v.replace_all !== undefined ? { replace_all: v.replace_all } : {}),
        };
      },
    },
  },
});
