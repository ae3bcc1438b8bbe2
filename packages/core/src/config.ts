import path from "node:path";
import { z } from "zod";
import { type BoundedFile, MAX_CONFIG_BYTES, readFileInRoot, readRegularFile } from "./bounded-read.js";
import { checkpointsConfigSchema } from "./checkpoints.js";
import { projectConfigFile } from "./config-paths.js";
import { type ConfigContribution, clash, contributedKeys } from "./contributions.js";
import { ToolbeltError } from "./errors.js";
import { rulesSchema } from "./rules.js";
import { serverConfigSchema } from "./server-settings.js";
import { OUTPUT_STRUCTURES } from "./text-format.js";
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

/** A `tools.*` entry; a family may add fields to one tool's entry (`tools.search.engine`). */
export { permissionEntry as permissionEntrySchema };

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
  /** Pages one read_file of a PDF returns (default and maximum of its `limit`). */
  pdfMaxPages: z.number().int().positive().default(100),
  /** The largest PDF read_file hands to the parser. */
  pdfMaxBytes: z
    .number()
    .int()
    .positive()
    .default(64 * 1024 * 1024),
  /** Wall-clock bound of one PDF read's parse (a separate process, killed when it runs out). */
  pdfTimeoutMs: z.number().int().positive().default(30_000),
  /** Memory the PDF parsing process may use (resident, and its JavaScript heap) before it is killed. */
  pdfMaxMemoryBytes: z
    .number()
    .int()
    .positive()
    .default(1024 * 1024 * 1024),
  /** Characters of one notebook cell output read_file shows; longer outputs are cut with a note. */
  notebookOutputMaxChars: z.number().int().positive().default(8_000),
  shellOutputMaxChars: z.number().int().positive().default(30_000),
  /**
   * Bytes of one command's output saved to a file when it is longer than a result shows (0: nothing
   * is saved); the session's read-only tools read it there (see saved-outputs.ts).
   */
  shellOutputSavedMaxBytes: z
    .number()
    .int()
    .nonnegative()
    .default(64 * 1024 * 1024),
  /** Bytes of saved output one session keeps in all: past it the oldest files are removed. */
  shellOutputSavedSessionMaxBytes: z
    .number()
    .int()
    .positive()
    .default(256 * 1024 * 1024),
  shellMaxSessions: z.number().int().positive().default(16),
});
export type Limits = z.infer<typeof limitsSchema>;

/** Core's own agent keys; families add theirs (contributions.ts). */
export const agentSchema = z.strictObject({
  shell_env: z
    .strictObject({ allow: z.array(z.string()).optional(), deny: z.array(z.string()).optional() })
    .optional()
    .describe("Environment of started commands: names or * globs to pass through (allow) or remove (deny)"),
  tool_search: z.union([z.boolean(), z.enum(["off", "on", "auto"])]).optional(),
  tool_search_threshold: z.number().positive().max(1).optional(),
  context_window_tokens: z.number().int().positive().optional(),
  allowed_tools: z.array(z.string()).optional(),
  workspace_mode: z.enum(["auto", "fixed"]).optional(),
  mode: z.enum(["act", "plan"]).optional(),
});
export type CoreAgentConfig = z.infer<typeof agentSchema>;

export const configSchema = z.strictObject({
  agent: agentSchema.default({}),
  // Other keys name a tool, family or plugin: only the session knows those, so it checks them once
  // plugins are loaded (checkToolKeys in permissions.ts). `file` covers the files and edit families.
  tools: z.object({ file: permissionEntry.optional() }).catchall(permissionEntry).default({}),
  // A fresh object for each config: no two configs share (and could change) one limits object.
  limits: limitsSchema.default(() => limitsSchema.parse({})),
  plugins: z.array(z.string()).default([]),
  /** Recording of every change tools make, and the opt-in undo tool (see checkpoints.ts). */
  checkpoints: checkpointsConfigSchema,
  /** Commands run before/after tool calls (see tool-hooks.ts); honoured only from trusted sources. */
  hooks: toolHooksConfigSchema,
  /** The serving process's bounds: sessions, requests, processes, idle expiry, stop (see server-settings.ts). */
  server: serverConfigSchema,
  /** How the model-facing text writes listings and search results (see text-format.ts). */
  toolOutput: z
    .strictObject({
      structure: z
        .enum(OUTPUT_STRUCTURES)
        .default("tree")
        .describe(
          'Listings and search results as an indented tree ("tree", the default) or one full path per row and `path:line: text` search rows ("flat")',
        ),
    })
    .default({ structure: "tree" }),
});

/**
 * Sections families and plugins contribute, for typing: a family augments these interfaces
 * (`declare module "@toolbelt/core" { interface ContributedConfig { lsp: ... } }`) beside the
 * `defineConfigSection` that validates them, so `config.lsp` stays typed where the family is imported.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled in by module augmentation
export interface ContributedConfig {}
// biome-ignore lint/suspicious/noEmptyInterface: filled in by module augmentation
export interface ContributedAgentConfig {}
// biome-ignore lint/suspicious/noEmptyInterface: filled in by module augmentation
export interface ContributedToolFields {}

type CoreConfig = z.infer<typeof configSchema>;
type ToolEntry = PermissionEntry & Partial<ContributedToolFields>;
export type ToolbeltConfig = Omit<CoreConfig, "agent" | "tools"> &
  ContributedConfig & {
    agent: CoreConfig["agent"] & ContributedAgentConfig;
    tools: Record<string, ToolEntry | undefined> & { file?: ToolEntry };
  };
// biome-ignore lint/suspicious/noEmptyInterface: filled in by module augmentation
export interface ContributedConfigInput {}
// biome-ignore lint/suspicious/noEmptyInterface: filled in by module augmentation
export interface ContributedAgentConfigInput {}

type CoreConfigInput = z.input<typeof configSchema>;
export type ToolbeltConfigInput = Omit<CoreConfigInput, "agent" | "tools"> &
  Partial<ContributedConfigInput> & {
    agent?: CoreConfigInput["agent"] & Partial<ContributedAgentConfigInput>;
    tools?: Record<string, ToolEntry | undefined>;
  };

export { CONFIG_FILE } from "./config-paths.js";

function describeIssue(issue: z.core.$ZodIssue): string {
  const where = issue.path.length ? issue.path.join(".") : "(top level)";
  if (issue.code === "unrecognized_keys") {
    const keys = issue.keys.map((k) => (issue.path.length ? `${where}.${k}` : k));
    return `unknown key${keys.length > 1 ? "s" : ""} ${keys.join(", ")}`;
  }
  return `${where}: ${issue.message}`;
}

// Top-level keys core owns: a contribution may not claim them.
const CORE_KEYS: ReadonlyMap<string, string> = new Map(
  [
    ...Object.keys(configSchema.shape),
    ...Object.keys(agentSchema.shape).map((k) => `agent.${k}`),
    ...Object.keys(permissionEntry.shape).map((k) => `tools.*.${k}`),
  ].map((k) => [k, "core"]),
);

const PARSED_WITH: unique symbol = Symbol("toolbelt.config.contributions");

/** The contributions a config was parsed with (none for a config built by hand). */
export function configContributionsOf(config: ToolbeltConfig): readonly ConfigContribution[] {
  return (config as { [PARSED_WITH]?: readonly ConfigContribution[] })[PARSED_WITH] ?? [];
}

// Found by the contributions in it, not by the array: the config loader (twice), createToolbelt and
// the session each build their own array of the same contributions, and composing is not cheap.
const composed: Array<{ contributions: readonly ConfigContribution[]; loose: boolean; schema: z.ZodType }> =
  [];
const MAX_COMPOSED = 16;

function sameItems<T>(a: readonly T[], b: readonly T[]): boolean {
  return a.length === b.length && a.every((item, i) => item === b[i]);
}

export interface ParseOptions {
  /**
   * `allow`: top-level sections nobody contributed pass through unchecked. Only for reading the
   * plugin list before the plugins (and their sections) are loaded; the config is then parsed again.
   */
  unknownSections?: "allow";
}

/**
 * One strict schema: core's keys plus every contribution's (`agent.NAME` into the agent section,
 * `tools.TOOL.FIELD` into that tool's entry, other names at the top). Unknown keys stay errors; a
 * key two owners claim is refused (EPLUGIN) naming both.
 */
export function composeConfigSchema(
  contributions: readonly ConfigContribution[] = [],
  options: ParseOptions = {},
): z.ZodType {
  const loose = options.unknownSections === "allow";
  const cached = composed.find((c) => c.loose === loose && sameItems(c.contributions, contributions));
  if (cached) return cached.schema;
  const keys = contributedKeys(contributions, CORE_KEYS);
  const agent: Record<string, z.ZodType> = { ...agentSchema.shape };
  const top: Record<string, z.ZodType> = { ...configSchema.shape };
  const toolFields = new Map<string, Record<string, z.ZodType>>();
  for (const [name, { key }] of keys) {
    const [head, second, third] = name.split(".");
    if (head === "agent" && second) agent[second] = key.schema;
    else if (head === "tools" && second && third) {
      if (CORE_KEYS.has(`tools.*.${third}`))
        throw clash("config key", name, "core", keys.get(name)?.owner ?? "?");
      toolFields.set(second, { ...toolFields.get(second), [third]: key.schema });
    } else top[name] = key.schema;
  }
  const tools: Record<string, z.ZodType> = { file: permissionEntry.optional() };
  for (const [tool, fields] of toolFields) tools[tool] = permissionEntry.extend(fields).optional();
  top.agent = z.strictObject(agent).default({});
  top.tools = z.object(tools).catchall(permissionEntry).default({});
  const schema = loose ? z.looseObject(top) : z.strictObject(top);
  if (composed.push({ contributions: [...contributions], loose, schema }) > MAX_COMPOSED) composed.shift();
  return schema;
}

/**
 * Validates a config object; an error names every failing key and what was expected. Without
 * `contributions` only core's keys are known: the CLI and createToolbelt pass every built-in
 * family's and plugin's, a hand-built Session those of its plugins.
 */
export function parseConfig(
  input: unknown,
  source = "config",
  contributions: readonly ConfigContribution[] = [],
  options: ParseOptions = {},
): ToolbeltConfig {
  const schema =
    contributions.length === 0 && !options.unknownSections
      ? configSchema
      : composeConfigSchema(contributions, options);
  const result = schema.safeParse(input ?? {});
  if (result.success) {
    // Kept on the parsed config (hidden from JSON and equality) so a later re-parse, such as
    // switch_project's, knows the same sections without being handed them again.
    Object.defineProperty(result.data, PARSED_WITH, { value: contributions, enumerable: false });
    return result.data as ToolbeltConfig;
  }
  const problems = result.error.issues.map(describeIssue);
  throw new ToolbeltError("EINVAL_CONFIG", `invalid ${source}: ${problems.join("; ")}`, {
    details: { source, problems },
  });
}

export interface ReadConfigOptions {
  /** A missing file is `undefined`, not an error. */
  optional?: boolean;
  /**
   * The project root the file belongs to, when it is read with an untrusted project's rights: its
   * real path must then stay inside that root, so a symlink leaving the project is refused, never
   * followed. Without it a symlink is followed (the user's own files, a trusted project's).
   */
  within?: string;
}

/**
 * A config file's text: opened without blocking (a FIFO cannot hang a start), only a regular file
 * (not /dev/zero or a socket), at most MAX_CONFIG_BYTES of it. Every refusal is EINVAL_CONFIG naming
 * the file; its `cause` keeps the reader's error (`code` ENOENT for a missing file).
 */
function readJson(file: string, within?: string): unknown {
  let read: BoundedFile;
  try {
    read =
      within === undefined
        ? readRegularFile(file, { maxBytes: MAX_CONFIG_BYTES })
        : readFileInRoot(within, file, { maxBytes: MAX_CONFIG_BYTES });
  } catch (error) {
    const reason = ToolbeltError.isInstance(error) ? error.details.reason : undefined;
    const why =
      reason === "outside_root"
        ? `it points outside the project ${within}, and an untrusted project's config must stay inside it (not followed)`
        : (error as Error).message;
    throw new ToolbeltError("EINVAL_CONFIG", `cannot read config ${file}: ${why}`, {
      cause: error,
      details: { file, ...(reason !== undefined ? { reason } : {}) },
    });
  }
  if (read.truncated)
    throw new ToolbeltError(
      "EINVAL_CONFIG",
      `config ${file} is larger than ${MAX_CONFIG_BYTES} bytes (1 MiB), the limit for a config file; not read`,
      { details: { file, limit: MAX_CONFIG_BYTES, size: read.size, reason: "too_large" } },
    );
  const text = read.bytes.toString("utf8");
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

/**
 * A config file's JSON (unvalidated); with `optional`, a missing file is `undefined`, not an error.
 * With `within`, the file must stay inside that project root (see ReadConfigOptions).
 */
export function readConfigFile(file: string, options: ReadConfigOptions = {}): unknown {
  try {
    return readJson(file, options.within);
  } catch (error) {
    const cause = (error as ToolbeltError).cause as { code?: unknown } | undefined;
    if (options.optional && cause?.code === "ENOENT") return undefined;
    throw error;
  }
}

/**
 * Loads `configs/app.json` from the root (if present) and then `file` (if given) on top of it, every
 * layer with full rights: callers that weigh project trust use `loadTrustedConfig`.
 * Objects merge key by key; arrays and scalars in the later file win, except permission rules, which
 * add up (`mergeConfig`).
 */
export function loadConfig(
  root: string,
  options: { file?: string; overrides?: unknown; contributions?: readonly ConfigContribution[] } = {},
): ToolbeltConfig {
  const layers: Array<{ value: unknown; source: string }> = [];
  const projectFile = projectConfigFile(root);
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
    parseConfig(layer.value, layer.source, options.contributions);
    merged = mergeConfig(merged, layer.value);
  }
  return parseConfig(merged, layers.at(-1)?.source ?? "config", options.contributions);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * One layer of config on top of another: objects merge key by key, and a later value replaces an
 * earlier one, except permission rules (`tools.*.rules.{allow,ask,deny}`), which add up across
 * layers, so no layer can drop another's deny or ask rule by naming rules of its own.
 */
export function mergeConfig(base: unknown, over: unknown): unknown {
  const merged = mergeDeep(base, over);
  const tools = (v: unknown) => (isPlainObject(v) && isPlainObject(v.tools) ? v.tools : {});
  const before = tools(base);
  for (const [name, entry] of Object.entries(tools(over))) {
    const earlier = before[name];
    if (!isPlainObject(entry) || !isPlainObject(entry.rules)) continue;
    if (!isPlainObject(earlier) || !isPlainObject(earlier.rules)) continue;
    const rules = ((tools(merged)[name] as Record<string, unknown>).rules ?? {}) as Record<string, unknown>;
    for (const kind of ["allow", "ask", "deny"]) {
      const a = earlier.rules[kind];
      const b = entry.rules[kind];
      if (Array.isArray(a) && Array.isArray(b)) rules[kind] = [...new Set([...a, ...b])];
    }
  }
  return merged;
}

export function mergeDeep(base: unknown, over: unknown): unknown {
  if (!isPlainObject(base) || !isPlainObject(over)) return over === undefined ? base : over;
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) out[key] = mergeDeep(base[key], value);
  return out;
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
