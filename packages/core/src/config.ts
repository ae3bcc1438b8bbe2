import { readFileSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { checkpointsConfigSchema } from "./checkpoints.js";
import { ToolbeltError } from "./errors.js";
import { rulesSchema } from "./rules.js";
import { toolHooksConfigSchema } from "./tool-hooks.js";

export const EDIT_BACKENDS = ["edit_file", "search_replace_block", "structured_patch"] as const;
export type EditBackend = (typeof EDIT_BACKENDS)[number];

export const PERMISSION_MODES = ["allow", "ask", "deny"] as const;
export type PermissionMode = (typeof PERMISSION_MODES)[number];

const permissionEntry = z.strictObject({
  enabled: z.boolean().optional(),
  mode: z.enum(PERMISSION_MODES).optional(),
  /** Regexes over root-relative paths; when present, a path must match one of them. */
  allowlist: z.array(z.string()).optional(),
  /** Permission rules `{ allow, ask, deny }` of `verb(pattern)` strings (see rules.ts). */
  rules: rulesSchema.optional(),
});
export type PermissionEntry = z.infer<typeof permissionEntry>;

const searchEntry = permissionEntry.extend({ engine: z.enum(["ripgrep", "js"]).optional() });

export const limitsSchema = z.strictObject({
  fileReadMaxLines: z.number().int().positive().default(10_000),
  fileReadMaxLineChars: z.number().int().positive().default(2_000),
  /** Bytes of numbered text one read_file returns: 10,000 lines of 2,000 chars would be 19 MB. */
  fileReadMaxBytes: z
    .number()
    .int()
    .positive()
    .default(256 * 1024),
  fileReadMaxImageBytes: z
    .number()
    .int()
    .positive()
    .default(4 * 1024 * 1024),
  fileListMaxEntries: z.number().int().positive().default(500),
  fileSearchMaxMatches: z.number().int().positive().default(100),
  fileSearchMaxBytes: z
    .number()
    .int()
    .positive()
    .default(1024 * 1024),
  fileWriteMaxBytes: z
    .number()
    .int()
    .positive()
    .default(2 * 1024 * 1024),
  /** The largest file any write may leave (see write-size.ts: fileWriteMaxBytes bounds what is sent). */
  fileMaxBytes: z
    .number()
    .int()
    .positive()
    .default(64 * 1024 * 1024),
  shellOutputMaxChars: z.number().int().positive().default(30_000),
  shellMaxSessions: z.number().int().positive().default(16),
});
export type Limits = z.infer<typeof limitsSchema>;

/** Core's own agent keys; families add theirs (contributions.ts). */
export const agentSchema = z.strictObject({
      edit_tool: z
        .enum([...EDIT_BACKENDS, ""])
        .optional()
        .describe("Pins the edit tool; unset or empty follows the model"),
      shell_sandbox: z
        .union([z.boolean(), z.enum(["required", "best-effort", "off"])])
        .optional()
        .describe("Landlock sandbox for the shell: required | best-effort | off (true = best-effort)"),
      shell_sandbox_allowed_paths: z.array(z.string()).optional(),
      shell_sandbox_confine_reads: z
        .boolean()
        .optional()
        .describe("Sandboxed commands read only the root, system and toolchain paths (default true)"),
      shell_sandbox_read_paths: z
        .array(z.string())
        .optional()
        .describe("Extra paths sandboxed commands may read (not write) while reads are confined"),
      shell_env: z
        .strictObject({ allow: z.array(z.string()).optional(), deny: z.array(z.string()).optional() })
        .optional()
        .describe(
          "Environment of started commands: names or * globs to pass through (allow) or remove (deny)",
        ),
      shell_max_processes: z
        .number()
        .int()
        .positive()
        .optional()
        .describe("Processes (and threads) one sandboxed command may run at once; default 1024"),
      shell_network: z
        .enum(["on", "off"])
        .optional()
        .describe("off: commands and language servers run without network (or not at all: fails closed)"),
      tool_search: z.union([z.boolean(), z.enum(["off", "on", "auto"])]).optional(),
      tool_search_threshold: z.number().positive().max(1).optional(),
      context_window_tokens: z.number().int().positive().optional(),
      allowed_tools: z.array(z.string()).optional(),
      workspace_mode: z.enum(["auto", "fixed"]).optional(),
      mode: z.enum(["act", "plan"]).optional(),
});

export const configSchema = z.strictObject({
  agent: agentSchema.default({}),
  // Other keys name a tool, family or plugin: only the session knows those, so it checks them once
  // plugins are loaded (checkToolKeys in permissions.ts). `file` covers the files and edit families.
  tools: z
    .object({ file: permissionEntry.optional(), search: searchEntry.optional() })
    .catchall(permissionEntry)
    .default({}),
  limits: limitsSchema.default(limitsSchema.parse({})),
  projects: z.array(projectSchema).default([]),
  lsp: z.record(z.string(), lspServerSchema).default({}),
  lsp_diagnostics_after_edit: z.boolean().optional(),
  mcpServers: z.record(z.string(), mcpServerSchema).default({}),
  plugins: z.array(z.string()).default([]),
  /** Recording of every change tools make, and the opt-in undo tool (see checkpoints.ts). */
  checkpoints: checkpointsConfigSchema,
  /** Commands run before/after tool calls (see tool-hooks.ts); honoured only from trusted sources. */
  hooks: toolHooksConfigSchema,
});

export type ToolbeltConfig = z.infer<typeof configSchema>;
export type ToolbeltConfigInput = z.input<typeof configSchema>;

/** The default location of a project's config, relative to the root. */
export const CONFIG_FILE = path.join("configs", "app.json");

function describeIssue(issue: z.core.$ZodIssue): string {
  const where = issue.path.length ? issue.path.join(".") : "(top level)";
  if (issue.code === "unrecognized_keys") {
    const keys = issue.keys.map((k) => (issue.path.length ? `${where}.${k}` : k));
    return `unknown key${keys.length > 1 ? "s" : ""} ${keys.join(", ")}`;
  }
  return `${where}: ${issue.message}`;
}

/** Validates a config object; an error names every failing key and what was expected. */
export function parseConfig(input: unknown, source = "config"): ToolbeltConfig {
  const result = configSchema.safeParse(input ?? {});
  if (result.success) return result.data;
  const problems = result.error.issues.map(describeIssue);
  throw new ToolbeltError("EINVAL_CONFIG", `invalid ${source}: ${problems.join("; ")}`, {
    details: { source, problems },
  });
}

function readJson(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new ToolbeltError("EINVAL_CONFIG", `cannot read config ${file}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ToolbeltError(
      "EINVAL_CONFIG",
      `config ${file} is not valid JSON: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  }
}

/** A config file's JSON (unvalidated); with `optional`, a missing file is `undefined`, not an error. */
export function readConfigFile(file: string, options: { optional?: boolean } = {}): unknown {
  try {
    return readJson(file);
  } catch (error) {
    const cause = (error as ToolbeltError).cause as NodeJS.ErrnoException | undefined;
    if (options.optional && cause?.code === "ENOENT") return undefined;
    throw error;
  }
}

/**
 * Loads `configs/app.json` from the root (if present) and then `file` (if given) on top of it, every
 * layer with full rights: callers that weigh project trust use `loadTrustedConfig`.
 * Objects merge key by key; arrays and scalars in the later file win.
 */
export function loadConfig(
  root: string,
  options: { file?: string; overrides?: unknown } = {},
): ToolbeltConfig {
  const layers: Array<{ value: unknown; source: string }> = [];
  const projectFile = path.join(root, CONFIG_FILE);
  try {
    layers.push({ value: readJson(projectFile), source: projectFile });
  } catch (error) {
    const cause = (error as ToolbeltError).cause as NodeJS.ErrnoException | undefined;
    if (cause?.code !== "ENOENT") throw error;
  }
  if (options.file) layers.push({ value: readJson(path.resolve(options.file)), source: options.file });
  if (options.overrides) layers.push({ value: options.overrides, source: "options" });
  let merged: unknown = {};
  for (const layer of layers) {
    parseConfig(layer.value, layer.source);
    merged = mergeDeep(merged, layer.value);
  }
  return parseConfig(merged, layers.at(-1)?.source ?? "config");
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function mergeDeep(base: unknown, over: unknown): unknown {
  if (!isPlainObject(base) || !isPlainObject(over)) return over === undefined ? base : over;
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) out[key] = mergeDeep(base[key], value);
  return out;
}

export type SandboxMode = "required" | "best-effort" | "off";

export function sandboxMode(config: ToolbeltConfig): SandboxMode {
  const v = config.agent.shell_sandbox;
  if (v === undefined || v === true) return "best-effort";
  if (v === false) return "off";
  return v;
}

export type ToolSearchMode = "off" | "on" | "auto";

export function toolSearchMode(config: ToolbeltConfig): ToolSearchMode {
  const v = config.agent.tool_search;
  // On by default: auto costs nothing until deferrable schemas outgrow their share of the context.
  if (v === undefined) return "auto";
  if (v === false) return "off";
  if (v === true) return "on";
  return v;
}
