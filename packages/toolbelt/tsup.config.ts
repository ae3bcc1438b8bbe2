import { packageBuild } from "../../tsup.preset.js";

export default packageBuild({
  // manifest.ts is an entry of its own so scripts/tool-manifest.mjs fingerprints packages as the CLI does.
  // oneshot.ts likewise, for scripts/oneshot-cache.mjs to load the bundle as bin.ts does.
  entry: ["src/index.ts", "src/bin.ts", "src/manifest.ts", "src/oneshot.ts"],
  dts: { entry: "src/index.ts" },
  splitting: true,
});
