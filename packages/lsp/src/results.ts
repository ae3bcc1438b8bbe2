import type { ToolResult } from "@toolbelt/core";
import type { callHierarchyTool } from "./tools/call-hierarchy.js";
import type { definitionTool } from "./tools/definition.js";
import type { diagnosticsTool } from "./tools/diagnostics.js";
import type { documentSymbolsTool } from "./tools/document-symbols.js";
import type { hoverTool } from "./tools/hover.js";
import type { implementationTool } from "./tools/implementation.js";
import type { referencesTool } from "./tools/references.js";
import type { renameTool } from "./tools/rename.js";
import type { workspaceSymbolsTool } from "./tools/workspace-symbols.js";

/** What each lsp tool returns. */
export interface LspResults {
  lsp_diagnostics: ToolResult<ReturnType<typeof diagnosticsTool>>;
  lsp_definition: ToolResult<ReturnType<typeof definitionTool>>;
  lsp_references: ToolResult<ReturnType<typeof referencesTool>>;
  lsp_implementation: ToolResult<ReturnType<typeof implementationTool>>;
  lsp_hover: ToolResult<ReturnType<typeof hoverTool>>;
  lsp_document_symbols: ToolResult<ReturnType<typeof documentSymbolsTool>>;
  lsp_workspace_symbols: ToolResult<ReturnType<typeof workspaceSymbolsTool>>;
  lsp_call_hierarchy: ToolResult<ReturnType<typeof callHierarchyTool>>;
  lsp_rename: ToolResult<ReturnType<typeof renameTool>>;
}

declare module "@toolbelt/core" {
  interface ToolResultMap extends LspResults {}
}
