// Rewrites the environment variable table of docs/configuration.md (between its env-table markers)
// from the registry in packages/core/src/env-vars.ts, as built: run `npm run build` first.
// packages/core/src/env-vars.test.ts fails while the two differ.
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { renderEnvTable } from "@toolbelt/core/internal";

const DOC = fileURLToPath(new URL("../docs/configuration.md", import.meta.url));
const START = "<!-- env-table:start -->";
const END = "<!-- env-table:end -->";

const text = readFileSync(DOC, "utf8");
const from = text.indexOf(START);
const to = text.indexOf(END);
if (from === -1 || to < from) throw new Error(`${DOC} has no ${START} … ${END} block`);
writeFileSync(DOC, `${text.slice(0, from + START.length)}\n${renderEnvTable()}\n${text.slice(to)}`);
console.log("docs/configuration.md: environment variable table rewritten");
