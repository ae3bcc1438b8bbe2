import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { normaliseArgv, parseFast } from "./fast-args.js";
import { configExists, MANIFEST_PACKAGES, packageFingerprint, samePackages } from "./fast-tools.js";
import { type CompiledCommonJs, compileCommonJs } from "./oneshot-load.js";
import { familiesFor } from "./run-families.js";
import { isTerminal } from "./stdio.js";

// The one-shot `run` of a files-family tool (read_file, list_dir…) from dist/oneshot.cjs: the CLI's
// own code bundled into one CommonJS file, compiled from V8's code cache written at build time
// (scripts/oneshot-bundle.mjs). Node 20 caches no compiled ES module, and compiling them was about a
// third of such a run. bin.ts asks here first; whatever the bundle might not serve exactly as the
// usual path does goes the usual path: a miss costs only the time this saves.

export const ONESHOT_CODE = "oneshot.cjs";
export const ONESHOT_CACHE = "oneshot.cjs.cache";
export const ONESHOT_INDEX = "oneshot.json";

/** The packages the bundle holds code of: core, the families (their contrib modules) and bridge. */
export const ONESHOT_PACKAGES = [...MANIFEST_PACKAGES, "@toolbelt/bridge"];

/** For bin/toolbelt.js: its one-shot path installs the same EPIPE handling as dist/bin.js. */
export { quietEpipe } from "./stdio.js";
export { familiesFor, packageFingerprint };

/** dist/oneshot.json, written with the bundle. */
export interface OneShotIndex {
  version: 1;
  /** As {@link packageFingerprint} saw {@link ONESHOT_PACKAGES} when the bundle was made. */
  packages: Record<string, string>;
  /** The tool names (every profile's) the bundle serves: the files family's that load no other. */
  files: string[];
}

const DIST = path.dirname(fileURLToPath(import.meta.url));

function readIndex(dist: string): OneShotIndex | undefined {
  try {
    const raw = JSON.parse(readFileSync(path.join(dist, ONESHOT_INDEX), "utf8")) as Partial<OneShotIndex>;
    return raw.version === 1 && Array.isArray(raw.files) && raw.packages ? (raw as OneShotIndex) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Why the bundle does not serve this command line (undefined: it does). It serves a plain `run` of
 * a files-family tool that loads no other family, with no config source anywhere (so no plugin
 * and no other family's config section), not interactive, from packages that are still the ones
 * it was built from.
 */
export function whyNotOneShot(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  dist = DIST,
): string | undefined {
  if (env.TOOLBELT_NO_ONESHOT === "1") return "TOOLBELT_NO_ONESHOT=1";
  if (env.TOOLBELT_NO_MANIFEST === "1") return "TOOLBELT_NO_MANIFEST=1";
  const args = normaliseArgv(argv);
  if (args.includes("--help") || args.includes("-h")) return "a help line";
  const fast = parseFast(args);
  if (fast?.command !== "run") return "not a plain run line";
  const { tool, config, interactive } = fast.args as unknown as {
    tool: string;
    config?: string;
    interactive?: boolean;
  };
  if (config !== undefined) return "--config";
  // cli.ts asks at a terminal unless --no-interactive: that needs the ui family.
  if (interactive === true || (interactive === undefined && isTerminal(0))) return "interactive";
  const index = readIndex(dist);
  if (!index) return `no ${ONESHOT_INDEX} in ${dist}`;
  if (!index.files.includes(tool)) return `${tool} is not a files-family tool`;
  const families = familiesFor("files", false, tool);
  if (families?.length !== 1) return `${tool} loads ${families?.join(", ")}`;
  if (configExists(path.resolve(fast.args.root), env)) return "a config source exists";
  if (!samePackages(index.packages, ONESHOT_PACKAGES)) return "packages changed since the bundle was built";
  return undefined;
}

export type LoadedOneShot = Omit<CompiledCommonJs, "exports"> & { main: (argv: string[]) => Promise<number> };

/**
 * Compiles and runs dist/oneshot.cjs as Node would a CommonJS module, with the build's code cache
 * unless `cache: false` (see oneshot-load.ts).
 */
export function loadOneShot(dist = DIST, options: { cache?: boolean } = {}): LoadedOneShot {
  const file = path.join(dist, ONESHOT_CODE);
  const { exports, script, cache } = compileCommonJs(file, options);
  const main = exports.main;
  if (typeof main !== "function") throw new Error(`${file} exports no main`);
  return { main: main as LoadedOneShot["main"], script, cache };
}

/** Whether the bundle serves this command line (see {@link whyNotOneShot}). */
export function oneShotServes(argv: readonly string[]): boolean {
  return whyNotOneShot(argv) === undefined;
}

/**
 * Runs a command line {@link oneShotServes} took: its exit code, or undefined when the bundle does
 * not load and the usual path must take the line.
 */
export async function runOneShot(argv: string[]): Promise<number | undefined> {
  let loaded: LoadedOneShot;
  try {
    loaded = loadOneShot();
  } catch {
    // No bundle (a build that skipped it) or one that does not load: the usual path answers.
    return undefined;
  }
  return loaded.main(argv);
}

/** `toolbelt doctor`'s line about the one-shot bundle: built, current, and its cache usable here. */
export function oneShotCheck(dist = DIST): { name: string; status: string; detail: string } {
  const name = "one-shot run";
  if (process.env.TOOLBELT_NO_ONESHOT === "1")
    return { name, status: "skipped", detail: "TOOLBELT_NO_ONESHOT=1: every run takes the usual path" };
  const index = readIndex(dist);
  if (!index)
    return { name, status: "unavailable", detail: `no ${ONESHOT_INDEX}: the build did not write the bundle` };
  if (!samePackages(index.packages, ONESHOT_PACKAGES))
    return {
      name,
      status: "skipped",
      detail: "the installed toolbelt packages changed since the bundle was built: runs take the usual path",
    };
  let cache: CompiledCommonJs["cache"];
  try {
    // Compiled, not run: whether V8 takes the cache is known once the script is made.
    cache = compileCommonJs(path.join(dist, ONESHOT_CODE), { run: false }).cache;
  } catch (error) {
    return { name, status: "unavailable", detail: (error as Error).message };
  }
  if (cache === "none")
    return { name, status: "unavailable", detail: `no ${ONESHOT_CACHE} beside ${ONESHOT_CODE}` };
  return cache === "rejected"
    ? {
        name,
        status: "ok",
        detail: `${index.files.join(", ")} run from ${ONESHOT_CODE}; its code cache was made by another Node or with other V8 flags, so it compiles each time`,
      }
    : { name, status: "ok", detail: `${index.files.join(", ")} run from ${ONESHOT_CODE} and its code cache` };
}
