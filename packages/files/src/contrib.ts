import {
  type ConfigContribution,
  type ContributedKeys,
  defineConfigSection,
  type SectionValues,
  trustRules,
  z,
} from "@toolbelt/core";

// The files family's config key, light (zod and core types only) for config validation.

const keys = {
  "tools.search.engine": {
    schema: z
      .enum(["ripgrep", "js"])
      .optional()
      .describe("Pins the search_files engine (default: ripgrep when found)"),
    trust: trustRules.when((value, current) => value === current, "picks which search program runs"),
  },
} satisfies ContributedKeys;

export const filesConfig: ConfigContribution<typeof keys> = defineConfigSection({
  owner: "files",
  keys,
  docs: "Which program search_files runs.",
});

export const contributions = {
  config: [filesConfig],
  toolKeys: [
    "files",
    "read_file",
    "write_file",
    "list_files",
    "list_dir",
    "search_files",
    "aider_list_dir_tool",
  ],
};

declare module "@toolbelt/core" {
  interface ContributedToolFields extends SectionValues<typeof keys> {}
}
