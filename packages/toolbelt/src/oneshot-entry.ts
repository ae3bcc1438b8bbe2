// The entry of dist/oneshot.cjs (scripts/oneshot-bundle.mjs bundles it; see oneshot.ts).
export { main } from "./cli.js";
