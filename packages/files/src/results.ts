import type { ToolResult } from "@toolbelt/core";
import type { listDirTool, listFilesTool } from "./list-files.js";
import type { readFileTool } from "./read-file.js";
import type { searchFilesTool } from "./search-files.js";
import type { writeFileTool } from "./write-file.js";

/** What each files tool returns, by every name a profile binds it under. */
export interface FilesResults {
  read_file: ToolResult<typeof readFileTool>;
  write_file: ToolResult<typeof writeFileTool>;
  list_files: ToolResult<typeof listFilesTool>;
  list_dir: ToolResult<typeof listDirTool>;
  aider_list_dir_tool: ToolResult<typeof listDirTool>;
  search_files: ToolResult<typeof searchFilesTool>;
}

declare module "@toolbelt/core" {
  interface ToolResultMap extends FilesResults {}
}
