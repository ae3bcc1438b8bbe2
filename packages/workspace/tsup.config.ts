import { packageBuild } from "../../tsup.preset.js";

export default packageBuild();
