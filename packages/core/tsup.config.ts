import path from "node:path";
import { packageBuild } from "../../tsup.preset.js";

// zod is bundled into core's build: loaded from its package it is 97 ESM modules (65 of them
// locales), a large share of a cold start (see benchmarks/RESULTS.md). Every built-in family takes `z`
// from core, so a process holds one copy; a plugin's own zod is a second copy, which zod 4 supports
// (instanceof by traits, one registry on globalThis). Only the English locale is kept — the messages
// toolbelt shows are English.
export default packageBuild({
  // internal: the toolkit the built-in families share (no stability promise).
  // config-paths: a zod-free entry the CLI reads to learn whether any config exists (no zod loaded).
  entry: ["src/index.ts", "src/internal.ts", "src/config-paths.ts"],
  noExternal: ["zod"],
  esbuildPlugins: [
    {
      name: "zod-english-only",
      setup(build) {
        build.onResolve({ filter: /[/\\]locales[/\\]index\.js$/ }, (args) =>
          args.importer.includes(`${path.sep}zod${path.sep}`)
            ? {
                path: path.join(path.dirname(args.importer), "..", "locales", "index.js"),
                namespace: "zod-locales",
              }
            : undefined,
        );
        build.onLoad({ filter: /.*/, namespace: "zod-locales" }, (args) => ({
          contents: `export { default as en } from ${JSON.stringify(path.join(path.dirname(args.path), "en.js"))};`,
          resolveDir: path.dirname(args.path),
          loader: "js",
        }));
      },
    },
  ],
});
