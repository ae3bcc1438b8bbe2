import { definePlugin, type Plugin } from "@toolbelt/core";
import { contributions } from "./contrib.js";
import { editFileTool } from "./edit-file.js";
import { notebookEditTool } from "./notebook-edit.js";
import { searchReplaceBlockTool } from "./search-replace-block.js";
import { structuredPatchTool } from "./structured-patch.js";

/**
 * The edit family: three interchangeable backends, each marked with `editBackend`, so a session binds
 * exactly one (pinned by `agent.edit_tool`, otherwise chosen by the model), and notebook_edit for
 * Jupyter notebooks' cells, bound beside whichever it is (deferrable).
 */
export const family: Plugin = definePlugin({
  name: "edit",
  contributes: contributions,
  tools: [editFileTool, searchReplaceBlockTool, structuredPatchTool, notebookEditTool],
});

export type { EditResult, FileEdit } from "./apply.js";
export { type BlockParse, type EditBlock, parseBlocks } from "./blocks.js";
export { contributions, editBackendForModel, editConfig } from "./contrib.js";
export { decodeDocument, encodeDocument, type TextDocument } from "./document.js";
export { editFileTool } from "./edit-file.js";
export {
  ALL_STRATEGIES,
  type Candidate,
  type LocateOptions,
  locate,
  type Match,
  type MatchFailure,
  STRICT_STRATEGIES,
  type Strategy,
} from "./matcher.js";
export { type NotebookEditResult, notebookEditTool } from "./notebook-edit.js";
export type { EditResults } from "./results.js";
export { searchReplaceBlockTool } from "./search-replace-block.js";
export { structuredPatchTool } from "./structured-patch.js";
