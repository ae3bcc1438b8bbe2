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

/** Whether a root-relative path (as `PathResolver` gives it) is protected by `patterns`. */
export function isProtectedPath(rel: string, patterns: readonly string[] = PROTECTED_PATHS): boolean {
  const clean = rel.replace(/^\.\/+/, "");
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
