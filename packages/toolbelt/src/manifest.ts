import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import type { BoundToolSchema, EditBackend, TrustInfo } from "@toolbelt/core";
import { resolveSessionConfig } from "./create.js";
import { FAMILY_NAMES, type FamilyName } from "./families.js";

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

const require = createRequire(import.meta.url);

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

/** The packages whose code decides what a session binds: core and every built-in family. */
export const MANIFEST_PACKAGES = [
  "@toolbelt/core",
  "@toolbelt/files",
  "@toolbelt/edit",
  "@toolbelt/shell",
  "@toolbelt/lsp",
  "@toolbelt/ui",
  "@toolbelt/projects",
  "@toolbelt/mcp",
];

/**
 * Each package's version and the total size of its built files. The families are separate npm
 * packages: one upgraded (or rebuilt alone in the workspace) after the manifest was written could
 * bind other tools, so a manifest whose packages differ is not used. A few stats, no hashing: the
 * version is what changes on every release; the sizes catch a rebuild in the workspace.
 */
export function packageFingerprint(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of MANIFEST_PACKAGES) {
    try {
      // require.resolve, not import.meta.resolve: locating a package.json is not loading the package,
      // and module loader hooks (the tests that prove what a run loads) should not see it as such.
      const pkgFile = require.resolve(`${name}/package.json`);
      const { version } = JSON.parse(readFileSync(pkgFile, "utf8")) as { version?: string };
      const dist = path.join(path.dirname(pkgFile), "dist");
      let size = 0;
      for (const file of readdirSync(dist))
        if (file.endsWith(".js")) size += statSync(path.join(dist, file)).size;
      out[name] = `${version}:${size}`;
    } catch {
      out[name] = "unresolved";
    }
  }
  return out;
}

function samePackages(recorded: Record<string, string>): boolean {
  const now = packageFingerprint();
  return MANIFEST_PACKAGES.every((name) => now[name] !== "unresolved" && now[name] === recorded[name]);
}

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
  const { config, trust } = await resolveSessionConfig(root, {
    ...(options.config ? { configFile: options.config } : {}),
    ...(options.trust !== undefined ? { trustProject: options.trust } : {}),
  });
  if (JSON.stringify(config) !== manifest.config) return undefined;
  if (trust.trusted && existsSync(path.join(root, ".mcp.json"))) return undefined;
  const session = manifest.sessions[options.profile ?? "default"];
  return session ? { session, trust } : undefined;
}
