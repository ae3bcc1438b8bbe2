import { defineConfig, type Options } from "tsup";

/**
 * The one build every package shares: ESM for Node 20, bundled `.d.ts`, `dist/` emptied first. A
 * package passes what is its own (its entry points, and anything special such as core's bundled zod).
 */
export function packageBuild(options: Options = {}) {
  return defineConfig({
    entry: ["src/index.ts"],
    format: ["esm"],
    dts: true,
    clean: true,
    target: "node20",
    ...options,
  });
}
