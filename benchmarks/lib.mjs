// Small shared helpers for the benchmark scripts: timing child processes and printing tables.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

export const REPO = fileURLToPath(new URL("../", import.meta.url));
export const BIN = fileURLToPath(new URL("../packages/toolbelt/dist/bin.js", import.meta.url));

/** Runs argv `runs` times after `warmup` runs; returns wall times in ms. Throws if a run fails. */
export function timeCommand(argv, { runs = 20, warmup = 3, cwd = REPO, input, okCodes = [0], env } = {}) {
  const times = [];
  for (let i = 0; i < warmup + runs; i++) {
    const start = process.hrtime.bigint();
    const result = spawnSync(argv[0], argv.slice(1), {
      cwd,
      env,
      input,
      encoding: "utf8",
      maxBuffer: 1 << 30,
    });
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    if (!okCodes.includes(result.status)) {
      throw new Error(`${argv.join(" ")} exited ${result.status}: ${result.stderr || result.stdout}`);
    }
    if (i >= warmup) times.push(ms);
  }
  return times;
}

export function stats(times) {
  const sorted = [...times].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return {
    median: at(0.5),
    p10: at(0.1),
    p90: at(0.9),
    mean: times.reduce((a, b) => a + b, 0) / times.length,
  };
}

export function table(headers, rows) {
  const lines = [`| ${headers.join(" | ")} |`, `|${headers.map(() => "---").join("|")}|`];
  for (const row of rows) lines.push(`| ${row.join(" | ")} |`);
  return lines.join("\n");
}

export const fmt = (ms) => `${ms.toFixed(1)} ms`;
export const ratio = (a, b) => `${(a / b).toFixed(2)}x`;
