import { defineConfig } from "tsup";

export default defineConfig({
  // tool-families.ts is an entry of its own so scripts/tool-families.mjs fingerprints packages as the CLI does.
  entry: ["src/index.ts", "src/bin.ts", "src/tool-families.ts"],
  format: ["esm"],
  dts: { entry: "src/index.ts" },
  clean: true,
  target: "node20",
  splitting: true,
});
