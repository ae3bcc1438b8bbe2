import { accessSync, constants } from "node:fs";
import type { ToolbeltConfig } from "@toolbelt/core";
import { ENV, findExecutable, readEnv } from "@toolbelt/core/internal";

export type EngineName = "ripgrep" | "js";

/** Where the ripgrep binary came from, or that there is none. */
export type RipgrepLocation = { path: string; source: "bundled" | "path" } | undefined;

let located: Promise<RipgrepLocation> | undefined;

function executable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

async function locate(): Promise<RipgrepLocation> {
  try {
    // The import throws when the per-platform binary package is missing (offline installs).
    const mod = (await import("@vscode/ripgrep")) as { rgPath?: string };
    if (mod.rgPath && executable(mod.rgPath)) return { path: mod.rgPath, source: "bundled" };
  } catch {
    // fall through to PATH
  }
  // Never through a relative PATH entry: it would resolve against the project root, where a file
  // named `rg` in the checkout would become the search engine.
  const onPath = findExecutable("rg");
  return onPath ? { path: onPath, source: "path" } : undefined;
}

/** The ripgrep binary, resolved once per process. */
export function locateRipgrep(): Promise<RipgrepLocation> {
  located ??= locate();
  return located;
}

/** The engine forced by TOOLBELT_SEARCH_ENGINE (wins) or config `tools.search.engine`, if any. */
export function forcedEngine(config: ToolbeltConfig): { engine: EngineName; by: string } | undefined {
  const env = readEnv(ENV.TOOLBELT_SEARCH_ENGINE);
  if (env) return { engine: env, by: ENV.TOOLBELT_SEARCH_ENGINE.name };
  const configured = config.tools.search?.engine;
  if (configured) return { engine: configured, by: "tools.search.engine" };
  return undefined;
}

export type EngineChoice =
  | { engine: "ripgrep"; rg: NonNullable<RipgrepLocation>; reason: string }
  | { engine: "js"; reason: string }
  | { engine: "unavailable"; reason: string };

/** Which engine a search uses, and why. */
export async function chooseEngine(config: ToolbeltConfig): Promise<EngineChoice> {
  const forced = forcedEngine(config);
  if (forced?.engine === "js") return { engine: "js", reason: `forced by ${forced.by}` };
  const rg = await locateRipgrep();
  if (rg) {
    const where = rg.source === "bundled" ? "bundled @vscode/ripgrep" : "rg on PATH";
    return { engine: "ripgrep", rg, reason: forced ? `forced by ${forced.by} (${where})` : where };
  }
  if (forced?.engine === "ripgrep") {
    return {
      engine: "unavailable",
      reason: `${forced.by} forces ripgrep, but neither @vscode/ripgrep's binary nor rg on PATH was found`,
    };
  }
  return { engine: "js", reason: "no ripgrep found (bundled or on PATH)" };
}
