import type { LspFamilyOptions } from "../manager.js";
import { placesTool } from "./places.js";

export function definitionTool(opts: LspFamilyOptions) {
  return placesTool(
    opts,
    "lsp_definition",
    "textDocument/definition",
    "Where the symbol at a position (or named by symbol path, e.g. Class/method) is defined, across files.",
  );
}
