import type { LspFamilyOptions } from "../manager.js";
import { placesTool } from "./places.js";

export function referencesTool(opts: LspFamilyOptions) {
  return placesTool(
    opts,
    "lsp_references",
    "textDocument/references",
    "Every reference to the symbol at a position (or named by symbol path), declaration included.",
  );
}
