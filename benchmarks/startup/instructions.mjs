// Start-up cost in instructions, counted by valgrind's callgrind: the same count for the same binary
// and inputs whatever else the machine is doing, so the decomposition of a start-up holds on a
// loaded machine where wall times do not. Each row is a ratio against `node -e ''` counted alike.
// Needs valgrind (Debian: apt-get install valgrind). Usage: node benchmarks/startup/instructions.mjs
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { BIN, REPO, table } from "../lib.mjs";

if (spawnSync("valgrind", ["--version"]).status !== 0) {
  console.log("skipped: valgrind is not installed (apt-get install valgrind)");
  process.exit(0);
}

const work = mkdtempSync(path.join(os.tmpdir(), "tb-bench-instr-"));
writeFileSync(path.join(work, "hello.txt"), "hello\nworld\n");
writeFileSync(path.join(work, "empty.mjs"), "export const x = 1;\n");
const env = { ...process.env, TOOLBELT_CONFIG_DIR: mkdtempSync(path.join(os.tmpdir(), "tb-bench-user-")) };

// zod as core bundles it (one file, English locale only), to show what loading the schema language
// costs by itself.
const { build } = await import("esbuild");
await build({
  stdin: {
    contents: 'export * as z from "zod";',
    resolveDir: path.join(REPO, "packages/core"),
    loader: "js",
  },
  bundle: true,
  format: "esm",
  platform: "node",
  outfile: path.join(work, "zod.mjs"),
  logLevel: "warning",
  plugins: [
    {
      name: "zod-english-only",
      setup(b) {
        b.onResolve({ filter: /[/\\]locales[/\\]index\.js$/ }, (a) =>
          a.importer.includes(`${path.sep}zod${path.sep}`)
            ? { path: path.join(path.dirname(a.importer), "..", "locales", "index.js"), namespace: "en" }
            : undefined,
        );
        b.onLoad({ filter: /.*/, namespace: "en" }, (a) => ({
          contents: `export { default as en } from ${JSON.stringify(path.join(path.dirname(a.path), "en.js"))};`,
          resolveDir: path.dirname(a.path),
          loader: "js",
        }));
      },
    },
  ],
});

/** Instructions callgrind counts for one run of argv (the whole process, start to exit). */
function instructions(argv, extra) {
  const r = spawnSync("valgrind", ["--tool=callgrind", "--callgrind-out-file=/dev/null", ...argv], {
    cwd: work,
    env: extra ? { ...env, ...extra } : env,
    encoding: "utf8",
    maxBuffer: 1 << 26,
  });
  const m = /Collected : (\d+)/.exec(r.stderr);
  if (r.status !== 0 || !m) throw new Error(`${argv.join(" ")} failed: ${r.stderr.slice(-500)}`);
  return Number(m[1]);
}

const node = process.execPath;
const NPM_BIN = path.join(REPO, "packages/toolbelt/bin/toolbelt.js");
// The yargs the CLI imports (its ES module entry), resolved from the toolbelt package.
const YARGS = path.join(
  path.dirname(
    createRequire(path.join(REPO, "packages/toolbelt/package.json")).resolve("yargs/package.json"),
  ),
  "index.mjs",
);
const read = ["run", "read_file", "--input", '{"path":"hello.txt"}'];
const imp = (file) => [node, "-e", `await import(${JSON.stringify(file)})`];
const rows = [
  ["node -e ''", [node, "-e", ""]],
  ["import an empty ES module", imp(path.join(work, "empty.mjs"))],
  ["import zod (one file, English only, as in core)", imp(path.join(work, "zod.mjs"))],
  ["import @toolbelt/core", imp(path.join(REPO, "packages/core/dist/index.js"))],
  ["import yargs (as the CLI does)", imp(YARGS)],
  ["toolbelt --version", [node, BIN, "--version"]],
  ["toolbelt tools", [node, BIN, "tools"]],
  ["toolbelt run read_file", [node, NPM_BIN, ...read]],
];
const counts = rows.map(([, argv, extra]) => instructions(argv, extra));
const base = counts[0];
console.log(`Node ${process.version}; instructions counted by callgrind, one run each (deterministic)\n`);
console.log(
  table(
    ["command", "instructions", "vs node -e ''"],
    rows.map(([name], i) => [name, `${(counts[i] / 1e6).toFixed(1)} M`, `${(counts[i] / base).toFixed(2)}x`]),
  ),
);
