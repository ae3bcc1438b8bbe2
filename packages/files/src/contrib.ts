import {
  type ConfigContribution,
  type ContributedKeys,
  defineConfigSection,
  type EventFieldsOf,
  type SectionValues,
  trustRules,
  z,
} from "@toolbelt/core";
import { defineBuiltinEvents } from "@toolbelt/core/internal";

// The files family's config key and events, light (zod and core types only) for config validation.

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

export const filesEvents = defineBuiltinEvents("files", {
  /**
   * What a running search_files call found so far (`call_id` is the call's): files with matches and
   * their matching lines, before the cap, a few times a second at most.
   */
  search_progress: { call_id: z.string(), files: z.number().int(), matches: z.number().int() },
});

export const contributions = {
  config: [filesConfig],
  events: [filesEvents],
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
  interface EventMap extends EventFieldsOf<typeof filesEvents> {}
}
