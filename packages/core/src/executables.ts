import { accessSync, constants, realpathSync } from "node:fs";
import path from "node:path";

/** Whether `file` exists and may be executed by this process. */
export function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function realOrSelf(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return path.resolve(file);
  }
}

function isWithin(file: string, dir: string): boolean {
  const rel = path.relative(dir, file);
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

/**
 * Finds an executable on PATH without a shell, as an absolute path. Relative PATH entries (`.`,
 * `node_modules/.bin`) are always skipped: the OS would resolve them against the child's working
 * directory — the project root — so a file in the checkout would become the program. With `outside`,
 * a candidate that lands inside that directory once symlinks are resolved is skipped too.
 */
export function findExecutable(
  command: string,
  options: { outside?: string; env?: Readonly<Record<string, string | undefined>> } = {},
): string | undefined {
  if (command.includes("/")) return isExecutable(command) ? path.resolve(command) : undefined;
  const fence = options.outside === undefined ? undefined : realOrSelf(options.outside);
  const name = process.platform === "win32" && !command.endsWith(".exe") ? `${command}.exe` : command;
  for (const dir of ((options.env ?? process.env).PATH ?? "").split(path.delimiter)) {
    if (!dir || !path.isAbsolute(dir)) continue;
    const candidate = path.join(dir, name);
    if (!isExecutable(candidate)) continue;
    if (fence !== undefined && isWithin(realOrSelf(candidate), fence)) continue;
    return candidate;
  }
  return undefined;
}
