import os from "node:os";
import path from "node:path";
import { ENV, readEnv } from "./env-vars.js";

// Where a session's settings can come from, as paths and names only. This module imports no zod and
// nothing else of core, so a caller that only needs to know whether any settings exist (the CLI's
// `toolbelt tools` fast path) can load it alone; the real loader computes its paths here too, so the
// two cannot drift apart. Exported as `@toolbelt/core/config-paths`.

/** The default location of a project's config, relative to the root. */
export const CONFIG_FILE = path.join("configs", "app.json");
/** A project's MCP server list, relative to the root (shared with other agents; the mcp family reads it). */
export const MCP_JSON = ".mcp.json";
/** The user's config file, in the user config folder: applies to every session, with full rights. */
export const USER_CONFIG_FILE = "config.json";
/** The list of projects the user marked trusted (`toolbelt trust DIR`), in the user config folder. */
export const TRUST_FILE = "trusted-projects.json";
/** Names the user config folder, overriding `$XDG_CONFIG_HOME/toolbelt`. */
export const CONFIG_DIR_ENV = ENV.TOOLBELT_CONFIG_DIR.name;
/** `1` or `true` trusts the project (for a CI job that owns its checkout). */
export const TRUST_ENV = ENV.TOOLBELT_TRUST.name;

/**
 * The user's own toolbelt folder: `$TOOLBELT_CONFIG_DIR`, else `$XDG_CONFIG_HOME/toolbelt`, else
 * `~/.config/toolbelt`. It holds the user's config and the list of trusted projects; it lies outside
 * every project root, so the model's file tools cannot write it.
 */
export function userConfigDir(env: NodeJS.ProcessEnv = process.env): string {
  const own = readEnv(ENV.TOOLBELT_CONFIG_DIR, env);
  if (own) return path.resolve(own);
  const base = env.XDG_CONFIG_HOME ? path.resolve(env.XDG_CONFIG_HOME) : path.join(os.homedir(), ".config");
  return path.join(base, "toolbelt");
}

/** The user's config file in the user config folder `userDir`. */
export function userConfigFile(userDir: string): string {
  return path.join(userDir, USER_CONFIG_FILE);
}

/** The trust list in the user config folder `userDir`. */
export function trustFile(userDir: string): string {
  return path.join(userDir, TRUST_FILE);
}

/** The project's config file under `root`. */
export function projectConfigFile(root: string): string {
  return path.join(root, CONFIG_FILE);
}

/**
 * Every file whose existence can change the config or trust of a session at `root` (besides a
 * `--config` file the caller names): the user's config and trust list, the project's config and its
 * `.mcp.json`. When none of them exists and no trust is given, a session runs with the default config
 * and reports nothing ignored.
 */
export function configSourceFiles(root: string, env: NodeJS.ProcessEnv = process.env): string[] {
  const userDir = userConfigDir(env);
  return [userConfigFile(userDir), trustFile(userDir), projectConfigFile(root), path.join(root, MCP_JSON)];
}
