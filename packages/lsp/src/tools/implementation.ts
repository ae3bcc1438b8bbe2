import type { LspFamilyOptions } from "../manager.js";
import { placesTool } from "./places.js";

export function implementationTool(opts: LspFamilyOptions) {
  return placesTool(
    opts,
    "lsp_implementation",
    "textDocument/implementation",
    "Implementations of an interface, abstract method or type at a position (or named by symbol path).",
  );
}
