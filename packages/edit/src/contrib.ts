import {
  type ConfigContribution,
  type ContributedKeys,
  defineConfigSection,
  type EditBackend,
  type SectionInputs,
  type SectionValues,
  trustRules,
  z,
} from "@toolbelt/core";
import { EDIT_BACKENDS } from "@toolbelt/core/internal";

// The edit family's config key and its choice of backend, light (zod and core types only).

const keys = {
  "agent.edit_tool": {
    schema: z
      .enum([...EDIT_BACKENDS, ""])
      .optional()
      .describe("Pins the edit tool; unset or empty follows the model"),
    trust: trustRules.neutral,
  },
} satisfies ContributedKeys;

export const editConfig: ConfigContribution<typeof keys> = defineConfigSection({
  owner: "edit",
  keys,
  docs: "Which of the three edit backends the session binds.",
});

/** The edit backend a model works best with. */
export function editBackendForModel(model: string | undefined): EditBackend {
  if (!model) return "edit_file";
  const m = model.toLowerCase();
  if (m.includes("claude")) return "search_replace_block";
  if (/(^|[^a-z])(gpt-5|gpt-4|o\d|codex)/.test(m)) return "structured_patch";
  return "edit_file";
}

export const contributions = {
  config: [editConfig],
  // An empty edit_tool follows the model, as the reference profiles' spec says.
  chooseEditBackend: ({
    model,
    config,
  }: {
    model: string | undefined;
    config: Parameters<typeof editConfig.read>[0];
  }) => editConfig.read(config).edit_tool || editBackendForModel(model),
  toolKeys: [
    "edit",
    "edit_file",
    "search_replace_block",
    "structured_patch",
    "file_edit_tool",
    "aider_edit_block_tool",
    "notebook_edit",
  ],
};

declare module "@toolbelt/core" {
  interface ContributedAgentConfig extends SectionValues<typeof keys> {}
  interface ContributedAgentConfigInput extends SectionInputs<typeof keys> {}
}
