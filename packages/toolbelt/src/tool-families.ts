import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { ToolbeltConfig } from "@toolbelt/core";
import { FAMILY_NAMES, type FamilyName } from "./families.js";

// `toolbelt run TOOL` loads only the family that owns TOOL (see familiesFor). Which family that is,
// the build writes down (scripts/tool-families.mjs → dist/tool-families.json) from the families
// themselves; a name it does not know (a plugin's tool, a typo) loads every family.

/** The packages whose code decides which family owns a tool name. */
export const FAMILY_PACKAGES = [
  "@toolbelt/core",
  "@toolbelt/files",
  "@toolbelt/edit",
  "@toolbelt/shell",
  "@toolbelt/lsp",
  "@toolbelt/ui",
  "@toolbelt/projects",
  "@toolbelt/mcp",
];

/** `dist/tool-families.json`. */
export interface ToolFamilies {
  version: 1;
  /** As {@link packageFingerprint} saw {@link FAMILY_PACKAGES} at build time. */
  packages: Record<string, string>;
  /** Every tool name (in every profile) → the family that owns it. */
  families: Record<string, FamilyName>;
}

/**
 * Each package's version and the total size of its built files. The families are separate npm
 * packages: one upgraded (or rebuilt alone in the workspace) after the build may own other tools,
 * so the build's map holds only for the packages it was made from.
 */
export function packageFingerprint(names: readonly string[] = FAMILY_PACKAGES): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of names) {
    try {
      const pkgFile = fileURLToPath(import.meta.resolve(`${name}/package.json`));
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

let cached: Record<string, FamilyName> | null | undefined;

/** The build's map, when it was made from the packages installed now; null otherwise. */
function toolFamilies(): Record<string, FamilyName> | null {
  if (cached !== undefined) return cached;
  cached = null;
  try {
    const raw = JSON.parse(
      readFileSync(new URL("./tool-families.json", import.meta.url), "utf8"),
    ) as ToolFamilies;
    const now = packageFingerprint();
    if (
      raw.version === 1 &&
      FAMILY_PACKAGES.every((n) => now[n] !== "unresolved" && now[n] === raw.packages[n])
    )
      cached = raw.families;
  } catch {
    // Not built yet, or from another version: every family loads.
  }
  return cached;
}

/** The family that owns a tool name; undefined means "load all". */
export function familyOf(tool: string): FamilyName | undefined {
  const families = toolFamilies();
  const family = families && Object.hasOwn(families, tool) ? families[tool] : undefined;
  return family && FAMILY_NAMES.includes(family) ? family : undefined;
}

/**
 * The families one `run` of `tool` loads. A language server, and ripgrep for search_files, are
 * started through the shell family's sandbox wrapper (session.hooks.wrapCommand): without the shell
 * family an lsp tool would run the server unwrapped, and a search would run ripgrep unconfined. An
 * interactive run (a terminal on stdin) asks through the ui family. Undefined: every family.
 */
export function familiesFor(tool: string, interactive: boolean): FamilyName[] | undefined {
  const family = familyOf(tool);
  if (!family) return undefined;
  const out = new Set<FamilyName>([family]);
  if (family === "lsp" || tool === "search_files") out.add("shell");
  if (interactive) out.add("ui");
  return [...out];
}

/**
 * The families a run of `families` loads once its config is known: a write by the files or edit
 * family reports the problems it introduced through the lsp family's afterWrite hook, which starts
 * the file's server only when `tools.edit.diagnostics` is set (a `run` has no server running yet);
 * then lsp loads too, with shell, whose sandbox wraps the server.
 */
export function familiesWithConfig(families: readonly FamilyName[], config: ToolbeltConfig): FamilyName[] {
  const out = new Set(families);
  const asked = config.tools.edit?.diagnostics;
  if ((out.has("files") || out.has("edit")) && asked !== undefined && asked !== "off") {
    out.add("lsp");
    out.add("shell");
  }
  return [...out];
}
