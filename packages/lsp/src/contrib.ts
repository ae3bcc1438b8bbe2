import {
  type ConfigContribution,
  type ContributedKeys,
  defineConfigSection,
  type SectionInputs,
  type SectionValues,
  trustRules,
  z,
} from "@toolbelt/core";

// The lsp family's config keys, light (zod and core types only) so the CLI validates configs
// without importing the language-server client.

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
  lsp_diagnostics_after_edit: {
    schema: z.boolean().optional().describe("Append the language server's diagnostics to every edit result"),
    trust: trustRules.neutral,
  },
} satisfies ContributedKeys;

export const lspConfig: ConfigContribution<typeof keys> = defineConfigSection({
  owner: "lsp",
  keys,
  docs: "Language servers to start, and whether edits report their diagnostics.",
});

export const contributions = {
  config: [lspConfig],
  toolKeys: [
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

declare module "@toolbelt/core" {
  interface ContributedConfig extends SectionValues<typeof keys> {}
  interface ContributedConfigInput extends SectionInputs<typeof keys> {}
}
