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
  type TrustContext,
  trustRules,
  z,
} from "@toolbelt/core";
import { defineBuiltinEvents } from "@toolbelt/core/internal";
import {
  type AllowEntry,
  canonicalIp,
  covers,
  isIpAddress,
  parseAllowEntry,
  parseTarget,
} from "./network-allow.js";

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

/** Entries one allow list may hold: each is checked on every connection. */
const MAX_ALLOW_ENTRIES = 256;

const allowEntry = z.string().superRefine((text, ctx) => {
  const entry = parseAllowEntry(text);
  if (typeof entry === "string") ctx.addIssue({ code: "custom", message: entry });
});

const hostsMap = z.record(z.string(), z.string()).superRefine((map, ctx) => {
  for (const [name, ip] of Object.entries(map)) {
    const target = parseTarget(name);
    if (typeof target === "string" || target.kind !== "name")
      ctx.addIssue({
        code: "custom",
        message: `hosts: ${JSON.stringify(name)} is not a host name`,
        path: [name],
      });
    if (!isIpAddress(ip))
      ctx.addIssue({
        code: "custom",
        message: `hosts: ${JSON.stringify(ip)} is not an IP address`,
        path: [name],
      });
  }
});

/** `agent.shell_network` as an object: only the listed hosts, through toolbelt's proxy. */
const networkAllow = z.strictObject({
  allow: z
    .array(allowEntry)
    .max(MAX_ALLOW_ENTRIES)
    .describe(
      'Hosts commands may reach through toolbelt\'s proxy: "host", "*.domain" (its subdomains), an IP ("10.0.0.5", "[::1]"), each with ":port" or ports 80 and 443',
    ),
  hosts: hostsMap
    .optional()
    .describe("Names the proxy resolves to these addresses instead of asking DNS (like /etc/hosts)"),
});

export type NetworkSetting = "on" | "off" | z.output<typeof networkAllow>;

/** What `agent.shell_network` asks for: on, off, or only the listed hosts. */
export type NetworkMode =
  | { kind: "on" }
  | { kind: "off" }
  | { kind: "allow"; entries: AllowEntry[]; hosts: Readonly<Record<string, string>> };

export function networkMode(config: Pick<ToolbeltConfig, "agent">): NetworkMode {
  const v = (config.agent as { shell_network?: NetworkSetting }).shell_network;
  if (v === undefined || v === "on") return { kind: "on" };
  if (v === "off") return { kind: "off" };
  const hosts: Record<string, string> = {};
  for (const [name, ip] of Object.entries(v.hosts ?? {}))
    hosts[(parseTarget(name) as { host: string }).host] = canonicalIp(ip);
  return { kind: "allow", entries: v.allow.map((e) => parseAllowEntry(e) as AllowEntry), hosts };
}

/**
 * What an untrusted project's agent.shell_network may do: turn the network off, or narrow it to a
 * list within what the user allows (every entry covered by one of theirs; "on" allows anything). It
 * may not turn it on, nor list a host the user's list does not cover, nor map names to addresses.
 */
function networkTrust(value: unknown, ctx: TrustContext): unknown {
  const current = networkMode({ agent: { shell_network: ctx.current } } as never);
  if (value === "off") return value;
  if (value === "on" || value === undefined) {
    if (current.kind === "on") return value;
    ctx.ignore(ctx.key, "turns the network back on for sandboxed commands");
    return DROP;
  }
  if (current.kind === "off") {
    ctx.ignore(ctx.key, "lets sandboxed commands reach the listed hosts over the user's off");
    return DROP;
  }
  const theirs = value as z.output<typeof networkAllow>;
  if (Object.keys(theirs.hosts ?? {}).length > 0)
    ctx.ignore(`${ctx.key}.hosts`, "maps host names to addresses of the project's choosing");
  const allow = theirs.allow.filter((text, i) => {
    const entry = parseAllowEntry(text) as AllowEntry;
    if (current.kind === "on" || current.entries.some((mine) => covers(mine, entry))) return true;
    ctx.ignore(`${ctx.key}.allow[${i}]`, `${text} is not within the user's agent.shell_network.allow`);
    return false;
  });
  return { allow };
}

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
      .union([z.enum(["on", "off"]), networkAllow])
      .optional()
      .describe(
        "off: commands and language servers run without network (or not at all: fails closed); { allow: [...] }: commands reach only the listed hosts, through a proxy",
      ),
    trust: networkTrust,
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
