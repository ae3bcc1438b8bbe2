// No imports at run time: the one-shot gate (oneshot.ts) asks this before anything heavy loads.
import type { FamilyName } from "./families.js";

/**
 * The families one `run` loads. A language server, and ripgrep for search_files, are started through
 * the shell family's sandbox wrapper (session.hooks.wrapCommand): without the shell family an lsp tool
 * would run the server unwrapped, and a search would run ripgrep unconfined (its answer then checked
 * line by line instead). An interactive run (a terminal on stdin) asks through the ui family.
 */
export function familiesFor(
  family: FamilyName | undefined,
  interactive: boolean,
  tool?: string,
): FamilyName[] | undefined {
  if (!family) return undefined;
  const out = new Set<FamilyName>([family]);
  if (family === "lsp" || tool === "search_files") out.add("shell");
  if (interactive) out.add("ui");
  return [...out];
}
