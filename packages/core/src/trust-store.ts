import { mkdirSync, realpathSync } from "node:fs";
import path from "node:path";
import { writeFileAtomic } from "./atomic-write.js";
import { MAX_CONFIG_BYTES, readRegularFile } from "./bounded-read.js";
import { trustFile, userConfigDir } from "./config-paths.js";
import { ENV, readEnv } from "./env-vars.js";
import { ToolbeltError } from "./errors.js";

export { TRUST_FILE, USER_CONFIG_FILE, userConfigDir } from "./config-paths.js";

export interface TrustedProject {
  /** The real path (symlinks resolved) the user trusted. */
  path: string;
  /** When it was marked (ISO time). */
  at: string;
}

function realDir(dir: string): string {
  try {
    return realpathSync(path.resolve(dir));
  } catch (error) {
    throw new ToolbeltError("ENOENT", `no such directory: ${dir}`, { cause: error });
  }
}

/** The projects recorded as trusted in `dir` (the user config folder); a missing file means none. */
export function listTrustedProjects(dir: string = userConfigDir()): TrustedProject[] {
  let text: string;
  try {
    // Never blocking (a FIFO), only a regular file, bounded like any config file.
    const read = readRegularFile(trustFile(dir), { maxBytes: MAX_CONFIG_BYTES });
    if (read.truncated)
      throw new ToolbeltError(
        "EINVAL_CONFIG",
        `${trustFile(dir)} is larger than ${MAX_CONFIG_BYTES} bytes (1 MiB), the limit for a config file; not read`,
        { details: { file: trustFile(dir), limit: MAX_CONFIG_BYTES, size: read.size, reason: "too_large" } },
      );
    text = read.bytes.toString("utf8");
  } catch (error) {
    if (ToolbeltError.isInstance(error) && error.code === "ENOENT") return [];
    if (ToolbeltError.isInstance(error) && error.code === "EINVAL_CONFIG") throw error;
    throw new ToolbeltError("EINVAL_CONFIG", `cannot read ${trustFile(dir)}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ToolbeltError("EINVAL_CONFIG", `${trustFile(dir)} is not valid JSON`, {
      cause: error,
    });
  }
  const list = (json as { trusted?: unknown } | null)?.trusted;
  if (!Array.isArray(list)) return [];
  return list.filter(
    (p): p is TrustedProject =>
      typeof p === "object" && p !== null && typeof (p as TrustedProject).path === "string",
  );
}

async function saveTrustedProjects(dir: string, list: TrustedProject[]): Promise<void> {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  await writeFileAtomic(trustFile(dir), `${JSON.stringify({ trusted: list }, null, 2)}\n`, {
    mode: 0o600,
  });
}

/** Marks a directory trusted, keyed by its real path; returns that path. */
export async function addTrustedProject(project: string, dir: string = userConfigDir()): Promise<string> {
  const real = realDir(project);
  const list = listTrustedProjects(dir).filter((p) => p.path !== real);
  list.push({ path: real, at: new Date().toISOString() });
  await saveTrustedProjects(dir, list);
  return real;
}

/** Forgets a trusted directory (by its real path, or as recorded if it no longer exists). */
export async function removeTrustedProject(project: string, dir: string = userConfigDir()): Promise<boolean> {
  let key = path.resolve(project);
  try {
    key = realpathSync(key);
  } catch {
    // A deleted directory can still be forgotten by the path it was recorded under.
  }
  const list = listTrustedProjects(dir);
  const kept = list.filter((p) => p.path !== key);
  if (kept.length === list.length) return false;
  await saveTrustedProjects(dir, kept);
  return true;
}

/**
 * The trusted entry that covers `root`: the directory itself or one of its parents (trusting a
 * repository covers its packages). Compared on real paths, so a symlink to a trusted directory is
 * trusted and a trusted path later re-pointed elsewhere is not.
 */
export function trustedEntryFor(root: string, dir: string = userConfigDir()): TrustedProject | undefined {
  let real: string;
  try {
    real = realpathSync(path.resolve(root));
  } catch {
    return undefined;
  }
  return listTrustedProjects(dir).find(
    (p) => real === p.path || real.startsWith(p.path.endsWith(path.sep) ? p.path : p.path + path.sep),
  );
}

/** Whether the user config folder lies inside `root` (on real paths), where tools can write it. */
export function userDirInside(root: string, userDir: string): boolean {
  let top: string;
  try {
    top = realpathSync(path.resolve(root));
  } catch {
    return false;
  }
  // A folder that does not exist yet is placed by its nearest existing parent.
  let existing = path.resolve(userDir);
  const missing: string[] = [];
  for (;;) {
    try {
      existing = realpathSync(existing);
      break;
    } catch {
      if (path.dirname(existing) === existing) return false;
      missing.unshift(path.basename(existing));
      existing = path.dirname(existing);
    }
  }
  const rel = path.relative(top, path.join(existing, ...missing));
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

export interface ProjectTrustOptions {
  /** `--trust` or the SDK's `trustProject`: true trusts, false refuses even a recorded trust. */
  trust?: boolean;
  env?: NodeJS.ProcessEnv;
  /** The user config folder (default `userConfigDir(env)`). */
  userDir?: string;
}

/** Whether the project at `root` is trusted, and why. */
export function projectTrust(
  root: string,
  options: ProjectTrustOptions = {},
): { trusted: boolean; reason: string } {
  const env = options.env ?? process.env;
  if (options.trust === true) return { trusted: true, reason: "--trust (or the SDK's trustProject)" };
  if (options.trust === false) return { trusted: false, reason: "trust refused by the caller" };
  if (readEnv(ENV.TOOLBELT_TRUST, env) === true) return { trusted: true, reason: "TOOLBELT_TRUST=1" };
  const userDir = options.userDir ?? userConfigDir(env);
  // With the root at or above the user config folder (a server started in the home directory), the
  // model's file tools can write the trust list: a recorded trust proves nothing there.
  if (userDirInside(root, userDir))
    return {
      trusted: false,
      reason: `the user config folder ${userDir} is inside the root, so its trust list is not honoured (use --trust or TOOLBELT_TRUST=1)`,
    };
  const entry = trustedEntryFor(root, userDir);
  if (entry) return { trusted: true, reason: `marked trusted: ${entry.path} (toolbelt trust)` };
  return {
    trusted: false,
    reason: "the project is not marked trusted (toolbelt trust DIR, --trust, or TOOLBELT_TRUST=1)",
  };
}
