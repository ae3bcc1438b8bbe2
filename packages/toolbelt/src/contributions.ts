import type { ConfigContribution, Contributions, EventContribution } from "@toolbelt/core";
import { eventJsonSchema as coreEventJsonSchema } from "@toolbelt/core/internal";
import { contributions as edit } from "@toolbelt/edit/contrib";
import { contributions as files } from "@toolbelt/files/contrib";
import { contributions as lsp } from "@toolbelt/lsp/contrib";
import { contributions as mcp } from "@toolbelt/mcp/contrib";
import { contributions as projects } from "@toolbelt/projects/contrib";
import { contributions as shell } from "@toolbelt/shell/contrib";
import { contributions as ui } from "@toolbelt/ui/contrib";

// Only the families' light contrib modules: validating a config loads no implementation.

/** What every built-in family contributes, loaded or not: a config shared by every run may use any. */
export const BUILTIN_CONTRIBUTIONS: readonly Contributions[] = [files, edit, shell, lsp, ui, projects, mcp];

/** Tool, family and profile names of the built-in families (and `tool_search`). */
export const BUILTIN_TOOL_KEYS: readonly string[] = [
  ...new Set(["tool_search", ...BUILTIN_CONTRIBUTIONS.flatMap((c) => c.toolKeys ?? [])]),
].sort();

/** The config keys of the built-in families and the given extra contributions. */
export function configContributions(extra: readonly Contributions[] = []): ConfigContribution[] {
  return [...new Set([...BUILTIN_CONTRIBUTIONS, ...extra].flatMap((c) => c.config ?? []))];
}

/** The event types of the built-in families and the given extra contributions. */
export function eventContributions(extra: readonly Contributions[] = []): EventContribution[] {
  return [...new Set([...BUILTIN_CONTRIBUTIONS, ...extra].flatMap((c) => c.events ?? []))];
}

/** JSON Schema of every event: core's, the built-in families' and the given plugins'. */
export function eventJsonSchema(extra: readonly Contributions[] = []): Record<string, unknown> {
  return coreEventJsonSchema(eventContributions(extra));
}
