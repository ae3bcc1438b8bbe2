import type { ToolResult } from "@toolbelt/core";
import type { editFileTool } from "./edit-file.js";
import type { notebookEditTool } from "./notebook-edit.js";
import type { searchReplaceBlockTool } from "./search-replace-block.js";
import type { structuredPatchTool } from "./structured-patch.js";

/** What each edit tool returns, by every name a profile binds it under. */
export interface EditResults {
  edit_file: ToolResult<typeof editFileTool>;
  search_replace_block: ToolResult<typeof searchReplaceBlockTool>;
  aider_edit_block_tool: ToolResult<typeof searchReplaceBlockTool>;
  structured_patch: ToolResult<typeof structuredPatchTool>;
  file_edit_tool: ToolResult<typeof structuredPatchTool>;
  notebook_edit: ToolResult<typeof notebookEditTool>;
}

declare module "@toolbelt/core" {
  interface ToolResultMap extends EditResults {}
}
