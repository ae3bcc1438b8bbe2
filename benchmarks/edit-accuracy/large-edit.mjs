// Issue 17: a one-line edit_file in a 100,000-line file (2.9 MB) against a raw read + replace +
// write + fsync of the same file, run interleaved (raw, then each variant, every round) so every
// variant sees the same machine load; medians of per-round ratios to the raw run of that round.
//
// Variants: this build with checkpoints on (the default) and off (`checkpoints.enabled: false`), and,
// with `--base DIR`, the packages/{core,edit}/dist of another checkout (e.g. a worktree of the commit
// before a change, built there). Two edit patterns:
// - alternate: the line flips between two values, so after two calls every checkpoint blob exists
//   (the pattern of benchmarks/search/speed.mjs --only edit);
// - fresh: a new value every call, so every call stores a new after-image blob.
//
// Usage: node benchmarks/edit-accuracy/large-edit.mjs [--rounds N] [--base DIR]   (after the build)
import {
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { REPO, stats, table } from "../lib.mjs";

const args = process.argv.slice(2);
const opt = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const ROUNDS = Number(opt("--rounds", 15));
const BASE = opt("--base", undefined);
const LINES = 100_000;
const TARGET = 50_000;

const work = path.join(os.tmpdir(), `toolbelt-bench-large-edit-${process.pid}`);
rmSync(work, { recursive: true, force: true });
// The checkpoint store goes with the run, not into the user's state dir.
process.env.TOOLBELT_STATE_DIR = path.join(work, "state");
const text = `${Array.from({ length: LINES }, (_, i) => `export const value${i} = ${i};`).join("\n")}\n`;

async function load(dir) {
  const core = await import(path.join(dir, "packages/core/dist/index.js"));
  const edit = await import(path.join(dir, "packages/edit/dist/index.js"));
  return { core, edit };
}

/** A session on its own copy of the file, and a call that edits line TARGET in the given pattern. */
async function variant(name, build, config, pattern) {
  const root = path.join(work, name.replace(/[^a-z0-9]+/gi, "-"));
  mkdirSync(root, { recursive: true });
  writeFileSync(path.join(root, "big.ts"), text);
  const session = await build.core.createSession({ root, plugins: [build.edit.family], config });
  let current = String(TARGET);
  let n = 0;
  return {
    name,
    session,
    async run() {
      n++;
      const next = pattern === "alternate" ? (current === String(TARGET) ? "-1" : String(TARGET)) : `-${n}`;
      const out = await session.call("edit_file", {
        path: "big.ts",
        old_text: `export const value${TARGET} = ${current};`,
        new_text: `export const value${TARGET} = ${next};`,
      });
      if (out.kind !== "edit_result") throw new Error(`${name}: ${JSON.stringify(out)}`);
      current = next;
    },
  };
}

mkdirSync(work, { recursive: true });
const rawFile = path.join(work, "raw.ts");
writeFileSync(rawFile, text);
let rawFlip = false;
function raw() {
  rawFlip = !rawFlip;
  const before = readFileSync(rawFile, "utf8");
  const [from, to] = rawFlip ? [`= ${TARGET};`, "= -1;"] : ["= -1;", `= ${TARGET};`];
  const after = before.replace(`export const value${TARGET} ${from}`, `export const value${TARGET} ${to}`);
  const fd = openSync(rawFile, "w");
  writeSync(fd, after);
  fsyncSync(fd);
  closeSync(fd);
}

const current = await load(REPO);
const base = BASE ? await load(path.resolve(BASE)) : undefined;
const variants = [];
for (const pattern of ["alternate", "fresh"]) {
  if (base) variants.push(await variant(`base ${pattern}`, base, {}, pattern));
  variants.push(await variant(`this build ${pattern}`, current, {}, pattern));
  variants.push(
    await variant(
      `this build ${pattern}, checkpoints off`,
      current,
      { checkpoints: { enabled: false } },
      pattern,
    ),
  );
}

const rawTimes = [];
const times = new Map(variants.map((v) => [v.name, []]));
const ratios = new Map(variants.map((v) => [v.name, []]));
const loads = [];
for (let round = 0; round < ROUNDS + 2; round++) {
  const t0 = process.hrtime.bigint();
  raw();
  const rawMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const row = [];
  for (const v of variants) {
    const s = process.hrtime.bigint();
    await v.run();
    row.push([v.name, Number(process.hrtime.bigint() - s) / 1e6]);
  }
  // Two warm-up rounds: the first calls create the store and the first blobs.
  if (round < 2) continue;
  loads.push(os.loadavg()[0]);
  rawTimes.push(rawMs);
  for (const [name, ms] of row) {
    times.get(name).push(ms);
    ratios.get(name).push(ms / rawMs);
  }
}
for (const v of variants) await v.session.close();

const ms = (x) => `${x.toFixed(1)} ms`;
const loadStats = stats(loads);
console.log(
  `Node ${process.version}, ${os.cpus().length} cores, load average ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)} (median ${loadStats.median.toFixed(1)}); ${ROUNDS} interleaved rounds after 2 warm-up, medians.\n`,
);
console.log(`raw read + replace + write + fsync: ${ms(stats(rawTimes).median)}\n`);
console.log(
  table(
    ["edit_file variant", "median", "p90", "median ratio to raw (same round)"],
    variants.map((v) => [
      v.name,
      ms(stats(times.get(v.name)).median),
      ms(stats(times.get(v.name)).p90),
      `${stats(ratios.get(v.name)).median.toFixed(2)}x`,
    ]),
  ),
);
rmSync(work, { recursive: true, force: true });
