import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import {
  CONFIG_FILE,
  mergeDeep,
  type PermissionMode,
  parseConfig,
  readConfigFile,
  type SandboxMode,
  sandboxMode,
  type ToolbeltConfig,
} from "./config.js";
import type { TrustInfo } from "./trust.js";
import {
  type ProjectTrustOptions,
  projectTrust,
  USER_CONFIG_FILE,
  userConfigDir,
  userDirInside,
} from "./trust-store.js";

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

const SANDBOX_STRICTNESS: Record<SandboxMode, number> = { off: 0, "best-effort": 1, required: 2 };

// Keys that change how a run looks or is bounded but grant nothing: an untrusted project may set them.
// The shell family's default for agent.shell_max_processes.
const DEFAULT_MAX_PROCESSES = 1024;

const NEUTRAL_AGENT_KEYS = new Set([
  "edit_tool",
  "tool_search",
  "tool_search_threshold",
  "context_window_tokens",
]);

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
): { allowed: Record<string, unknown>; ignored: IgnoredSetting[] } {
  const allowed: Record<string, unknown> = {};
  const ignored: IgnoredSetting[] = [];
  const ignore = (key: string, why: string) => ignored.push({ key, source, why });
  if (!isRecord(value)) return { allowed, ignored };

  for (const [top, v] of Object.entries(value)) {
    switch (top) {
      case "agent":
        if (isRecord(v)) allowed.agent = agentPart(v, base, ignore);
        break;
      case "tools":
        if (isRecord(v)) allowed.tools = toolsPart(v, base, ignore);
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
      case "lsp_diagnostics_after_edit":
        allowed[top] = v;
        break;
      case "projects":
        if (Array.isArray(v) && v.length > 0)
          ignore("projects", "lets the model switch the session to directories outside the root");
        break;
      case "lsp":
        for (const name of Object.keys(isRecord(v) ? v : {}))
          ignore(`lsp.${name}`, "starts a language-server command");
        break;
      case "mcpServers":
        for (const name of Object.keys(isRecord(v) ? v : {}))
          ignore(`mcpServers.${name}`, "starts an MCP server");
        break;
      case "plugins":
        for (const spec of Array.isArray(v) ? v : []) ignore(`plugins`, `imports and runs ${String(spec)}`);
        break;
      case "hooks":
        ignoreHookCommands(v, ignore);
        break;
      default:
        ignore(top, "not known to be safe from an untrusted project");
    }
  }
  return { allowed, ignored };
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
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const mine = base.agent as Record<string, unknown>;
  for (const [k, v] of Object.entries(agent)) {
    const key = `agent.${k}`;
    if (NEUTRAL_AGENT_KEYS.has(k)) {
      out[k] = v;
      continue;
    }
    switch (k) {
      case "shell_sandbox": {
        const wanted = sandboxMode({ agent: { shell_sandbox: v } } as ToolbeltConfig);
        const current = sandboxMode(base);
        if (SANDBOX_STRICTNESS[wanted] >= SANDBOX_STRICTNESS[current]) out[k] = v;
        else ignore(key, `loosens the shell sandbox (${current} → ${wanted})`);
        break;
      }
      case "shell_sandbox_allowed_paths":
        if (subset(v, base.agent.shell_sandbox_allowed_paths)) out[k] = v;
        else ignore(key, "makes more paths writable to sandboxed commands");
        break;
      // Reads are confined by default, so only the user's own `false` lets a project's `false` through.
      case "shell_sandbox_confine_reads":
        if (v !== false || base.agent.shell_sandbox_confine_reads === false) out[k] = v;
        else ignore(key, "lets sandboxed commands read outside the confined paths");
        break;
      case "shell_sandbox_read_paths":
        if (subset(v, base.agent.shell_sandbox_read_paths)) out[k] = v;
        else ignore(key, "makes more paths readable to sandboxed commands");
        break;
      case "allowed_tools":
        if (base.agent.allowed_tools === undefined || subset(v, base.agent.allowed_tools)) out[k] = v;
        else ignore(key, "names tools the user's agent.allowed_tools leaves out");
        break;
      case "workspace_mode":
        if (v !== "auto" || base.agent.workspace_mode === "auto") out[k] = v;
        else ignore(key, "lets the model switch the session to other directories");
        break;
      case "shell_network":
        if (v === "off" || base.agent.shell_network !== "off") out[k] = v;
        else ignore(key, "turns the network back on for sandboxed commands");
        break;
      case "shell_max_processes": {
        const current = (mine.shell_max_processes as number | undefined) ?? DEFAULT_MAX_PROCESSES;
        if (typeof v === "number" && v <= current) out[k] = v;
        else ignore(key, `raises a limit (${current} → ${String(v)})`);
        break;
      }
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
        ignore(key, "not known to be safe from an untrusted project");
    }
  }
  return out;
}

function toolsPart(
  tools: Record<string, unknown>,
  base: ToolbeltConfig,
  ignore: (key: string, why: string) => void,
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
          next[k] = untrustedRules(v, current.rules, key, ignore);
          break;
        case "engine":
          if (v === current.engine) next[k] = v;
          else ignore(key, "picks which search program runs");
          break;
        default:
          ignore(key, "not known to be safe from an untrusted project");
      }
    }
    out[name] = next;
  }
  return out;
}

/**
 * Permission rules from an untrusted project only tighten: its deny and ask rules are added to the
 * user's (a list would otherwise replace the user's when layers merge), its allow rules are ignored.
 */
function untrustedRules(
  value: unknown,
  mine: unknown,
  key: string,
  ignore: (key: string, why: string) => void,
): Record<string, unknown> {
  const theirs = isRecord(value) ? value : {};
  const current = isRecord(mine) ? mine : {};
  const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
  if (list(theirs.allow).length > 0)
    ignore(`${key}.allow`, "allows without approval what the policy would ask about");
  const out: Record<string, unknown> = {};
  for (const kind of ["allow", "ask", "deny"] as const) {
    const merged = kind === "allow" ? list(current[kind]) : [...list(current[kind]), ...list(theirs[kind])];
    if (current[kind] !== undefined || merged.length > 0) out[kind] = merged;
  }
  return out;
}

/** Layers merged in order; each untrusted one contributes only `untrustedPart` of itself. */
export function mergeLayers(layers: readonly ConfigLayer[]): {
  config: ToolbeltConfig;
  ignored: IgnoredSetting[];
} {
  let merged: unknown = {};
  const ignored: IgnoredSetting[] = [];
  for (const layer of layers) {
    // An invalid file is an error whoever wrote it: the user should hear about it, not run half a config.
    parseConfig(layer.value, layer.source);
    let value = layer.value;
    if (!layer.trusted) {
      const part = untrustedPart(layer.value, parseConfig(merged, layer.source), layer.source);
      value = part.allowed;
      ignored.push(...part.ignored);
    }
    merged = mergeDeep(merged, value);
  }
  return { config: parseConfig(merged, layers.at(-1)?.source ?? "config"), ignored };
}

/** Server names in the root's `.mcp.json`, to report what an untrusted project's file did not start. */
function mcpJsonNames(root: string): string[] | "unreadable" | undefined {
  const file = path.join(root, ".mcp.json");
  if (!existsSync(file)) return undefined;
  try {
    const servers = (JSON.parse(readFileSync(file, "utf8")) as { mcpServers?: unknown })?.mcpServers;
    if (!isRecord(servers)) return "unreadable";
    return Object.entries(servers)
      .filter(([, entry]) => !(isRecord(entry) && entry.disabled === true))
      .map(([name]) => name);
  } catch {
    return "unreadable";
  }
}

export interface ConfigSourceOptions extends ProjectTrustOptions {
  /** A config file the user named (`--config`): trusted, wherever it lives. */
  file?: string;
  /** Settings from the SDK caller: trusted. */
  overrides?: unknown;
  /** Read the user's config folder (default true). */
  userConfig?: boolean;
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
    const file = path.join(userDir, USER_CONFIG_FILE);
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
  const projectValue = readConfigFile(path.join(root, CONFIG_FILE), { optional: true });
  if (projectValue !== undefined) layers.push({ value: projectValue, source: CONFIG_FILE, trusted });
  if (options.file)
    layers.push({ value: readConfigFile(path.resolve(options.file)), source: options.file, trusted: true });
  if (options.overrides) layers.push({ value: options.overrides, source: "options", trusted: true });
  const { config, ignored } = mergeLayers(layers);
  if (!trusted) {
    const names = mcpJsonNames(root);
    if (names === "unreadable")
      ignored.push({ key: ".mcp.json", source: ".mcp.json", why: "names MCP servers to start" });
    else
      for (const name of names ?? [])
        ignored.push({ key: `mcpServers.${name}`, source: ".mcp.json", why: "starts an MCP server" });
  }
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
