// Workspaces benchmark: per-call latency of read_file (small), search_files and shell (`true`) on
// this machine vs the same session in a Docker container (an image without toolbelt: the host's
// Node and toolbelt mounted) vs over SSH on loopback, side by side in one run; then 20 sessions in 20
// containers calling at once, counting every answer. Needs the build (npm run build).
//   TOOLBELT_TEST_DOCKER_HOST=unix:///tmp/dk/docker.sock \
//   [BENCH_SSH=host BENCH_SSH_CONFIG=/path/ssh_config] node benchmarks/workspaces/run.mjs [--runs N]
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { fmt, stats, table } from "../lib.mjs";

const { createToolbelt } = await import(
  fileURLToPath(new URL("../../packages/toolbelt/dist/index.js", import.meta.url))
);
const runsArg = process.argv.indexOf("--runs");
const RUNS = runsArg > 0 ? Number(process.argv[runsArg + 1]) : 100;
const DOCKER = process.env.TOOLBELT_TEST_DOCKER_HOST;
const IMAGE = "toolbelt-base:bookworm";
const SESSIONS = 20;
const CALLS_EACH = 20;

const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), "tb-ws-bench-")));
writeFileSync(path.join(root, "small.txt"), "hello\nworld\n");
mkdirSync(path.join(root, "src"));
for (let i = 0; i < 50; i++)
  writeFileSync(path.join(root, "src", `f${i}.ts`), `export const v${i} = ${i};\n// needle ${i}\n`);

const targets = [["local", undefined]];
if (DOCKER) targets.push(["docker", { kind: "docker", image: IMAGE, docker: DOCKER }]);
if (process.env.BENCH_SSH)
  targets.push([
    "ssh",
    {
      kind: "ssh",
      destination: process.env.BENCH_SSH,
      ...(process.env.BENCH_SSH_CONFIG ? { sshArgs: ["-F", process.env.BENCH_SSH_CONFIG] } : {}),
    },
  ]);

const calls = {
  read_file: { path: "small.txt" },
  search_files: { query: "needle 4" },
  shell: { command: "true" },
};

async function time(session, tool, input, runs) {
  for (let i = 0; i < 5; i++) await session.call(tool, input);
  const times = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    const result = await session.call(tool, input);
    times.push(performance.now() - t);
    if (result.kind === "error") throw new Error(`${tool}: ${result.code} ${result.message}`);
  }
  return stats(times);
}

const sessions = new Map();
for (const [name, workspace] of targets)
  sessions.set(
    name,
    await createToolbelt({ root, userConfig: false, allow: ["shell"], ...(workspace ? { workspace } : {}) }),
  );
const rows = [];
const medians = {};
for (const [tool, input] of Object.entries(calls)) {
  // Round-robin in slices, so load changes hit every target alike.
  const per = Object.fromEntries(targets.map(([n]) => [n, []]));
  for (let slice = 0; slice < 5; slice++)
    for (const [name] of targets)
      per[name].push((await time(sessions.get(name), tool, input, RUNS / 5)).median);
  for (const [name] of targets) {
    const median = stats(per[name]).median;
    medians[`${tool}/${name}`] = median;
    rows.push([tool, name, fmt(median), name === "local" ? "—" : fmt(median - medians[`${tool}/local`])]);
  }
}
for (const session of sessions.values()) await session.close();
console.log(
  `## per call (median of ${RUNS} calls in 5 interleaved slices; load ${os.loadavg()[0].toFixed(1)})\n`,
);
console.log(table(["tool", "workspace", "median", "overhead vs local"], rows));

if (DOCKER) {
  // Sessions open a few at a time (each starts a container and a Node there, which on two cores is
  // what limits); then every session calls at once.
  const opened = [];
  const started = performance.now();
  try {
    for (let i = 0; i < SESSIONS; i += 4)
      opened.push(
        ...(await Promise.all(
          Array.from({ length: Math.min(4, SESSIONS - i) }, () =>
            createToolbelt({
              root,
              userConfig: false,
              workspace: { kind: "docker", image: IMAGE, docker: DOCKER },
            }),
          ),
        )),
      );
    const openMs = performance.now() - started;
    const t = performance.now();
    const results = await Promise.allSettled(
      opened.flatMap((s) =>
        Array.from({ length: CALLS_EACH }, (_, i) => s.call("read_file", { path: `src/f${i}.ts` })),
      ),
    );
    const callMs = performance.now() - t;
    const ok = results.filter(
      (r, n) =>
        r.status === "fulfilled" &&
        r.value.kind === "file_content" &&
        r.value.content.includes(`needle ${n % CALLS_EACH}`),
    ).length;
    console.log(
      `\n## ${SESSIONS} sessions in ${SESSIONS} containers (load ${os.loadavg()[0].toFixed(1)})\n\nopened in ${fmt(openMs)}; ${results.length} read_file calls at once: ${ok} answered correctly, ${results.length - ok} lost or failed, in ${fmt(callMs)}`,
    );
  } finally {
    await Promise.allSettled(opened.map((s) => s.close()));
  }
}
rmSync(root, { recursive: true, force: true });
