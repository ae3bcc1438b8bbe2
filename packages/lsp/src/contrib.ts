import {
  type ConfigContribution,
  type ContributedKeys,
  defineConfigSection,
  type EventFieldsOf,
  type SectionInputs,
  type SectionValues,
  trustRules,
  z,
} from "@toolbelt/core";
import { defineBuiltinEvents } from "@toolbelt/core/internal";

// The lsp family's config keys and events, light (zod and core types only) so the CLI validates configs
// without importing the language-server client.

export const EDIT_DIAGNOSTICS = ["off", "errors", "all"] as const;
export type EditDiagnostics = (typeof EDIT_DIAGNOSTICS)[number];
export const DEFAULT_EDIT_DIAGNOSTICS_TIMEOUT_MS = 10_000;
const MAX_EDIT_DIAGNOSTICS_TIMEOUT_MS = 120_000;

const lspServerSchema = z.strictObject({
  command: z.string(),
  args: z.array(z.string()).default([]),
  extensions: z.array(z.string()).default([]),
  env: z.record(z.string(), z.string()).optional(),
  initializationOptions: z.unknown().optional(),
  settings: z.unknown().optional(),
});
export type LspServerConfig = z.infer<typeof lspServerSchema>;

const keys = {
  lsp: {
    schema: z.record(z.string(), lspServerSchema).default({}).describe("Language servers by name"),
    trust: trustRules.eachEntry("starts a language-server command"),
  },
  "tools.edit.diagnostics": {
    schema: z
      .enum(EDIT_DIAGNOSTICS)
      .optional()
      .describe(
        'New problems a write introduced, from the file\'s language server: "errors" (the default: errors only, from a server already running; set explicitly, a write also starts the file\'s server), "all" (every severity), "off"',
      ),
    // Neutral: which servers may start is the lsp section's business, under its own trust rule.
    trust: trustRules.neutral,
  },
  "tools.edit.diagnostics_timeout_ms": {
    schema: z
      .number()
      .int()
      .positive()
      .max(MAX_EDIT_DIAGNOSTICS_TIMEOUT_MS)
      .optional()
      .describe(
        `Bounded wait of a write for its diagnostics (default ${DEFAULT_EDIT_DIAGNOSTICS_TIMEOUT_MS})`,
      ),
    trust: trustRules.atMost(DEFAULT_EDIT_DIAGNOSTICS_TIMEOUT_MS),
  },
} satisfies ContributedKeys;

export const lspConfig: ConfigContribution<typeof keys> = defineConfigSection({
  owner: "lsp",
  keys,
  docs: "Language servers to start, and whether writes report the new problems they introduced.",
});

/** How writes report new diagnostics: `tools.edit.diagnostics` and its bounded wait. */
export function editDiagnosticsSetting(config: Parameters<typeof lspConfig.read>[0]): {
  mode: EditDiagnostics;
  /** Set in config (not the default): a write may then start the file's server. */
  explicit: boolean;
  timeoutMs: number;
} {
  const { diagnostics, diagnostics_timeout_ms } = lspConfig.read(config);
  return {
    mode: diagnostics ?? "errors",
    explicit: diagnostics !== undefined,
    timeoutMs: diagnostics_timeout_ms ?? DEFAULT_EDIT_DIAGNOSTICS_TIMEOUT_MS,
  };
}

export const lspEvents = defineBuiltinEvents("lsp", {
  /**
   * A language server (or the in-process ts-morph fallback) is starting for a root, has started, or
   * could not start; sent in the call that needed it, so that call can show it as its progress.
   */
  lsp_server: {
    server: z.string(),
    root: z.string(),
    state: z.enum(["starting", "ready", "failed"]),
    /** Why it could not start (`failed` only). */
    error: z.string().optional(),
    /** How long the start took (`ready` and `failed`). */
    duration_ms: z.number().nonnegative().optional(),
  },
});

export const contributions = {
  config: [lspConfig],
  events: [lspEvents],
  // `edit`: the tools.edit entry carries this family's `diagnostics` settings.
  toolKeys: [
    "edit",
    "lsp",
    "lsp_call_hierarchy",
    "lsp_definition",
    "lsp_diagnostics",
    "lsp_document_symbols",
    "lsp_hover",
    "lsp_implementation",
    "lsp_references",
    "lsp_rename",
    "lsp_workspace_symbols",
  ],
};

type TopKeys = Pick<typeof keys, "lsp">;
type ToolFieldKeys = Omit<typeof keys, "lsp">;

declare module "@toolbelt/core" {
  interface ContributedConfig extends SectionValues<TopKeys> {}
  interface ContributedConfigInput extends SectionInputs<TopKeys> {}
  interface ContributedToolFields extends SectionValues<ToolFieldKeys> {}
  interface EventMap extends EventFieldsOf<typeof lspEvents> {}
}
