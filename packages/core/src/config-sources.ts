import path from "node:path";
import {
  mergeConfig,
  type ParseOptions,
  type PermissionMode,
  parseConfig,
  readConfigFile,
  type ToolbeltConfig,
} from "./config.js";
import { CONFIG_FILE, projectConfigFile, userConfigFile } from "./config-paths.js";
import { type ConfigContribution, DROP, type TrustRule } from "./contributions.js";
import { recordRuleLayers } from "./rules.js";
import { serverSettings, serverValueTightens } from "./server-settings.js";
import type { TrustInfo } from "./trust.js";
import { type ProjectTrustOptions, projectTrust, userConfigDir, userDirInside } from "./trust-store.js";

/** One source of settings; only a trusted one may loosen policy or name code to run. */
export interface ConfigLayer {
  value: unknown;
  source: string;
  trusted: boolean;
}

export interface IgnoredSetting {
  /** Dotted key, e.g. `tools.shell.mode`. */
  key: string;
  source: string;
  why: string;
}

// Keys that change how a run looks or is bounded but grant nothing: an untrusted project may set them.
// Families declare the rules of their own keys with the keys (contributions.ts).
const NEUTRAL_AGENT_KEYS = new Set(["tool_search", "tool_search_threshold", "context_window_tokens"]);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function subset(items: unknown, of: readonly unknown[] | undefined): boolean {
  return Array.isArray(items) && items.every((item) => (of ?? []).includes(item));
}

/**
 * What an untrusted layer may set on top of `base` (the trusted layers below it, merged and parsed):
 * the keys that tighten policy or are neutral. Everything else comes back in `ignored`, with why.
 */
export function untrustedPart(
  value: unknown,
  base: ToolbeltConfig,
  source: string,
  contributions: readonly ConfigContribution[] = [],
): { allowed: Record<string, unknown>; ignored: IgnoredSetting[] } {
  const rules = trustRulesOf(contributions);
  const allowed: Record<string, unknown> = {};
  const ignored: IgnoredSetting[] = [];
  const ignore = (key: string, why: string) => ignored.push({ key, source, why });
  if (!isRecord(value)) return { allowed, ignored };

  for (const [top, v] of Object.entries(value)) {
    switch (top) {
      case "agent":
        if (isRecord(v)) allowed.agent = agentPart(v, base, ignore, rules);
        break;
      case "tools":
        if (isRecord(v)) allowed.tools = toolsPart(v, base, ignore, rules);
        break;
      case "limits":
        if (isRecord(v)) {
          const limits: Record<string, unknown> = {};
          for (const [k, n] of Object.entries(v)) {
            const current = (base.limits as Record<string, number | undefined>)[k];
            if (typeof n === "number" && current !== undefined && n <= current) limits[k] = n;
            else ignore(`limits.${k}`, `raises a limit (${current} → ${String(n)})`);
          }
          allowed.limits = limits;
        }
        break;
      case "server":
        if (isRecord(v)) {
          const server: Record<string, unknown> = {};
          const current = serverSettings(base.server) as Record<string, number>;
          for (const [k, n] of Object.entries(v)) {
            if (current[k] !== undefined && serverValueTightens(k, n, current[k])) server[k] = n;
            else ignore(`server.${k}`, `raises a server bound (${current[k]} → ${String(n)})`);
          }
          allowed.server = server;
        }
        break;
      case "plugins":
        for (const spec of Array.isArray(v) ? v : []) ignore(`plugins`, `imports and runs ${String(spec)}`);
        break;
      case "hooks":
        ignoreHookCommands(v, ignore);
        break;
      case "toolOutput":
        // How text looks, nothing it grants or runs: an untrusted project may choose it.
        allowed.toolOutput = v;
        break;
      default:
        applyContributed(allowed, top, top, v, rules, base, ignore);
    }
  }
  return { allowed, ignored };
}

/** A contributed key's value from an untrusted layer, through the rule its owner declared. */
function applyContributed(
  out: Record<string, unknown>,
  dotted: string,
  name: string,
  value: unknown,
  rules: ReadonlyMap<string, TrustRule | undefined>,
  base: ToolbeltConfig,
  ignore: (key: string, why: string) => void,
): void {
  const rule = rules.get(dotted);
  if (!rule) {
    ignore(dotted, "not known to be safe from an untrusted project");
    return;
  }
  const kept = rule(value, { key: dotted, current: readPath(base, dotted), base, ignore });
  if (kept !== DROP) out[name] = kept;
}

function readPath(config: unknown, dotted: string): unknown {
  let node = config;
  for (const part of dotted.split(".")) node = isRecord(node) ? node[part] : undefined;
  return node;
}

/** The trust rule of every contributed key; a key declared without one is dropped from untrusted layers. */
function trustRulesOf(contributions: readonly ConfigContribution[]): Map<string, TrustRule | undefined> {
  const rules = new Map<string, TrustRule | undefined>();
  for (const contribution of contributions)
    for (const [name, key] of Object.entries(contribution.keys)) rules.set(name, key.trust);
  return rules;
}

/** Tool-call hooks run commands on every matching call: an untrusted project gets none of them. */
function ignoreHookCommands(hooks: unknown, ignore: (key: string, why: string) => void): void {
  if (!isRecord(hooks)) {
    ignore("hooks", "runs commands around tool calls");
    return;
  }
  for (const [stage, entries] of Object.entries(hooks)) {
    const list = Array.isArray(entries) ? entries : [entries];
    list.forEach((entry, i) => {
      const command = isRecord(entry) && typeof entry.command === "string" ? entry.command : "a command";
      ignore(`hooks.${stage}[${i}]`, `runs ${command} ${stage} tool calls`);
    });
  }
}

function agentPart(
  agent: Record<string, unknown>,
  base: ToolbeltConfig,
  ignore: (key: string, why: string) => void,
  rules: ReadonlyMap<string, TrustRule | undefined>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const mine = base.agent as unknown as Record<string, unknown>;
  for (const [k, v] of Object.entries(agent)) {
    const key = `agent.${k}`;
    if (NEUTRAL_AGENT_KEYS.has(k)) {
      out[k] = v;
      continue;
    }
    switch (k) {
      case "allowed_tools":
        if (base.agent.allowed_tools === undefined || subset(v, base.agent.allowed_tools)) out[k] = v;
        else ignore(key, "names tools the user's agent.allowed_tools leaves out");
        break;
      case "workspace_mode":
        if (v !== "auto" || base.agent.workspace_mode === "auto") out[k] = v;
        else ignore(key, "lets the model switch the session to other directories");
        break;
      case "mode":
        if (v !== "act" || base.agent.mode !== "plan") out[k] = v;
        else ignore(key, "lifts plan mode");
        break;
      case "shell_env": {
        if (!isRecord(v)) break;
        const env: Record<string, unknown> = {};
        const baseEnv = isRecord(mine.shell_env) ? mine.shell_env : {};
        for (const [ek, ev] of Object.entries(v)) {
          if (ek === "allow" && !subset(ev, Array.isArray(baseEnv.allow) ? baseEnv.allow : []))
            ignore(`${key}.allow`, "lets environment variables (secrets included) into commands");
          else env[ek] = ev;
        }
        out[k] = env;
        break;
      }
      default:
        applyContributed(out, key, k, v, rules, base, ignore);
    }
  }
  return out;
}

function toolsPart(
  tools: Record<string, unknown>,
  base: ToolbeltConfig,
  ignore: (key: string, why: string) => void,
  rules: ReadonlyMap<string, TrustRule | undefined>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const mine = base.tools as Record<string, Record<string, unknown> | undefined>;
  // A tool-level mode outranks its family's, so even `ask` on one tool could undo a family-wide deny.
  const userDenies = Object.values(mine).some((e) => e?.mode === "deny");
  for (const [name, entry] of Object.entries(tools)) {
    if (!isRecord(entry)) continue;
    const current = mine[name] ?? {};
    const next: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(entry)) {
      const key = `tools.${name}.${k}`;
      switch (k) {
        case "enabled":
          if (v === false || current.enabled !== false) next[k] = v;
          else ignore(key, "re-enables a tool the user disabled");
          break;
        case "mode": {
          const mode = v as PermissionMode;
          const currentMode = current.mode as PermissionMode | undefined;
          if (mode === "deny") next[k] = v;
          else if (mode === "allow" && currentMode !== "allow")
            ignore(key, "allows without approval what the policy would ask about");
          else if (mode === "ask" && (currentMode === "deny" || userDenies))
            ignore(key, "could override a deny the user set");
          else next[k] = v;
          break;
        }
        case "allowlist":
          if (current.allowlist === undefined) next[k] = v;
          else ignore(key, "replaces the user's allowlist");
          break;
        case "rules":
          next[k] = untrustedRules(v, key, ignore);
          break;
        default:
          applyContributed(next, key, k, v, rules, base, ignore);
      }
    }
    out[name] = next;
  }
  return out;
}

/**
 * Permission rules from an untrusted project only tighten: its deny and ask rules are kept (rule lists
 * add up across layers, see `mergeConfig`), its allow rules are ignored.
 */
function untrustedRules(
  value: unknown,
  key: string,
  ignore: (key: string, why: string) => void,
): Record<string, unknown> {
  const theirs = isRecord(value) ? value : {};
  if (Array.isArray(theirs.allow) && theirs.allow.length > 0)
    ignore(`${key}.allow`, "allows without approval what the policy would ask about");
  const out: Record<string, unknown> = {};
  for (const kind of ["ask", "deny"] as const) if (Array.isArray(theirs[kind])) out[kind] = theirs[kind];
  return out;
}

/** Every leaf of a config value as a dotted key (arrays are leaves). */
function leaves(value: unknown, prefix = ""): Array<[string, unknown]> {
  if (!isRecord(value)) return prefix ? [[prefix, value]] : [];
  return Object.entries(value).flatMap(([k, v]) => leaves(v, prefix ? `${prefix}.${k}` : k));
}

/** Whether `now` still holds what a layer set (a rule list may have grown since). */
function stillHolds(now: unknown, set: unknown): boolean {
  if (Array.isArray(set) && Array.isArray(now)) return set.every((item) => now.includes(item));
  return JSON.stringify(now) === JSON.stringify(set);
}

/** Layers merged in order; each untrusted one contributes only `untrustedPart` of itself. */
export function mergeLayers(
  layers: readonly ConfigLayer[],
  contributions: readonly ConfigContribution[] = [],
  options: ParseOptions = {},
): {
  config: ToolbeltConfig;
  ignored: IgnoredSetting[];
} {
  let merged: unknown = {};
  const ignored: IgnoredSetting[] = [];
  // What each layer added (an untrusted one: the part of it that applies), to name a rule's layer.
  const applied: Array<{ value: unknown; source: string }> = [];
  // What untrusted layers set, to say so when a later layer replaces it (nothing is dropped silently).
  const kept: Array<{ key: string; value: unknown; source: string; at: number }> = [];
  layers.forEach((layer, at) => {
    // An invalid file is an error whoever wrote it: the user should hear about it, not run half a config.
    parseConfig(layer.value, layer.source, contributions, options);
    let value = layer.value;
    if (!layer.trusted) {
      const base = parseConfig(merged, layer.source, contributions, options);
      const part = untrustedPart(layer.value, base, layer.source, contributions);
      value = part.allowed;
      ignored.push(...part.ignored);
      for (const [key, v] of leaves(value)) kept.push({ key, value: v, source: layer.source, at });
    }
    merged = mergeConfig(merged, value);
    applied.push({ value, source: layer.source });
  });
  for (const k of kept) {
    if (stillHolds(readPath(merged, k.key), k.value)) continue;
    const by = layers.findLast((l, i) => i > k.at && readPath(l.value, k.key) !== undefined);
    ignored.push({ key: k.key, source: k.source, why: `replaced by ${by?.source ?? "a later setting"}` });
  }
  const config = parseConfig(merged, layers.at(-1)?.source ?? "config", contributions, options);
  recordRuleLayers(config, applied);
  return { config, ignored };
}

export interface ConfigSourceOptions extends ProjectTrustOptions {
  /** A config file the user named (`--config`): trusted, wherever it lives. */
  file?: string;
  /** Settings from the SDK caller: trusted. */
  overrides?: unknown;
  /**
   * Settings that may only tighten, applied last (as an untrusted layer: what would loosen is ignored,
   * loudly, and no layer comes after it to loosen what it tightened). A workspace's toolbelt gets its
   * host's policy this way. `source` names it in `trust.ignored`.
   */
  tighten?: { value: unknown; source: string };
  /** Read the user's config folder (default true). */
  userConfig?: boolean;
  /** Config keys families and plugins contribute (see contributions.ts); without them only core's. */
  contributions?: readonly ConfigContribution[];
  /** See `ParseOptions`: only to read the plugin list before the plugins are loaded. */
  unknownSections?: ParseOptions["unknownSections"];
}

/**
 * The session's config and trust: the user's `config.json`, the project's `configs/app.json`, `--config`,
 * then SDK settings, merged in that order. The project's file applies in full only when the project is
 * trusted; otherwise only what tightens or is neutral, and the rest is listed in `trust.ignored`.
 */
export function loadTrustedConfig(
  root: string,
  options: ConfigSourceOptions = {},
): { config: ToolbeltConfig; trust: TrustInfo } {
  const env = options.env ?? process.env;
  const userDir = options.userDir ?? userConfigDir(env);
  const { trusted, reason } = projectTrust(root, { ...options, env, userDir });
  const layers: ConfigLayer[] = [];
  if (options.userConfig !== false) {
    const file = userConfigFile(userDir);
    const value = readConfigFile(file, { optional: true });
    // Inside the root the model can write it like any project file: it then counts as the project's.
    const writable = userDirInside(root, userDir);
    if (value !== undefined)
      layers.push({
        value: withAbsolutePlugins(value, userDir),
        source: file,
        trusted: trusted || !writable,
      });
  }
  // An untrusted project's config must be the project's own file: a symlink out of it is refused
  // (its text would reach stderr or the model in a parse error). A trusted one may link a shared file.
  const projectValue = readConfigFile(projectConfigFile(root), {
    optional: true,
    ...(trusted ? {} : { within: root }),
  });
  if (projectValue !== undefined) layers.push({ value: projectValue, source: CONFIG_FILE, trusted });
  if (options.file)
    layers.push({ value: readConfigFile(path.resolve(options.file)), source: options.file, trusted: true });
  if (options.overrides) layers.push({ value: options.overrides, source: "options", trusted: true });
  if (options.tighten)
    layers.push({ value: options.tighten.value, source: options.tighten.source, trusted: false });
  const parse = options.unknownSections ? { unknownSections: options.unknownSections } : {};
  const { config, ignored } = mergeLayers(layers, options.contributions, parse);
  // Files of the project besides configs/app.json (.mcp.json) belong to the families that read them.
  if (!trusted)
    for (const contribution of options.contributions ?? [])
      ignored.push(...(contribution.untrustedFiles?.(root) ?? []));
  return { config, trust: { trusted, reason, ignored } };
}

// Plugin paths in the user's own config mean files beside it, not in whichever project is open.
function withAbsolutePlugins(value: unknown, dir: string): unknown {
  if (!isRecord(value) || !Array.isArray(value.plugins)) return value;
  return {
    ...value,
    plugins: value.plugins.map((p) =>
      typeof p === "string" && p.startsWith(".") ? path.resolve(dir, p) : p,
    ),
  };
}
