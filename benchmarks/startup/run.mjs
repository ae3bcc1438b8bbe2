// Startup and exec overhead, each figure against its raw baseline measured in the same run:
// one-shot commands against `node -e ''`, exec's first answer and its calls/s against a plain Node
// script doing the same reads over the same JSONL (plain-exec.mjs). Goals: `run read_file` ≤ 2.0x
// `node -e ''`; exec's rate ≥ 0.9x the plain script's.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { BIN, fmt, ratio, stats, table, timeCommand } from "../lib.mjs";

const runs = Number(process.env.BENCH_RUNS ?? 30);
// BENCH_COMPARE=<another checkout's packages/toolbelt/dist/bin.js> runs that build's exec in the same
// rounds (one run of each per round), for a before/after measured side by side.
const compare = process.env.BENCH_COMPARE;
const execRuns = Number(process.env.BENCH_EXEC_RUNS ?? 7);
const calls = Number(process.env.BENCH_CALLS ?? 1000);
const PLAIN = fileURLToPath(new URL("./plain-exec.mjs", import.meta.url));
const node = process.execPath;

const root = mkdtempSync(path.join(os.tmpdir(), "tb-bench-startup-"));
writeFileSync(path.join(root, "hello.txt"), "hello\nworld\n");
mkdirSync(path.join(root, "src"));
for (let i = 0; i < 50; i++)
  writeFileSync(
    path.join(root, "src", `f${i}.txt`),
    Array.from({ length: 40 }, (_, n) => `line ${n}`).join("\n"),
  );
// No user config on the measuring machine changes what loads.
const env = { ...process.env, TOOLBELT_CONFIG_DIR: mkdtempSync(path.join(os.tmpdir(), "tb-bench-user-")) };

/** Spawns argv, writes `input`, and records when each stdout line arrived (ms after spawn). */
function lineTimes(argv, input, { keepOpen = false } = {}) {
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint();
    const child = spawn(argv[0], argv.slice(1), { cwd: root, env, stdio: ["pipe", "pipe", "pipe"] });
    const times = [];
    let pending = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => {
      const at = Number(process.hrtime.bigint() - start) / 1e6;
      pending += chunk;
      let nl = pending.indexOf("\n");
      while (nl >= 0) {
        times.push(at);
        pending = pending.slice(nl + 1);
        nl = pending.indexOf("\n");
      }
      // First answer measured with stdin still open, as a caller waiting for it would have it.
      if (keepOpen && times.length >= 1) child.stdin.end();
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    child.on("error", reject);
    child.on("close", (code) => {
      if (code !== 0) reject(new Error(`${argv.join(" ")} exited ${code}: ${stderr}`));
      else resolve(times);
    });
    child.stdin.write(input);
    if (!keepOpen) child.stdin.end();
  });
}

async function repeat(n, fn) {
  const out = [];
  for (let i = 0; i < n + 1; i++) {
    const value = await fn();
    if (i > 0) out.push(value); // the first run warms the page cache
  }
  return out;
}

// The command npm links (it runs dist/bin.js).
const NPM_BIN = fileURLToPath(new URL("../../packages/toolbelt/bin/toolbelt.js", import.meta.url));
const read = ["run", "read_file", "--input", '{"path":"hello.txt"}'];

// [name, argv, extra environment]
const oneShot = [
  ["node -e ''", [node, "-e", ""]],
  ["toolbelt --version", [node, BIN, "--version"]],
  ["toolbelt run read_file", [node, NPM_BIN, ...read]],
  ["toolbelt tools", [node, BIN, "tools"]],
  ["toolbelt run read_file --help", [node, BIN, "run", "read_file", "--help"]],
  ["toolbelt run no_such_tool (loads every family)", [node, BIN, "run", "no_such_tool", "--input", "{}"]],
];
// Interleaved (one run of each command per round), so a load that changes during the run weighs on
// every command and its baseline alike.
// BENCH_ONLY=exec skips the one-shot commands (the exec rows alone, e.g. while working on per-call cost).
const execOnly = process.env.BENCH_ONLY === "exec";
const times = oneShot.map(() => []);
for (let round = 0; round < (execOnly ? 0 : runs); round++)
  oneShot.forEach(([name, argv, extra], i) => {
    const okCodes = name.includes("no_such_tool") ? [1] : [0];
    const e = extra ? { ...env, ...extra } : env;
    times[i].push(...timeCommand(argv, { runs: 1, warmup: round === 0 ? 2 : 0, okCodes, cwd: root, env: e }));
  });
const results = execOnly ? [] : oneShot.map(([name], i) => [name, stats(times[i])]);
const baseline = execOnly ? 0 : results[0][1].median;

// BENCH_ONLY=oneshot skips exec (the one-shot rows alone, e.g. while working on `tools`).
const oneShotOnly = process.env.BENCH_ONLY === "oneshot";
if (oneShotOnly) {
  const load = os.loadavg()[0].toFixed(1);
  console.log(
    `## startup (median of ${runs} runs, ${os.cpus().length} cores, node ${process.version}, load ${load})\n`,
  );
  console.log(
    table(
      ["command", "median", "p10", "p90", "vs node -e ''"],
      results.map(([name, s]) => [name, fmt(s.median), fmt(s.p10), fmt(s.p90), ratio(s.median, baseline)]),
    ),
  );
  rmSync(root, { recursive: true, force: true });
  rmSync(env.TOOLBELT_CONFIG_DIR, { recursive: true, force: true });
  process.exit(0);
}

const line = (tool, input, id) => `${JSON.stringify({ id: String(id), tool, input })}\n`;
const oneRead = line("read_file", { path: "hello.txt" }, 0);
const firstTb = stats(
  await repeat(execRuns, async () => (await lineTimes([node, BIN, "exec"], oneRead, { keepOpen: true }))[0]),
);
const firstPlain = stats(
  await repeat(execRuns, async () => (await lineTimes([node, PLAIN, root], oneRead, { keepOpen: true }))[0]),
);

/** Calls per second between the first and the last answer (steady state, start-up excluded). */
async function rate(argv, input) {
  const t = await lineTimes(argv, input);
  if (t.length !== calls) throw new Error(`${argv.join(" ")}: ${t.length} answers for ${calls} calls`);
  return ((calls - 1) / (t[t.length - 1] - t[0])) * 1000;
}
/** Medians of toolbelt's, the plain script's (and the compared build's) rates, one of each per round. */
async function throughput(tbArgv, plainArgv, input) {
  const perRun = await repeat(execRuns, async () => [
    await rate(tbArgv, input),
    await rate(plainArgv, input),
    compare ? await rate([node, compare, "exec"], input) : Number.NaN,
  ]);
  return [0, 1, 2].map((k) => stats(perRun.map((r) => r[k])).median);
}
const reads = Array.from({ length: calls }, (_, i) =>
  line("read_file", { path: `src/f${i % 50}.txt` }, i),
).join("");
const lists = Array.from({ length: calls }, (_, i) => line("list_files", { path: "src" }, i)).join("");
const rates = [
  [`exec ${calls} read_file`, ...(await throughput([node, BIN, "exec"], [node, PLAIN, root], reads))],
  [`exec ${calls} list_files`, ...(await throughput([node, BIN, "exec"], [node, PLAIN, root], lists))],
];
rmSync(root, { recursive: true, force: true });
rmSync(env.TOOLBELT_CONFIG_DIR, { recursive: true, force: true });

const load = os.loadavg()[0].toFixed(1);
console.log(
  `## startup (median of ${runs} runs, ${os.cpus().length} cores, node ${process.version}, load ${load})\n`,
);
if (!execOnly)
  console.log(
    table(
      ["command", "median", "p10", "p90", "vs node -e ''"],
      results.map(([name, s]) => [name, fmt(s.median), fmt(s.p10), fmt(s.p90), ratio(s.median, baseline)]),
    ),
  );
console.log(`\n## exec (median of ${execRuns} runs)\n`);
console.log(
  table(
    ["measure", "toolbelt exec", "plain Node script", "ratio"],
    [
      [
        "first answer (spawn → first line)",
        fmt(firstTb.median),
        fmt(firstPlain.median),
        ratio(firstTb.median, firstPlain.median),
      ],
      ...rates.map(([name, tb, plain]) => [
        `${name}, calls/s`,
        tb.toFixed(0),
        plain.toFixed(0),
        `${(tb / plain).toFixed(2)}x the rate`,
      ]),
    ],
  ),
);
if (compare) {
  console.log(`\n## exec side by side with ${compare}\n`);
  console.log(
    table(
      ["measure", "this build", "compared build", "plain", "this / plain", "compared / plain"],
      rates.map(([name, tb, plain, other]) => [
        `${name}, calls/s`,
        tb.toFixed(0),
        other.toFixed(0),
        plain.toFixed(0),
        `${(tb / plain).toFixed(2)}x`,
        `${(other / plain).toFixed(2)}x`,
      ]),
    ),
  );
}
