import type { ToolbeltConfig } from "./config.js";
import type { Contributions } from "./contributions.js";
import { ToolbeltError } from "./errors.js";
import type { CommandWrapper } from "./launch.js";
import type { Session } from "./session.js";
import { type AnyTool, TOOL_NAME } from "./tool.js";
import type { TrustInfo } from "./trust.js";

/** The plugin API this host speaks. A plugin declaring another version is refused. */
export const PLUGIN_API_VERSION = 1;

export interface Skill {
  name: string;
  description: string;
  /** Absolute path of the SKILL.md, when it came from disk. */
  path?: string;
  body?: string;
}

export interface DoctorCheck {
  name: string;
  status: "ok" | "missing" | "unavailable" | "skipped";
  detail: string;
}

export interface DoctorContext {
  root: string;
  config: ToolbeltConfig;
  /** Whether the project may run code or loosen policy (absent: not trusted). */
  trust?: TrustInfo;
  /**
   * The wrappers a session at `root` would pass processes through (session.wrapCommand), so a family
   * can say how its processes would run (whether searches run confined). Absent: no session's.
   */
  wrapCommand?: CommandWrapper;
}

export interface Plugin {
  name: string;
  version?: string;
  apiVersion: number;
  tools?: AnyTool[];
  skills?: Skill[];
  /** Runs once per session (forks included) before the first call; may register hooks and state. */
  setup?: (session: Session) => void | Promise<void>;
  /** What `toolbelt doctor` reports for this plugin (which binaries and servers it found). */
  doctor?: (ctx: DoctorContext) => Promise<DoctorCheck[]> | DoctorCheck[];
  /** Config keys, event types and tool names it adds (see contributions.ts). */
  contributes?: Contributions;
}

export interface PluginInput {
  name: string;
  version?: string;
  apiVersion?: number;
  // Tools of any input/payload type; erased to AnyTool when registered.
  // biome-ignore lint/suspicious/noExplicitAny: accepts every ToolDefinition<S, P> without variance errors
  tools?: any[];
  skills?: Skill[];
  setup?: (session: Session) => void | Promise<void>;
  doctor?: (ctx: DoctorContext) => Promise<DoctorCheck[]> | DoctorCheck[];
  contributes?: Contributions;
}

/** Declares a plugin: a plain object of tools, skills and an optional setup. */
export function definePlugin(plugin: PluginInput): Plugin {
  return {
    ...plugin,
    apiVersion: plugin.apiVersion ?? PLUGIN_API_VERSION,
    tools: plugin.tools as AnyTool[] | undefined,
  };
}

const ACCESS = ["read", "write", "execute", "interact"];

/** A value as an error message shows it: short, and never the whole of a large object. */
function shown(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string") return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === "object") return "an object";
  return typeof value === "function" ? "a function" : String(value);
}

/**
 * Refuses what is not a plugin this host can load, as `EPLUGIN` naming the plugin (and `from`, where
 * it came from: the config's spec) and the field: a plugin API this host does not speak, a missing
 * name, a tool without its execute or input, a skill without its description.
 */
export function checkPlugin(value: unknown, from?: string): Plugin {
  const source = from ? ` (${from})` : "";
  const refuse = (message: string) => new ToolbeltError("EPLUGIN", message);
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw refuse(
      from
        ? `${from} exports no plugin object (export default definePlugin({ name, tools })); got ${shown(value)}`
        : `a plugin is an object (see definePlugin); got ${shown(value)}`,
    );
  const plugin = value as Record<string, unknown>;
  if (typeof plugin.name !== "string" || plugin.name === "")
    throw refuse(`a plugin needs a "name" (a non-empty string)${source}; got ${shown(plugin.name)}`);
  const label = `plugin ${plugin.name}${source}`;
  if (plugin.apiVersion !== PLUGIN_API_VERSION)
    throw refuse(
      `${label} speaks plugin API ${String(plugin.apiVersion)} ("apiVersion"); this toolbelt speaks ${PLUGIN_API_VERSION}${plugin.apiVersion === undefined ? " (definePlugin fills it in)" : ""}`,
    );
  const field = (name: string, ok: boolean, what: string) => {
    if (!ok) throw refuse(`${label}: "${name}" must be ${what}; got ${shown(plugin[name])}`);
  };
  const optional = (name: string, type: string, what: string) =>
    field(name, plugin[name] === undefined || typeof plugin[name] === type, what);
  optional("version", "string", "a string");
  optional("setup", "function", "a function");
  optional("doctor", "function", "a function");
  field(
    "contributes",
    plugin.contributes === undefined ||
      (typeof plugin.contributes === "object" && plugin.contributes !== null),
    "an object (config, events, toolKeys)",
  );
  field("tools", plugin.tools === undefined || Array.isArray(plugin.tools), "an array of tools (defineTool)");
  field("skills", plugin.skills === undefined || Array.isArray(plugin.skills), "an array of skills");
  for (const [i, tool] of ((plugin.tools as unknown[] | undefined) ?? []).entries()) {
    const t = (typeof tool === "object" && tool !== null ? tool : {}) as Record<string, unknown>;
    const at = `${label}: tools[${i}]${typeof t.name === "string" ? ` (${t.name})` : ""}`;
    const check = (name: string, ok: boolean, what: string) => {
      if (!ok) throw refuse(`${at}: "${name}" must be ${what} (see defineTool); got ${shown(t[name])}`);
    };
    if (t !== tool) throw refuse(`${at} is not a tool (see defineTool); got ${shown(tool)}`);
    check("name", typeof t.name === "string" && TOOL_NAME.test(t.name), "letters, digits, _ and - (max 64)");
    check("description", typeof t.description === "string", "a string");
    check("family", typeof t.family === "string" && t.family !== "", "a non-empty string");
    check("access", ACCESS.includes(t.access as string), `one of ${ACCESS.join(", ")}`);
    check(
      "input",
      typeof t.input === "object" &&
        t.input !== null &&
        typeof (t.input as { safeParse?: unknown }).safeParse === "function",
      "a zod schema",
    );
    check("execute", typeof t.execute === "function", "a function");
  }
  for (const [i, skill] of ((plugin.skills as unknown[] | undefined) ?? []).entries()) {
    const k = (typeof skill === "object" && skill !== null ? skill : {}) as Record<string, unknown>;
    if (typeof k.name !== "string" || typeof k.description !== "string")
      throw refuse(
        `${label}: skills[${i}] needs a "name" and a "description" (strings); got ${shown(skill)}`,
      );
  }
  return value as Plugin;
}
