import path from "node:path";
import {
  defineTool,
  type ErrorPayload,
  errorPayload,
  isErrorPayload,
  type ToolContext,
  z,
} from "@toolbelt/core";
import { type EditResult, editResultPayload } from "./apply.js";
import {
  fromRaw,
  hasFinalNewline,
  keepFinalNewline,
  spliceDocument,
  type TextDocument,
  toLf,
} from "./document.js";
import { failurePayload, isFailure, strategyName } from "./match-report.js";
import { locate, STRICT_STRATEGIES } from "./matcher.js";
import {
  applyEdits,
  type EditPlanner,
  editInput,
  editList,
  editPaths,
  type PlannedEdit,
  type WorkingFile,
} from "./multi-edit.js";
import { renderEdit } from "./render.js";
import { replaceEvery } from "./replace-all.js";

const oldString = z
  .string()
  .describe(
    "Exact text to replace (line endings may differ). Empty appends new_string, creating the file if needed.",
  );
const newString = z.string().describe("Replacement text");
const replaceAll = z
  .boolean()
  .optional()
  .describe("Replace every occurrence instead of requiring exactly one (default false)");

const input = editInput(
  { old_string: oldString, new_string: newString, replace_all: replaceAll },
  "Several replacements in one call, instead of old_string/new_string: applied in order (each to the text the previous ones left), to one or more files, all or none",
);

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

const MULTI =
  " To make several replacements at once, send edits: [{ path?, old_string, new_string, replace_all? }, ...] instead: " +
  "they apply in order, across files, and if any fails nothing is written and the error names it by index.";

type Edit = {
  path?: string | undefined;
  old_string: string;
  new_string: string;
  replace_all?: boolean | undefined;
};
type Args = {
  path?: string | undefined;
  old_string?: string | undefined;
  new_string?: string | undefined;
  replace_all?: boolean | undefined;
  edits?: Edit[] | undefined;
};

function append(doc: TextDocument, addition: string): TextDocument {
  const text = toLf(addition);
  if (doc.text === "") return { ...fromRaw(text), bom: doc.bom };
  const joiner = hasFinalNewline(doc) ? "" : "\n";
  // The appended lines take the file's own line ending.
  return spliceDocument({ ...doc, eols: [...doc.eols] }, doc.text.length, doc.text.length, joiner + text);
}

/** One exact replacement (or an append) on the file as the earlier edits of the call left it. */
const planPatch: EditPlanner<Edit> = (
  { file, doc, exists }: WorkingFile,
  edit,
): PlannedEdit | ErrorPayload => {
  const rel = file.rel;
  if (edit.old_string === "") {
    if (edit.new_string === "")
      return errorPayload("EINVAL_INPUT", "old_string and new_string are both empty; nothing to do");
    return { after: append(doc, edit.new_string), strategies: [exists ? "append" : "create"] };
  }
  if (!exists) {
    return errorPayload("ENOENT", `${rel} does not exist (an empty old_string creates it)`, { path: rel });
  }
  if (edit.old_string === edit.new_string) {
    return errorPayload("EINVAL_INPUT", "old_string and new_string are identical; nothing to change", {
      path: rel,
    });
  }
  if (edit.replace_all) return replaceEvery(doc, rel, edit.old_string, edit.new_string, "old_string");
  const match = locate(doc, edit.old_string, edit.new_string, {
    strategies: STRICT_STRATEGIES,
    label: "old_string",
  });
  if (isFailure(match)) {
    const hint = match.code === "EMULTI_MATCH" ? " Or set replace_all to change every occurrence." : "";
    return failurePayload({ ...match, message: match.message + hint }, { path: rel });
  }
  const after = keepFinalNewline(doc, spliceDocument(doc, match.start, match.end, match.replacement));
  return { after, strategies: [strategyName(match)] };
};

export async function structuredPatch(ctx: ToolContext, args: Args): Promise<EditResult | ErrorPayload> {
  const list = editList<Edit>(args, ["old_string", "new_string"], ["replace_all"]);
  if (isErrorPayload(list)) return list;
  return applyEdits(ctx, args.path, list.edits, planPatch, list.labelled);
}

export const structuredPatchTool = defineTool({
  name: "structured_patch",
  family: "edit",
  access: "write",
  editBackend: "structured_patch",
  description: DESCRIPTION + MULTI,
  input,
  output: editResultPayload,
  paths: (i) => editPaths(i.path, i.edits ?? [{}]),
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
