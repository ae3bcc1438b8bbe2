import type { ToolbeltConfig } from "./config.js";
import type { Contributions } from "./contributions.js";
import type { CommandWrapper } from "./launch.js";
import type { Session } from "./session.js";
import type { AnyTool } from "./tool.js";
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

/** Refuses a plugin this host does not speak, with a message naming both versions. */
export function checkPlugin(value: unknown): Plugin {
  if (typeof value !== "object" || value === null) throw new Error("a plugin must be an object");
  const plugin = value as Partial<Plugin>;
  if (typeof plugin.name !== "string" || plugin.name === "") throw new Error("a plugin needs a name");
  if (plugin.apiVersion !== PLUGIN_API_VERSION) {
    throw new Error(
      `plugin ${plugin.name} speaks plugin API ${String(plugin.apiVersion)}; this toolbelt speaks ${PLUGIN_API_VERSION}`,
    );
  }
  for (const tool of plugin.tools ?? []) {
    if (typeof tool?.name !== "string" || typeof tool.execute !== "function" || !tool.input) {
      throw new Error(`plugin ${plugin.name} has a malformed tool (name, input and execute are required)`);
    }
  }
  return plugin as Plugin;
}
