// `npm run bench`: runs every benchmarks/<name>/run.mjs (or those named on the command line) in turn.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";

const dir = fileURLToPath(new URL("./", import.meta.url));
const wanted = process.argv.slice(2);
const names = readdirSync(dir, { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(`${dir}${d.name}/run.mjs`))
  .map((d) => d.name)
  .filter((n) => wanted.length === 0 || wanted.includes(n))
  .sort();
let failed = 0;
for (const name of names) {
  console.log(`\n# benchmarks/${name}\n`);
  const result = spawnSync(process.execPath, [`${dir}${name}/run.mjs`], { stdio: "inherit" });
  if (result.status !== 0) {
    failed++;
    console.log(`benchmarks/${name} failed (exit ${result.status})`);
  }
}
process.exitCode = failed ? 1 : 0;
