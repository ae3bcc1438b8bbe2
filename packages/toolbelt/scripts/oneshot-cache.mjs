// Run by oneshot-bundle.mjs in a fresh process: loads dist/oneshot.cjs with no cache, makes a few
// one-shot calls of the kind the bundle serves (so what they compile lands in the cache too), then
// writes V8's code cache for the bundle to dist/oneshot.cjs.cache. Then the same for the gate
// (dist/oneshot-gate.cjs.cache), compiled as bin/toolbelt.js compiles it, asked about a few lines.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const DIST = path.join(path.dirname(path.dirname(fileURLToPath(import.meta.url))), "dist");
const { loadOneShot, ONESHOT_CACHE } = await import(pathToFileURL(path.join(DIST, "oneshot.js")).href);

const work = mkdtempSync(path.join(os.tmpdir(), "tb-oneshot-cache-"));
const root = path.join(work, "project");
mkdirSync(path.join(root, "src"), { recursive: true });
writeFileSync(path.join(root, "src", "a.ts"), "export const a = 1;\n// TODO: b\n");
// No config of the machine building: the bundle serves runs with no config anywhere.
process.env.TOOLBELT_CONFIG_DIR = path.join(work, "user");
delete process.env.XDG_CONFIG_HOME;
delete process.env.TOOLBELT_TRUST;

const loaded = loadOneShot(DIST, { cache: false });
const calls = [
  ["read_file", { path: "src/a.ts" }],
  ["read_file", { path: "missing.txt" }],
  ["read_file", { path: 7 }],
  ["list_dir", { path: "." }],
  ["list_files", { pattern: "**/*.ts" }],
  ["write_file", { path: "src/b.ts", content: "export const b = 2;\n" }],
];
// The answers go to stdout, which oneshot-bundle.mjs discards.
try {
  for (const [tool, input] of calls)
    await loaded.main(["run", tool, "--root", root, "--input", JSON.stringify(input)]);
  writeFileSync(path.join(DIST, ONESHOT_CACHE), loaded.script.createCachedData());

  const { compileCommonJs } = createRequire(import.meta.url)(path.join(DIST, "oneshot-load.cjs"));
  const gateFile = path.join(DIST, "oneshot-gate.cjs");
  const gate = compileCommonJs(gateFile, { cache: false });
  for (const line of [
    ["run", "read_file", "--root", root, "--input", '{"path":"src/a.ts"}'],
    ["run", "list_dir", "--no-interactive", "--input", "{}"],
    ["run", "shell", "--input", '{"command":"true"}'],
    ["run", "read_file", "--help"],
  ])
    gate.exports.oneShotServes(line);
  gate.exports.quietEpipe();
  gate.exports.loadOneShot(); // what the bin does next, from the cache just written
  writeFileSync(`${gateFile}.cache`, gate.script.createCachedData());
} finally {
  process.exitCode = 0;
  rmSync(work, { recursive: true, force: true });
}
