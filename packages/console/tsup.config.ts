import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";
import { packageBuild } from "../../tsup.preset.js";
import { buildConsolePage } from "./src/build-page.js";

// The browser app is bundled here, once, and baked into dist/index.js as a string.
const page = buildConsolePage({ esbuild, srcDir: fileURLToPath(new URL("./src", import.meta.url)) });

export default packageBuild({
  define: { __TOOLBELT_CONSOLE_PAGE__: JSON.stringify(page) },
});
