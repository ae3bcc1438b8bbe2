import type { ToolResult } from "@toolbelt/core";
import type { shellSessionTool } from "./shell-session-tool.js";
import type { shellTool } from "./shell-tool.js";

/** What each shell tool returns, by every name a profile binds it under. */
export interface ShellResults {
  shell: ToolResult<typeof shellTool>;
  aider_shell_tool: ToolResult<typeof shellTool>;
  shell_session: ToolResult<typeof shellSessionTool>;
  shell_session_tool: ToolResult<typeof shellSessionTool>;
}

declare module "@toolbelt/core" {
  interface ToolResultMap extends ShellResults {}
}
