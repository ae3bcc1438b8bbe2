import os from "node:os";
import {
  type ConfigContribution,
  type ContributedKeys,
  DROP,
  defineConfigSection,
  type EventFieldsOf,
  type RuleSubjects,
  type SectionInputs,
  type SectionValues,
  type ToolbeltConfig,
  trustRules,
  z,
} from "@toolbelt/core";
import { defineBuiltinEvents } from "@toolbelt/core/internal";

export type SandboxMode = "required" | "best-effort" | "off";

/** `agent.shell_sandbox` as a mode (`true` is best-effort, `false` off, unset best-effort). */
export function sandboxMode(config: Pick<ToolbeltConfig, "agent">): SandboxMode {
  const v = (config.agent as { shell_sandbox?: boolean | SandboxMode }).shell_sandbox;
  if (v === undefined || v === true) return "best-effort";
  if (v === false) return "off";
  return v;
}

// What the shell family adds to config and events. Light on purpose (zod and core types only): the
// CLI loads it to validate a config without importing the shell implementation.

const STRICTNESS: Record<SandboxMode, number> = { off: 0, "best-effort": 1, required: 2 };
/** Processes one sandboxed command may run at once unless agent.shell_max_processes says. */
export const DEFAULT_MAX_PROCESSES = 1024;
/**
 * Memory one command may use unless agent.shell_max_memory_mib says: three quarters of the machine's,
 * so a runaway command is killed before it takes toolbelt and the rest of the machine down with it.
 */
export const DEFAULT_MAX_MEMORY_MIB = Math.max(256, Math.floor((os.totalmem() * 0.75) / 2 ** 20));
/** The size one file a command writes may reach unless agent.shell_max_file_mib says. */
export const DEFAULT_MAX_FILE_MIB = 4096;

const keys = {
  "agent.shell_sandbox": {
    schema: z
      .union([z.boolean(), z.enum(["required", "best-effort", "off"])])
      .optional()
      .describe("Landlock sandbox for the shell: required | best-effort | off (true = best-effort)"),
    trust: (value, ctx) => {
      const wanted = sandboxMode({ agent: { shell_sandbox: value } } as never);
      const current = sandboxMode(ctx.base);
      if (STRICTNESS[wanted] >= STRICTNESS[current]) return value;
      ctx.ignore(ctx.key, `loosens the shell sandbox (${current} → ${wanted})`);
      return DROP;
    },
  },
  "agent.shell_sandbox_allowed_paths": {
    schema: z.array(z.string()).optional(),
    trust: trustRules.subsetOfCurrent("makes more paths writable to sandboxed commands"),
  },
  "agent.shell_sandbox_confine_reads": {
    schema: z
      .boolean()
      .optional()
      .describe("Sandboxed commands read only the root, system and toolchain paths (default true)"),
    // Reads are confined by default, so only the user's own `false` lets a project's `false` through.
    trust: trustRules.when(
      (value, current) => value !== false || current === false,
      "lets sandboxed commands read outside the confined paths",
    ),
  },
  "agent.shell_sandbox_read_paths": {
    schema: z
      .array(z.string())
      .optional()
      .describe("Extra paths sandboxed commands may read (not write) while reads are confined"),
    trust: trustRules.subsetOfCurrent("makes more paths readable to sandboxed commands"),
  },
  "agent.shell_max_processes": {
    schema: z
      .number()
      .int()
      .positive()
      .optional()
      .describe("Processes (and threads) one sandboxed command may run at once; default 1024"),
    trust: trustRules.atMost(DEFAULT_MAX_PROCESSES),
  },
  "agent.shell_max_memory_mib": {
    schema: z
      .number()
      .int()
      .positive()
      .optional()
      .describe("MiB of memory one command may use (cgroup); default three quarters of the machine's"),
    trust: trustRules.atMost(DEFAULT_MAX_MEMORY_MIB),
  },
  "agent.shell_max_file_mib": {
    schema: z
      .number()
      .int()
      .positive()
      .optional()
      .describe("MiB one file written by a command may reach (RLIMIT_FSIZE); default 4096"),
    trust: trustRules.atMost(DEFAULT_MAX_FILE_MIB),
  },
  "agent.shell_network": {
    schema: z
      .enum(["on", "off"])
      .optional()
      .describe("off: commands and language servers run without network (or not at all: fails closed)"),
    trust: trustRules.when(
      (value, current) => value === "off" || current !== "off",
      "turns the network back on for sandboxed commands",
    ),
  },
} satisfies ContributedKeys;

export const shellConfig: ConfigContribution<typeof keys> = defineConfigSection({
  owner: "shell",
  keys,
  docs: "The shell's sandbox: Landlock mode, writable and readable paths, process cap, network.",
});

export const shellEvents = defineBuiltinEvents("shell", {
  /** Output of a running command, batched; foreground and background alike. */
  shell_output: { shell_id: z.string(), data: z.string() },
});

export const contributions = {
  config: [shellConfig],
  events: [shellEvents],
  toolKeys: ["shell", "shell_session", "shell_session_tool", "aider_shell_tool"],
  // The parser the shell tools judge command lines with, loaded only when a rule carries examples.
  parseCommandLine: async (commandLine: string): Promise<RuleSubjects> =>
    (await import("./command-rules.js")).commandLineParts(commandLine),
};

declare module "@toolbelt/core" {
  interface ContributedAgentConfig extends SectionValues<typeof keys> {}
  interface ContributedAgentConfigInput extends SectionInputs<typeof keys> {}
  interface EventMap extends EventFieldsOf<typeof shellEvents> {}
}
