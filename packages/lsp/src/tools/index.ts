import type { LspFamilyOptions } from "../manager.js";
import { callHierarchyTool } from "./call-hierarchy.js";
import { definitionTool } from "./definition.js";
import { diagnosticsTool } from "./diagnostics.js";
import { documentSymbolsTool } from "./document-symbols.js";
import { hoverTool } from "./hover.js";
import { implementationTool } from "./implementation.js";
import { referencesTool } from "./references.js";
import { renameTool } from "./rename.js";
import { workspaceSymbolsTool } from "./workspace-symbols.js";

/** The lsp tools, bound to the family options, one file per tool. */
export function createTools(opts: LspFamilyOptions) {
  return [
    diagnosticsTool(opts),
    definitionTool(opts),
    referencesTool(opts),
    implementationTool(opts),
    hoverTool(opts),
    documentSymbolsTool(opts),
    workspaceSymbolsTool(opts),
    callHierarchyTool(opts),
    renameTool(opts),
  ];
}
