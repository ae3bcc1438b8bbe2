import type { ToolResult } from "@toolbelt/core";
import type { mcpStatusPayload } from "./family.js";
import type { mcpResultPayload } from "./tools.js";

/** What the mcp family's tools return: mcp_status, and every server tool (`mcp__<server>__<tool>`). */
export interface McpResults {
  mcp_status: ToolResult<{ output: typeof mcpStatusPayload }>;
  [serverTool: `mcp__${string}`]: ToolResult<{ output: typeof mcpResultPayload }>;
}

declare module "@toolbelt/core" {
  interface ToolResultMap extends McpResults {}
}
