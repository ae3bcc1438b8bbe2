// Startup: `toolbelt --version` and a one-shot `toolbelt run` against `node -e ''`, side by side.
// Goal: at most 1.5x `node -e ''`.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { BIN, fmt, ratio, stats, table, timeCommand } from "../lib.mjs";

const runs = Number(process.env.BENCH_RUNS ?? 30);
const root = mkdtempSync(path.join(os.tmpdir(), "tb-bench-startup-"));
writeFileSync(path.join(root, "hello.txt"), "hello\nworld\n");

const node = process.execPath;
const cases = [
  ["node -e ''", [node, "-e", ""]],
  ["toolbelt --version", [node, BIN, "--version"]],
  [
    "toolbelt run read_file",
    [node, BIN, "run", "read_file", "--root", root, "--input", '{"path":"hello.txt"}'],
  ],
  [
    "toolbelt run no_such_tool (loads every family)",
    [node, BIN, "run", "no_such_tool", "--root", root, "--input", "{}"],
  ],
];
const results = [];
for (const [name, argv] of cases) {
  const okCodes = name.includes("no_such_tool") ? [1] : [0];
  results.push([name, stats(timeCommand(argv, { runs, okCodes, cwd: root }))]);
}
rmSync(root, { recursive: true, force: true });
const baseline = results[0][1].median;
console.log(`## startup (median of ${runs} runs, ${os.cpus().length} cores, node ${process.version})\n`);
console.log(
  table(
    ["command", "median", "p10", "p90", "vs node -e ''"],
    results.map(([name, s]) => [name, fmt(s.median), fmt(s.p10), fmt(s.p90), ratio(s.median, baseline)]),
  ),
);
