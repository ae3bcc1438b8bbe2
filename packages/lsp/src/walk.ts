import { readdirSync } from "node:fs";
import path from "node:path";

/** Directories a project walk never enters: dependencies, VCS data, build output. */
export const DEFAULT_SKIP = new Set([
  "node_modules",
  ".git",
  "dist",
  "build",
  "out",
  "coverage",
  ".turbo",
  ".next",
]);

/**
 * Source files under `root` with one of `extensions`, breadth-first, skipping hidden and output
 * directories; stops at `cap` files and says so.
 */
export function walkProject(
  root: string,
  extensions: readonly string[],
  cap: number,
  skip: ReadonlySet<string> = DEFAULT_SKIP,
): { files: string[]; capped: boolean } {
  const wanted = new Set(extensions.map((e) => e.toLowerCase()));
  const files: string[] = [];
  const queue = [root];
  while (queue.length) {
    const dir = queue.shift() as string;
    let entries: import("node:fs").Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      continue;
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      if (entry.name.startsWith(".")) continue;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!skip.has(entry.name)) queue.push(full);
        continue;
      }
      if (!entry.isFile()) continue;
      if (entry.name.endsWith(".d.ts")) continue;
      if (!wanted.has(path.extname(entry.name).toLowerCase())) continue;
      if (files.length >= cap) return { files, capped: true };
      files.push(full);
    }
  }
  return { files, capped: false };
}
