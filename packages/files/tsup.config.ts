import { packageBuild } from "../../tsup.preset.js";

export default packageBuild({ entry: ["src/index.ts", "src/contrib.ts"] });
