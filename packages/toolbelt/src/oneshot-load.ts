import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import vm from "node:vm";

// Loads a CommonJS file of dist/ as Node would, but compiled from the V8 code cache the build wrote
// beside it (`<file>.cache`): the one-shot bundle (dist/oneshot.cjs) and its gate
// (dist/oneshot-gate.cjs, which bin/toolbelt.js loads through dist/oneshot-load.cjs, this file
// bundled alone). The build makes each cache with this same function, so the source V8 is given is
// the one the cache was made for (V8 refuses a cache made for a source of another length).

export interface CompiledCommonJs {
  exports: Record<string, unknown>;
  script: vm.Script;
  /** What V8 did with the code cache: used, refused (another Node or other V8 flags), or none given. */
  cache: "accepted" | "rejected" | "none";
}

/** The source V8 compiles: CommonJS's wrapper around the file. */
function wrapCommonJs(source: string): string {
  return `(function (exports, require, module, __filename, __dirname) {${source}\n})`;
}

/**
 * Compiles and runs `file` (ASCII by construction: read as latin1, which skips UTF-8 decoding) with
 * `<file>.cache` unless `cache: false`. A missing or refused cache only costs the compile. With
 * `run: false` it is only compiled (whether V8 takes the cache is known then), and exports nothing.
 */
export function compileCommonJs(
  file: string,
  options: { cache?: boolean; run?: boolean } = {},
): CompiledCommonJs {
  const source = readFileSync(file, "latin1");
  let cachedData: Buffer | undefined;
  if (options.cache !== false) {
    try {
      cachedData = readFileSync(`${file}.cache`);
    } catch {
      cachedData = undefined;
    }
  }
  const script = new vm.Script(
    wrapCommonJs(source),
    cachedData ? { filename: file, cachedData } : { filename: file },
  );
  const module = { exports: {} as Record<string, unknown> };
  if (options.run !== false)
    (script.runInThisContext() as (...args: unknown[]) => void)(
      module.exports,
      createRequire(file),
      module,
      file,
      path.dirname(file),
    );
  return {
    exports: module.exports,
    script,
    cache: !cachedData ? "none" : script.cachedDataRejected ? "rejected" : "accepted",
  };
}
