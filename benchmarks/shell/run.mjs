// Shell benchmark: spawn overhead of the shell tool against raw child_process for `true`, the
// Landlock sandbox's extra cost, and output throughput. Needs the built packages (npm run build).
//   node benchmarks/shell/run.mjs [--runs N]
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { stats, table } from "../lib.mjs";

const core = fileURLToPath(new URL("../../packages/core/dist/index.js", import.meta.url));
const shellPkg = fileURLToPath(new URL("../../packages/shell/dist/index.js", import.meta.url));
const helper = fileURLToPath(new URL("../../packages/shell/bin/toolbelt-sandbox", import.meta.url));
if (!existsSync(core) || !existsSync(shellPkg)) {
  console.error("build first: npm run build -w @toolbelt/core -w @toolbelt/shell");
  process.exit(1);
}
const { createSession } = await import(core);
const { family, probeSandbox } = await import(shellPkg);

const runsArg = process.argv.indexOf("--runs");
const RUNS = runsArg > 0 ? Number(process.argv[runsArg + 1]) : 200;
const BASH = existsSync("/bin/bash") ? "/bin/bash" : "/bin/sh";
const root = mkdtempSync(path.join(os.tmpdir(), "tb-shell-bench-"));

/** The baseline: what a careful caller writes by hand (detached group, both pipes, wait for close). */
function raw(argv, onData) {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), {
      cwd: root,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout.on("data", onData ?? (() => {}));
    child.stderr.on("data", onData ?? (() => {}));
    child.on("error", reject);
    child.on("close", resolve);
  });
}

async function time(fn) {
  const start = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - start) / 1e6;
}

/**
 * Runs the variants interleaved (A B C A B C …) so machine noise hits them alike. Besides wall
 * time it records this process's CPU time per call (user + system), which other load on the
 * machine does not inflate: the cost the tool adds on top of the spawn itself.
 */
async function compare(variants, runs, warmup = 20) {
  const times = variants.map(() => []);
  const cpu = variants.map(() => 0);
  for (let i = 0; i < warmup + runs; i++) {
    for (const [index, variant] of variants.entries()) {
      const before = process.cpuUsage();
      const ms = await time(variant.run);
      const used = process.cpuUsage(before);
      if (i >= warmup) {
        times[index].push(ms);
        cpu[index] += (used.user + used.system) / 1000;
      }
    }
  }
  return variants.map((v, index) => ({ name: v.name, cpu: cpu[index] / runs, ...stats(times[index]) }));
}

const off = await createSession({
  root,
  plugins: [family],
  allow: ["shell"],
  config: { agent: { shell_sandbox: "off" } },
});
const sandboxed = await createSession({
  root,
  plugins: [family],
  allow: ["shell"],
  config: { agent: { shell_sandbox: "best-effort" } },
});
const probe = probeSandbox();
const landlock = probe.abi > 0;

async function tool(session, input, expectSandbox) {
  const r = await session.call("shell", input);
  if (r.kind !== "shell_result" || r.exit_code !== 0) throw new Error(JSON.stringify(r));
  if (expectSandbox && r.sandbox !== expectSandbox) throw new Error(`sandbox ${r.sandbox}`);
  return r;
}

const spawnVariants = [
  { name: `raw child_process: ${BASH} -c true`, run: () => raw([BASH, "-c", "true"]) },
  { name: "shell tool `true` (sandbox off)", run: () => tool(off, { command: "true" }, "off") },
];
if (landlock) {
  spawnVariants.push(
    {
      name: `raw: helper + ${BASH} -c true`,
      run: () => raw([helper, "--write", root, "--", BASH, "-c", "true"]),
    },
    { name: "shell tool `true` (Landlock)", run: () => tool(sandboxed, { command: "true" }, "landlock") },
  );
}
const spawnResults = await compare(spawnVariants, RUNS);
const base = spawnResults[0].median;

console.log(`## Spawn overhead (${RUNS} runs each, interleaved; median / p10 / p90)\n`);
console.log(
  table(
    ["variant", "median", "p10", "p90", "median vs raw", "p10 vs raw", "node CPU / call"],
    spawnResults.map((r) => [
      r.name,
      `${r.median.toFixed(2)} ms`,
      `${r.p10.toFixed(2)} ms`,
      `${r.p90.toFixed(2)} ms`,
      `${(r.median / base).toFixed(2)}x`,
      `${(r.p10 / spawnResults[0].p10).toFixed(2)}x`,
      `${r.cpu.toFixed(2)} ms`,
    ]),
  ),
);
const toolOff = spawnResults[1].median;
console.log(
  `\nshell tool / raw child_process: ${(toolOff / base).toFixed(2)}x median, ${(spawnResults[1].p10 / spawnResults[0].p10).toFixed(2)}x p10 (goal <= 1.3x); load average ${os.loadavg()[0].toFixed(1)} on ${os.cpus().length} CPUs`,
);
if (landlock) {
  const rawSandbox = spawnResults[2].median - base;
  const toolSandbox = spawnResults[3].median - toolOff;
  console.log(
    `Landlock sandbox extra cost per command: ${toolSandbox.toFixed(2)} ms through the tool, ${rawSandbox.toFixed(2)} ms raw (helper exec + ruleset; ABI ${probe.abi})`,
  );
} else {
  console.log(`Landlock sandbox: not measured (${probe.reason})`);
}

// Throughput: one process writing straight into the pipe, so the pipe and the reader are measured.
const BYTES = 256 * 1024 * 1024;
const cmd = `head -c ${BYTES} /dev/zero`;
const throughput = [];
for (const [name, run] of [
  ["raw child_process (count bytes)", () => raw([BASH, "-c", cmd], () => {})],
  ["shell tool (head+tail capture)", () => tool(off, { command: cmd, timeout: 600 })],
  ["shell tool, Landlock", () => tool(sandboxed, { command: cmd, timeout: 600 })],
]) {
  if (name.includes("Landlock") && !landlock) continue;
  const times = [];
  for (let i = 0; i < 3; i++) times.push(await time(run));
  const best = Math.min(...times);
  throughput.push([
    name,
    `${(BYTES / 1024 / 1024 / (best / 1000)).toFixed(0)} MB/s`,
    `${best.toFixed(0)} ms`,
  ]);
}
// A pseudo-terminal is far slower than a pipe; a smaller volume keeps the run short.
const PTY_BYTES = 16 * 1024 * 1024;
const ptyTimes = [];
for (let i = 0; i < 2; i++) {
  ptyTimes.push(
    await time(() =>
      tool(off, { command: `head -c ${PTY_BYTES} /dev/zero | tr '\\0' a`, tty: true, timeout: 600 }),
    ),
  );
}
const ptyBest = Math.min(...ptyTimes);
throughput.push([
  "shell tool, tty: true (16 MB)",
  `${(PTY_BYTES / 1024 / 1024 / (ptyBest / 1000)).toFixed(0)} MB/s`,
  `${ptyBest.toFixed(0)} ms`,
]);

console.log(`\n## Output throughput (${BYTES / 1024 / 1024} MB of output, best of 3)\n`);
console.log(table(["reader", "throughput", "time"], throughput));

await off.close();
await sandboxed.close();
rmSync(root, { recursive: true, force: true });
