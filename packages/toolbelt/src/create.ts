import path from "node:path";
import { pathToFileURL } from "node:url";
import {
  checkPlugin,
  createSession,
  loadConfig,
  type Plugin,
  type Session,
  type SessionOptions,
  type ToolbeltConfig,
  type ToolbeltConfigInput,
  ToolbeltError,
} from "@toolbelt/core";
import { FAMILY_NAMES, type FamilyName, loadFamilies } from "./families.js";

export interface ToolbeltOptions extends Omit<SessionOptions, "config" | "plugins"> {
  /** Config on top of the project's configs/app.json (and `configFile`). */
  config?: ToolbeltConfigInput;
  /** A config file to layer over configs/app.json (the CLI's --config). */
  configFile?: string;
  /** Plugins to add: plugin objects, or package names / paths to import. */
  plugins?: Array<Plugin | string>;
  /** The built-in families to load (default: all). */
  families?: readonly FamilyName[];
}

/** Loads a plugin named in config: a package name, or a path relative to the root. */
export async function importPlugin(spec: string, root: string): Promise<Plugin> {
  const isPath = spec.startsWith(".") || path.isAbsolute(spec);
  const target = isPath ? pathToFileURL(path.resolve(root, spec)).href : spec;
  let mod: Record<string, unknown>;
  try {
    mod = (await import(target)) as Record<string, unknown>;
  } catch (error) {
    throw new ToolbeltError("EPLUGIN", `cannot load plugin ${spec}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  let candidate = mod.default ?? mod.plugin;
  if (typeof candidate === "function") candidate = await (candidate as () => unknown)();
  try {
    return checkPlugin(candidate);
  } catch (error) {
    throw new ToolbeltError("EPLUGIN", `plugin ${spec}: ${(error as Error).message}`, { cause: error });
  }
}

export async function resolveConfig(
  root: string,
  options: { config?: ToolbeltConfigInput; configFile?: string },
): Promise<ToolbeltConfig> {
  return loadConfig(root, {
    ...(options.configFile ? { file: options.configFile } : {}),
    overrides: options.config,
  });
}

/**
 * A session with toolbelt's families and the given plugins, rooted at `root`.
 * Config comes from the project's configs/app.json, then `configFile`, then `config`.
 */
export async function createToolbelt(options: ToolbeltOptions): Promise<Session> {
  const config = await resolveConfig(options.root, options);
  const families = await loadFamilies(options.families ?? FAMILY_NAMES);
  const extra: Plugin[] = [];
  for (const item of [...config.plugins, ...(options.plugins ?? [])]) {
    const plugin = typeof item === "string" ? await importPlugin(item, options.root) : checkPlugin(item);
    // Third-party tools are deferrable unless they say otherwise: with tool search on, their schemas
    // wait behind tool_search instead of filling the model's context.
    extra.push({
      ...plugin,
      tools: plugin.tools?.map((tool) => ({ ...tool, deferrable: tool.deferrable ?? true })),
    });
  }
  const { configFile: _file, families: _families, plugins: _plugins, ...sessionOptions } = options;
  return createSession({ ...sessionOptions, config, plugins: [...families, ...extra] });
}
