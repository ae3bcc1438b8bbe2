import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import {
  type BoundToolSchema,
  type EditBackend,
  type TrustInfo,
  toAnthropicTool,
  toMcpTool,
  toOpenAITool,
} from "@toolbelt/core";
import { resolveSessionConfig } from "./create.js";
import { FAMILY_NAMES, type FamilyName } from "./families.js";
import { isDirectory, samePackages } from "./fast-tools.js";

/** What one session binds, recorded at build time for one profile (no model given). */
export interface ManifestSession {
  profile: string;
  edit_backend: EditBackend;
  /** Every binding in order, deferred ones included (`run TOOL --help` describes those too). */
  schemas: BoundToolSchema[];
  deferred: string[];
}

/**
 * `dist/tool-manifest.json`, written by `scripts/tool-manifest.mjs` from live sessions of the
 * built packages, so it says exactly what a session with the default config would bind.
 */
export interface ToolManifest {
  version: 2;
  /** Every tool name (in every profile) → the family that owns it. */
  families: Record<string, FamilyName>;
  /** The resolved default config, serialised: the sessions below hold only for this config. */
  config: string;
  /** The packages the sessions came from, as {@link packageFingerprint} saw them at build time. */
  packages: Record<string, string>;
  /** Keyed by profile name. */
  sessions: Record<string, ManifestSession>;
}

let cached: ToolManifest | null | undefined;

/** The build's manifest; null when it is missing or from another version (then families load). */
export function readManifest(): ToolManifest | null {
  if (cached !== undefined) return cached;
  try {
    const raw = JSON.parse(readFileSync(new URL("./tool-manifest.json", import.meta.url), "utf8")) as {
      version?: unknown;
    };
    cached = raw.version === 2 ? (raw as ToolManifest) : null;
  } catch {
    cached = null;
  }
  return cached;
}

/** The family that owns a tool name; undefined means "load all". */
export function familyOf(tool: string): FamilyName | undefined {
  const family = readManifest()?.families[tool];
  return family && FAMILY_NAMES.includes(family) ? family : undefined;
}

export { MANIFEST_PACKAGES, packageFingerprint, toolHelpText } from "./fast-tools.js";

export interface ManifestOptions {
  root: string;
  config?: string;
  profile?: string;
  model?: string;
  trust?: boolean;
}

/**
 * What the session these options open would bind, read from the manifest instead of loading every
 * family — or undefined, and the caller opens the session. The manifest was made with the default
 * config and no plugins from the packages installed now, so anything that can change the bound set
 * falls back to loading: other package versions or builds, a config
 * that resolves to anything else (allowed_tools, enabled:false, tool_search, plugins, mcpServers,
 * edit_tool, mode…), a trusted project's .mcp.json (its servers add tools), a profile the build did
 * not record, and any --model (the edit family decides which backend a model gets; the manifest
 * does not second-guess it). Correctness first: a miss only costs the time this saves.
 */
export async function manifestSession(
  options: ManifestOptions,
): Promise<{ session: ManifestSession; trust: TrustInfo } | undefined> {
  if (process.env.TOOLBELT_NO_MANIFEST === "1" || options.model !== undefined) return undefined;
  const manifest = readManifest();
  if (!manifest || !samePackages(manifest.packages ?? {})) return undefined;
  const root = path.resolve(options.root);
  // A root that does not exist: the live session says so (ENOENT), the manifest must not answer for it.
  if (!isDirectory(root)) return undefined;
  const { config, trust } = await resolveSessionConfig(root, {
    ...(options.config ? { configFile: options.config } : {}),
    ...(options.trust !== undefined ? { trustProject: options.trust } : {}),
  });
  if (JSON.stringify(config) !== manifest.config) return undefined;
  if (trust.trusted && existsSync(path.join(root, ".mcp.json"))) return undefined;
  // Own keys only: `--profile constructor` is no profile the build recorded (it crashed the CLI once).
  const profile = options.profile ?? "default";
  const session = Object.hasOwn(manifest.sessions, profile) ? manifest.sessions[profile] : undefined;
  return session ? { session, trust } : undefined;
}

/** What `toolbelt tools --format FORMAT` prints for a bound set, from a live session or the manifest alike. */
export function toolsText(format: string, bound: ManifestSession): string {
  const deferred = bound.deferred;
  const tools = bound.schemas.filter((s) => !deferred.includes(s.name));
  const line = (value: unknown) => `${JSON.stringify(value)}\n`;
  switch (format) {
    case "openai":
      return line(tools.map(toOpenAITool));
    case "anthropic":
      return line(tools.map(toAnthropicTool));
    case "mcp":
      return line({ tools: tools.map(toMcpTool) });
    case "names":
      return [
        ...tools.map((t) => `${t.name}\n`),
        ...deferred.map((name) => `${name} (deferred: bound through tool_search)\n`),
      ].join("");
    case "text": {
      let out = `profile ${bound.profile}, edit tool ${bound.edit_backend}\n\n`;
      for (const t of tools) {
        const first = t.description.split(/(?<=\.)\s/)[0] ?? t.description;
        out += `${t.name.padEnd(22)} ${first}\n`;
      }
      if (deferred.length) out += `\ndeferred (bound through tool_search): ${deferred.join(", ")}\n`;
      return `${out}\ntoolbelt run TOOL --help shows a tool's input fields\n`;
    }
    default:
      return line({ profile: bound.profile, edit_backend: bound.edit_backend, tools, deferred });
  }
}
