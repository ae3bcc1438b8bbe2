import { existsSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import {
  type Contributions,
  createSession,
  definePlugin,
  type Plugin,
  type Session,
  type SessionOptions,
  type ToolbeltConfig,
  type ToolbeltConfigInput,
  ToolbeltError,
  type TrustInfo,
} from "@toolbelt/core";
import { MCP_JSON, projectConfigFile, userConfigDir, userConfigFile } from "@toolbelt/core/config-paths";
import { checkPlugin, loadTrustedConfig } from "@toolbelt/core/internal";
import type { WorkspaceSpec } from "@toolbelt/workspace";
import { elicitByQuestions } from "./elicitation.js";
import { FAMILY_NAMES, type FamilyName, loadFamilies, loadFamilyContributions } from "./families.js";
import { familiesWithConfig } from "./tool-families.js";

export interface ToolbeltOptions
  extends Omit<SessionOptions, "config" | "plugins" | "trust" | "contributions"> {
  /** Config on top of the project's configs/app.json (and `configFile`); always applies in full. */
  config?: ToolbeltConfigInput;
  /** A config file to layer over configs/app.json (the CLI's --config); always applies in full. */
  configFile?: string;
  /**
   * Trust the project at `root`: its configs/app.json and .mcp.json may then run code and loosen
   * policy. `false` refuses trust even for a project marked with `toolbelt trust`. Default: trusted
   * only when the user marked it (`toolbelt trust DIR`) or `TOOLBELT_TRUST=1` is set.
   */
  trustProject?: boolean;
  /** Read the user's config folder (`$TOOLBELT_CONFIG_DIR`, else `$XDG_CONFIG_HOME/toolbelt`); default true. */
  userConfig?: boolean;
  /** Plugins to add: plugin objects, or package names / paths to import. */
  plugins?: Array<Plugin | string>;
  /** The built-in families to load (default: all). */
  families?: readonly FamilyName[];
  /**
   * Where the tools run: this machine (`"local"`, the default), or a workspace elsewhere — a Docker
   * container, an SSH host, a Kubernetes pod — as an object (`{ kind: "docker", image: "…" }`) or the
   * CLI's string form (`docker:NAME`, `docker-image:IMAGE`, `ssh:user@host:/path`, `k8s:ns/pod`).
   * The session binds the same tools there; see docs/workspaces.md.
   */
  workspace?: WorkspaceOption;
}

/** A workspace as createToolbelt takes it: the object form, or the CLI's string form. */
export type WorkspaceOption = WorkspaceSpec | string;

/** What toolbelt's own CLI passes besides the public options; not exported from the package. */
export interface CliToolbeltOptions extends ToolbeltOptions {
  /**
   * The CLI's `run`: with no config anywhere (no user or project config file, no `config`,
   * `configFile` or plugins), know only the keys and events of `families` (and mcp's when a
   * `.mcp.json` exists), not every built-in family's. Such a session's config is the default for
   * its own families.
   */
  familyContributionsOnly?: boolean;
  /**
   * Settings that may only tighten, applied over every other layer: the policy of the host driving
   * this toolbelt as its workspace (`serve --mcp` gets it from the host's initialize request).
   */
  hostPolicy?: Record<string, unknown>;
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
  return checkPlugin(candidate, spec);
}

type ConfigOptions = Pick<
  CliToolbeltOptions,
  | "config"
  | "configFile"
  | "trustProject"
  | "userConfig"
  | "plugins"
  | "families"
  | "familyContributionsOnly"
  | "hostPolicy"
>;

/** How the host's policy is named where a setting of it is ignored. */
export const HOST_POLICY_SOURCE = "the host driving this workspace";

/**
 * The built-in contributions a session knows: every family's, or (see familyContributionsOnly) only
 * its own families' when no config source exists. Each contrib module builds zod schemas at import,
 * which a `run read_file` need not pay for the six families it does not use. Should a config file appear after the
 * check, the strict parse rejects the keys of a family it does not know: it fails closed, never open.
 */
async function builtinContributions(root: string, options: ConfigOptions): Promise<readonly Contributions[]> {
  const noConfig =
    options.config === undefined &&
    options.configFile === undefined &&
    options.hostPolicy === undefined &&
    (options.plugins?.length ?? 0) === 0 &&
    (options.userConfig === false || !existsSync(userConfigFile(userConfigDir()))) &&
    !existsSync(projectConfigFile(root));
  // mcp's reports an untrusted project's .mcp.json (read only if it exists), so it comes along then.
  if (options.familyContributionsOnly && options.families && noConfig)
    return loadFamilyContributions(options.families, existsSync(path.join(root, MCP_JSON)));
  return (await import("./contributions.js")).BUILTIN_CONTRIBUTIONS;
}

function tryLoadTrustedConfig(
  ...args: Parameters<typeof loadTrustedConfig>
): ReturnType<typeof loadTrustedConfig> | undefined {
  try {
    return loadTrustedConfig(...args);
  } catch {
    return undefined;
  }
}

/** The config keys of `builtin` and `extra`, each once. */
function configKeys(builtin: readonly Contributions[], extra: readonly Contributions[]) {
  return [...new Set([...builtin, ...extra].flatMap((c) => c.config ?? []))];
}

/**
 * The session's config and whether the project is trusted (with what its files were refused),
 * validated against core's keys, every built-in family's and the plugins' (`plugins` holds them,
 * imported): a plugin named in config brings its own section, so the plugin list is read first
 * with unknown sections let through, and the whole config is then checked strictly.
 */
export async function resolveSessionConfig(
  root: string,
  options: ConfigOptions,
): Promise<{
  config: ToolbeltConfig;
  trust: TrustInfo;
  plugins: Plugin[];
  /** The built-in contributions the config was checked against. */
  contributions: readonly Contributions[];
}> {
  const sources = {
    ...(options.configFile ? { file: options.configFile } : {}),
    ...(options.trustProject !== undefined ? { trust: options.trustProject } : {}),
    ...(options.userConfig !== undefined ? { userConfig: options.userConfig } : {}),
    overrides: options.config,
    ...(options.hostPolicy ? { tighten: { value: options.hostPolicy, source: HOST_POLICY_SOURCE } } : {}),
  };
  const given = options.plugins ?? [];
  const ownContributions = (list: readonly Plugin[]) =>
    list.map((p) => p.contributes).filter((c) => c !== undefined);
  const objects = given.filter((p): p is Plugin => typeof p !== "string").map((p) => checkPlugin(p));
  const builtin = await builtinContributions(root, options);
  if (given.length === 0) {
    // Most configs name no plugin: then the strict check alone is the answer the two passes below
    // give (same layers, same keys). Anything it rejects may be a plugin's section: the passes decide.
    const strict = tryLoadTrustedConfig(root, { ...sources, contributions: configKeys(builtin, []) });
    if (strict && strict.config.plugins.length === 0)
      return { config: strict.config, trust: strict.trust, plugins: [], contributions: builtin };
  }
  const first = loadTrustedConfig(root, {
    ...sources,
    contributions: configKeys(builtin, ownContributions(objects)),
    unknownSections: "allow",
  });
  // config.plugins holds only what trusted sources named: an untrusted project's list was dropped.
  // Config's plugins first, then the options' in their order, as the session binds them.
  const plugins: Plugin[] = [];
  for (const item of [...first.config.plugins, ...given])
    plugins.push(typeof item === "string" ? await importPlugin(item, root) : checkPlugin(item));
  const { config, trust } = loadTrustedConfig(root, {
    ...sources,
    contributions: configKeys(builtin, ownContributions(plugins)),
  });
  return { config, trust, plugins, contributions: builtin };
}

export async function resolveConfig(root: string, options: ConfigOptions): Promise<ToolbeltConfig> {
  return (await resolveSessionConfig(root, options)).config;
}

/**
 * Announces what an untrusted project's files asked for and did not get. It runs after every other
 * plugin's setup, so a listener a plugin attached there (the HTTP event buffer) sees it.
 */
function trustNotice(trust: TrustInfo): Plugin {
  return definePlugin({
    name: "trust-notice",
    tools: [],
    setup(session) {
      if (session.isRoot && trust.ignored.length > 0)
        session.emit({
          type: "config_ignored",
          trusted: trust.trusted,
          reason: trust.reason,
          ignored: trust.ignored,
        });
    },
  });
}

/**
 * A session with toolbelt's families and the given plugins, rooted at `root`. Config comes from the
 * user's config folder, the project's configs/app.json (in full only when the project is trusted),
 * then `configFile`, then `config`.
 */
export function createToolbelt(options: ToolbeltOptions): Promise<Session> {
  const { familyContributionsOnly: _cliOnly, ...publicOptions } = options as CliToolbeltOptions;
  return openToolbelt(publicOptions);
}

/** createToolbelt with the options only the CLI passes (see CliToolbeltOptions). */
export async function openToolbelt(options: CliToolbeltOptions): Promise<Session> {
  if (options.workspace !== undefined && options.workspace !== "local") {
    const { openWorkspaceSession } = await import("./workspace-session.js");
    const opened = await openWorkspaceSession(options);
    if (opened) return opened;
  }
  const { config, trust, plugins, contributions } = await resolveSessionConfig(options.root, options);
  // `contributions` below already holds the loaded families' keys and events; a family's own
  // `contributes` would name them twice whenever Node hands out a second instance of the family
  // module (seen with piped stdin: the family resolved through node_modules/, not its real path).
  const wanted = options.families ? familiesWithConfig(options.families, config) : FAMILY_NAMES;
  const families = (await loadFamilies(wanted)).map(({ contributes: _builtin, ...family }) => family);
  const extra: Plugin[] = [];
  for (const plugin of plugins) {
    // Third-party tools are deferrable unless they say otherwise: with tool search on, their schemas
    // wait behind tool_search instead of filling the model's context.
    extra.push({
      ...plugin,
      tools: plugin.tools?.map((tool) => ({ ...tool, deferrable: tool.deferrable ?? true })),
    });
  }
  const {
    configFile: _file,
    families: _families,
    plugins: _plugins,
    trustProject: _trust,
    userConfig: _user,
    familyContributionsOnly: _own,
    hostPolicy: _host,
    workspace: _workspace,
    ...sessionOptions
  } = options;
  // A client that asks questions but brings no `elicit` answers MCP servers' forms through its
  // questions. Spread, not copied: the capabilities array stays the one the HTTP API updates in place.
  let session: Session | undefined;
  const given = sessionOptions.client;
  const client =
    given?.ask && !given.elicit ? { ...given, elicit: elicitByQuestions(given, () => session) } : given;
  session = await createSession({
    ...sessionOptions,
    ...(client ? { client } : {}),
    config,
    trust,
    // Every built-in family's keys and events are known, loaded or not: one config serves every run
    // (a `run` with no config at all knows its own families' only).
    contributions,
    plugins: [...families, ...extra, trustNotice(trust)],
  });
  return session;
}
