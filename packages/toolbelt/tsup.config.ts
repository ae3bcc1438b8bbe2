import { packageBuild } from "../../tsup.preset.js";

export default packageBuild({
  // tool-families.ts is an entry of its own so scripts/tool-families.mjs fingerprints packages as the CLI does.
  entry: ["src/index.ts", "src/bin.ts", "src/tool-families.ts"],
  dts: { entry: "src/index.ts" },
  splitting: true,
});
