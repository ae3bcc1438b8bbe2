import {
  defineTool,
  type ErrorPayload,
  errorPayload,
  isErrorPayload,
  type ToolContext,
  z,
} from "@toolbelt/core";
import { type EditResult, editResultPayload } from "./apply.js";
import { fromRaw, keepFinalNewline, spliceDocument, type TextDocument, toLf } from "./document.js";
import { failurePayload, isFailure, strategyName } from "./match-report.js";
import { ALL_STRATEGIES, locate, type Match, type MatchFailure } from "./matcher.js";
import {
  applyEdits,
  type EditPlanner,
  editInput,
  editList,
  editPaths,
  type PlannedEdit,
} from "./multi-edit.js";
import { renderEdit } from "./render.js";
import { replaceEvery } from "./replace-all.js";

const oldText = z
  .string()
  .describe(
    "The lines to replace, copied from the file. Must identify exactly one place; include a few surrounding lines when in doubt.",
  );
const newText = z.string().describe("The text to put in their place");
const replaceAll = z
  .boolean()
  .optional()
  .describe(
    "Replace every exact occurrence of old_text (line endings aside, no tolerant matching) instead of requiring one (default false)",
  );

const input = editInput(
  { old_text: oldText, new_text: newText, replace_all: replaceAll },
  "Several edits in one call, instead of old_text/new_text: applied in order (each to the text the previous ones left), to one or more files, all or none",
);

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

const MULTI =
  " For several edits at once, send edits: [{ path?, old_text, new_text, replace_all? }, ...] instead of old_text/new_text: " +
  "they apply in order, each to the text the previous ones left, across files; if any fails nothing is written and the " +
  "error names it by index. replace_all replaces every exact occurrence.";

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
    after: keepFinalNewline(
      doc,
      spliceDocument(doc, match.start, match.end, match.replacement, match.startLine - 1),
    ),
    match,
  };
}

type Edit = {
  path?: string | undefined;
  old_text: string;
  new_text: string;
  replace_all?: boolean | undefined;
};
type Args = {
  path?: string | undefined;
  old_text?: string | undefined;
  new_text?: string | undefined;
  replace_all?: boolean | undefined;
  edits?: Edit[] | undefined;
};

/** edit_file's planner; messages name the parameters the caller sent (mouaif's are oldText/newText). */
function planner(oldName: string, newName: string): EditPlanner<Edit> {
  return ({ file, doc, exists }, edit): PlannedEdit | ErrorPayload => {
    const rel = file.rel;
    if (edit.old_text === "") {
      if (exists && !(doc.text === "" && !doc.bom)) {
        return errorPayload(
          "EINVAL_INPUT",
          `${oldName} is empty but ${rel} is not: an empty search would match everywhere. Give the lines to replace.`,
          { path: rel },
        );
      }
      return { after: { ...fromRaw(toLf(edit.new_text)), bom: doc.bom }, strategies: ["create"] };
    }
    if (!exists) {
      return errorPayload("ENOENT", `${rel} does not exist (to create it, send an empty ${oldName})`, {
        path: rel,
      });
    }
    if (edit.replace_all) {
      if (edit.old_text === edit.new_text) {
        return errorPayload("EINVAL_INPUT", `${oldName} and ${newName} are the same; nothing to change`, {
          path: rel,
        });
      }
      return replaceEvery(doc, rel, edit.old_text, edit.new_text, oldName);
    }
    const planned = planEdit(doc, edit.old_text, edit.new_text, oldName);
    if (isFailure(planned)) return failurePayload(planned, { path: rel });
    const { after, match } = planned;
    if (after.text === doc.text) {
      return errorPayload(
        "EINVAL_INPUT",
        `${oldName} and ${newName} are the same at lines ${match.startLine}-${match.endLine}; nothing to change`,
        { path: rel },
      );
    }
    return { after, strategies: [strategyName(match)] };
  };
}

export async function editFile(ctx: ToolContext, args: Args): Promise<EditResult | ErrorPayload> {
  const [oldName, newName] = ctx.profile === "mouaif" ? ["oldText", "newText"] : ["old_text", "new_text"];
  const list = editList<Edit>(args, ["old_text", "new_text"], ["replace_all"]);
  if (isErrorPayload(list)) return list;
  return applyEdits(ctx, args.path, list.edits, planner(oldName, newName), list.labelled);
}

export const editFileTool = defineTool({
  name: "edit_file",
  family: "edit",
  access: "write",
  editBackend: "edit_file",
  description: DESCRIPTION + MULTI,
  input,
  output: editResultPayload,
  paths: (i) => editPaths(i.path, i.edits ?? [{}]),
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
