import path from "node:path";
import { defineConfig } from "tsup";

// zod is bundled into core's one file: loaded from its package it is 97 ESM modules (65 of them
// locales), about 45 ms of every cold start on the development machine, against about 6 ms as part
// of this file. Every built-in family takes `z` from core, so a process holds one copy; a plugin's own
// zod is a second copy, which zod 4 supports (instanceof by traits, one registry on globalThis).
// Only the English locale is kept — the messages toolbelt shows are English.
export default defineConfig({
  // internal: the toolkit the built-in families share (no stability promise).
  // config-paths: a zod-free entry the CLI reads to learn whether any config exists (no zod loaded).
  entry: ["src/index.ts", "src/internal.ts", "src/config-paths.ts"],
  format: ["esm"],
  dts: true,
  clean: true,
  target: "node20",
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
