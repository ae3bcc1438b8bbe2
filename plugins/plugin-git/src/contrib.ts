import {
  type ConfigContribution,
  type ContributedKeys,
  DROP,
  defineConfigSection,
  defineEvents,
  type EventFieldsOf,
  type SectionInputs,
  type SectionValues,
  z,
} from "@toolbelt/core";

/** Output kept per call unless `git.max_output_bytes` says otherwise. */
export const DEFAULT_MAX_BYTES = 64 * 1024;
/** Commits git_log shows unless the call or `git.log_max_count` says otherwise. */
export const DEFAULT_LOG_COUNT = 20;

const gitSection = z
  .strictObject({
    max_output_bytes: z
      .number()
      .int()
      .min(1024)
      .max(1024 * 1024)
      .default(DEFAULT_MAX_BYTES)
      .describe("Bytes of git output one call returns (1 KiB to 1 MiB, default 64 KiB)"),
    log_max_count: z
      .number()
      .int()
      .min(1)
      .max(200)
      .default(DEFAULT_LOG_COUNT)
      .describe("Commits git_log shows when the call does not say (default 20)"),
  })
  .default({ max_output_bytes: DEFAULT_MAX_BYTES, log_max_count: DEFAULT_LOG_COUNT });

const keys = {
  git: {
    schema: gitSection,
    // Both only bound output: an untrusted project may lower them, never raise them.
    trust: (value, ctx) => {
      if (typeof value !== "object" || value === null) return DROP;
      const current = (ctx.current ?? {}) as Record<string, number | undefined>;
      const defaults: Record<string, number> = {
        max_output_bytes: DEFAULT_MAX_BYTES,
        log_max_count: DEFAULT_LOG_COUNT,
      };
      const kept: Record<string, unknown> = {};
      for (const [name, n] of Object.entries(value)) {
        const limit = current[name] ?? defaults[name];
        if (typeof n === "number" && limit !== undefined && n <= limit) kept[name] = n;
        else ctx.ignore(`git.${name}`, `raises a limit (${limit} → ${String(n)})`);
      }
      return kept;
    },
  },
} satisfies ContributedKeys;

export const gitConfig: ConfigContribution<typeof keys> = defineConfigSection({
  owner: "git",
  keys,
  docs: "How much output the git tools return.",
});

/** `git/output_truncated`: a call's output went over `git.max_output_bytes`. */
export const gitEvents = defineEvents("git", {
  output_truncated: {
    command: z.string(),
    dropped_bytes: z.number().int().nonnegative(),
    cap: z.number().int(),
  },
});

export const contributions = { config: [gitConfig], events: [gitEvents] };

declare module "@toolbelt/core" {
  interface ContributedConfig extends SectionValues<typeof keys> {}
  interface ContributedConfigInput extends SectionInputs<typeof keys> {}
  interface EventMap extends EventFieldsOf<typeof gitEvents> {}
}
