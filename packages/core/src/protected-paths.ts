/**
 * The files that decide policy or run code. A tool writing one needs an approval (like an execute
 * action), and sandboxed commands see them read-only. Patterns are root-relative, `/`-separated;
 * a pattern ending in `/` protects everything beneath that directory.
 */
export const PROTECTED_PATHS: readonly string[] = [
  "configs/app.json",
  ".mcp.json",
  ".toolbelt/",
  ".git/",
  "node_modules/.bin/",
];

/**
 * Names protected wherever they are in the root, not only at its top: a `.git` (directory, or the file
 * of a worktree or submodule that points git elsewhere) holds hooks and a config git runs, and a `HEAD`
 * is what makes git take a directory for a repository (a bare one, with its own `config`, when
 * `objects/` and `refs/` sit beside it). Matched without regard to case (case-insensitive file systems).
 */
export const PROTECTED_NAMES: readonly string[] = [".git", "HEAD"];

/** Whether a root-relative path lies in (or is) a `.git` at any depth, or is a `HEAD` file anywhere. */
function hasProtectedName(clean: string): boolean {
  const parts = clean.split("/");
  if (parts.some((p) => p.toLowerCase() === ".git")) return true;
  return (parts.at(-1) ?? "").toLowerCase() === "head";
}

/** Whether a root-relative path (as `PathResolver` gives it) is protected by `patterns`. */
export function isProtectedPath(rel: string, patterns: readonly string[] = PROTECTED_PATHS): boolean {
  const clean = rel.replace(/^\.\/+/, "");
  if (hasProtectedName(clean)) return true;
  for (const pattern of patterns) {
    if (pattern.endsWith("/")) {
      const dir = pattern.slice(0, -1);
      if (clean === dir || clean.startsWith(pattern)) return true;
    } else if (clean === pattern) return true;
  }
  return false;
}

/** The `--allow` / SDK `allow` entry that lets tools write protected paths without asking. */
export const PROTECTED_ALLOW = "protected";
