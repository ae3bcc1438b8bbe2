// The entry of dist/oneshot.cjs (scripts/oneshot-bundle.mjs bundles it; see oneshot.ts).
import { z } from "@toolbelt/core";

// One call per process: zod's code generation for object schemas (a `new Function` per schema,
// compiled on every run, since V8's code cache holds only the bundle's own code) costs more than
// it can save on a single parse. Validation is the same either way.
z.config({ jitless: true });

export { main } from "./cli.js";
