// Issue 17's figures for the files family, each as a ratio against its raw baseline in the same run:
// - list_files ×1000 (ignore cache on, and cleared before every call as the code before it did)
//   vs a plain Node loop walking the same tree;
// - search_files (ripgrep) collecting ~640,000 matches vs raw `rg --json` with the same flags, with
//   ripgrep confined by the shell family's Landlock wrapper (the CLI's sessions) and unconfined with
//   every shown line verified (a session without the shell family);
// - a capped (default 100 matches) search_files vs raw `rg --json`, and that five runs and both
//   engines give the same answer;
// - edit_file of one line in a 100,000-line file vs a raw read + replace + write + fsync.
// Usage: node benchmarks/search/speed.mjs [--runs N] [--only list|search|edit]   (after `npm run build`)

import { spawn } from "node:child_process";
import {
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { REPO, stats, table } from "../lib.mjs";

const args = process.argv.slice(2);
const RUNS = Number(args.includes("--runs") ? args[args.indexOf("--runs") + 1] : 11);
// `--only list|search|edit` runs one part.
const ONLY = args.includes("--only") ? args[args.indexOf("--only") + 1] : undefined;
const part = (name) => ONLY === undefined || ONLY === name;
const core = await import(path.join(REPO, "packages/core/dist/index.js"));
const files = await import(path.join(REPO, "packages/files/dist/index.js"));
// With the shell family, ripgrep runs confined by its Landlock wrapper (as in every CLI session);
// with the files family alone, unconfined, and every line shown is read again and checked.
const shell = await import(path.join(REPO, "packages/shell/dist/index.js"));
const rg = await files.locateRipgrep();
if (!rg) throw new Error("no ripgrep found: the benchmark needs one");

const base = path.join(os.tmpdir(), "toolbelt-bench-filespeed");
rmSync(base, { recursive: true, force: true });

// A project for listings: 40 packages × (src, src/lib, test) × 8 files, a .gitignore at the root
// and in every package, and the tmp directory's ancestors above it.
const project = path.join(base, "project");
mkdirSync(project, { recursive: true });
writeFileSync(path.join(project, ".gitignore"), "dist/\n*.log\n");
for (let p = 0; p < 40; p++) {
  for (const sub of ["src", "src/lib", "test", "dist"]) {
    const dir = path.join(project, `pkg${p}`, sub);
    mkdirSync(dir, { recursive: true });
    for (let f = 0; f < 8; f++) writeFileSync(path.join(dir, `f${f}.ts`), "export {};\n");
  }
  writeFileSync(path.join(project, `pkg${p}`, ".gitignore"), "*.tmp\n");
}

// A tree where a common word matches 640,000 lines: 4,000 files of 160 lines in 400 directories.
const corpus = path.join(base, "corpus");
for (let d = 0; d < 400; d++) {
  const dir = path.join(corpus, `d${d % 20}`, `e${d}`);
  mkdirSync(dir, { recursive: true });
  for (let f = 0; f < 10; f++) {
    const lines = Array.from({ length: 160 }, (_, i) => `const common_${i} = ${d * f + i}; // filler text`);
    writeFileSync(path.join(dir, `f${f}.ts`), `${lines.join("\n")}\n`);
  }
}

function walkPlain(dir, out) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const abs = path.join(dir, e.name);
    if (e.isDirectory()) walkPlain(abs, out);
    else if (e.isFile() && e.name.endsWith(".ts")) out.push(abs);
  }
  return out;
}

function runRg(query, cwd) {
  return new Promise((resolve, reject) => {
    const child = spawn(rg.path, files.ripgrepArgs({ target: ".", query }), {
      cwd,
      stdio: ["ignore", "pipe", "ignore"],
    });
    let bytes = 0;
    child.stdout.on("data", (c) => {
      bytes += c.length;
    });
    child.on("error", reject);
    child.on("close", () => resolve(bytes));
  });
}

/** Times a and b alternately (same machine load) and returns medians and the median per-pair ratio b/a. */
async function pair(a, b, runs = RUNS) {
  const ta = [];
  const tb = [];
  const r = [];
  let lastB;
  for (let i = 0; i < runs + 1; i++) {
    const t0 = process.hrtime.bigint();
    await a();
    const t1 = process.hrtime.bigint();
    lastB = await b();
    const t2 = process.hrtime.bigint();
    if (i === 0) continue;
    const ma = Number(t1 - t0) / 1e6;
    const mb = Number(t2 - t1) / 1e6;
    ta.push(ma);
    tb.push(mb);
    r.push(mb / ma);
  }
  return { a: stats(ta).median, b: stats(tb).median, ratio: stats(r).median, lastB };
}

const rows = [];
const ms = (x) => `${x.toFixed(1)} ms`;

// 1. list_files ×1000.
if (part("list")) {
  const s = await core.createSession({ root: project, plugins: [files.family] });
  const N = 1000;
  const loop = async () => {
    for (let i = 0; i < N; i++) walkPlain(project, []);
  };
  const cached = async () => {
    for (let i = 0; i < N; i++) await s.call("list_files", { pattern: "**/*.ts" });
  };
  const uncached = async () => {
    for (let i = 0; i < N; i++) {
      files.clearIgnoreCache();
      await s.call("list_files", { pattern: "**/*.ts" });
    }
  };
  const c = await pair(loop, cached, 2);
  const u = await pair(loop, uncached, 2);
  const count = (await s.call("list_files", { pattern: "**/*.ts" })).count;
  rows.push([
    `list_files ×${N} (${count} of 1280 files listed), ignore cache`,
    `plain Node readdir loop ${ms(c.a)}`,
    `${ms(c.b)} (${Math.round((N * 1000) / c.b)}/s)`,
    `${c.ratio.toFixed(2)}x`,
  ]);
  rows.push([
    `list_files ×${N}, cache cleared before every call (as before)`,
    `plain Node readdir loop ${ms(u.a)}`,
    `${ms(u.b)} (${Math.round((N * 1000) / u.b)}/s)`,
    `${u.ratio.toFixed(2)}x`,
  ]);
  await s.close();
}

/** Whether a session's searches run ripgrep confined (what `toolbelt doctor` says as files/search-sandbox). */
function confinement(session) {
  const spec = session.wrap({ file: rg.path, args: [], cwd: corpus, env: {} }, "search");
  return spec.confined ? "confined" : `unconfined: ${spec.unconfinedReason ?? "no wrapper"}`;
}

// 2. Collecting every match, and 3. the default cap.
// The engine is forced through TOOLBELT_SEARCH_ENGINE, read at every search (config keys move).
async function sessionFor(engine, limits = {}, { confined = true } = {}) {
  const plugins = confined ? [files.family, shell.family] : [files.family];
  const s = await core.createSession({ root: corpus, plugins, config: { limits } });
  return {
    call(tool, input) {
      process.env.TOOLBELT_SEARCH_ENGINE = engine;
      return s.call(tool, input);
    },
    callWithText(tool, input) {
      process.env.TOOLBELT_SEARCH_ENGINE = engine;
      return s.callWithText(tool, input);
    },
    wrap: (spec, purpose) => s.wrapCommand(spec, purpose),
    close: () => s.close(),
  };
}
if (part("search")) {
  const all = await sessionFor("ripgrep", { fileSearchMaxMatches: 1_000_000, fileSearchMaxBytes: 1 << 30 });
  const p = await pair(
    () => runRg("common", corpus),
    () => all.call("search_files", { query: "common" }),
  );
  rows.push([
    `search_files (ripgrep, ${confinement(all)}), every match collected (${p.lastB.matches} matches)`,
    `raw rg --json ${ms(p.a)}`,
    ms(p.b),
    `${p.ratio.toFixed(2)}x`,
  ]);
  // The same without the shell family: ripgrep unconfined, the 640,000 lines shown read again.
  const verified = await sessionFor(
    "ripgrep",
    { fileSearchMaxMatches: 1_000_000, fileSearchMaxBytes: 1 << 30 },
    { confined: false },
  );
  const v = await pair(
    () => runRg("common", corpus),
    () => verified.call("search_files", { query: "common" }),
  );
  rows.push([
    `search_files (ripgrep, unconfined: shown lines verified), every match collected (${v.lastB.matches})`,
    `raw rg --json ${ms(v.a)}`,
    ms(v.b),
    `${v.ratio.toFixed(2)}x`,
  ]);
  if (JSON.stringify(v.lastB.entries) !== JSON.stringify(p.lastB.entries))
    console.log("Collect-all: the verified answer DIFFERS from the confined one.\n");
  // The same search when the caller also wants the model-facing text (MCP, HTTP, `run --format text`):
  // rendering 640,000 match rows is a cost of its own, paid only when someone reads them.
  const t = await pair(
    () => runRg("common", corpus),
    () => all.callWithText("search_files", { query: "common" }).then((o) => o.payload),
  );
  rows.push([
    `search_files (ripgrep, ${confinement(all)}), every match collected, text rendered too`,
    `raw rg --json ${ms(t.a)}`,
    ms(t.b),
    `${t.ratio.toFixed(2)}x`,
  ]);
  await all.close();
  // The JS engine on the same query: walker, reads, matching in the search worker.
  const allJs = await sessionFor("js", { fileSearchMaxMatches: 1_000_000, fileSearchMaxBytes: 1 << 30 });
  const aj = await pair(
    () => runRg("common", corpus),
    () => allJs.call("search_files", { query: "common" }),
  );
  rows.push([
    `search_files (js engine), every match collected (${aj.lastB.matches} matches)`,
    `raw rg --json ${ms(aj.a)}`,
    ms(aj.b),
    `${aj.ratio.toFixed(2)}x`,
  ]);
  const same =
    JSON.stringify((await allJs.call("search_files", { query: "common" })).entries) ===
    JSON.stringify(p.lastB.entries);
  console.log(
    `Collect-all: the js engine ${same ? "gives the same answer as ripgrep" : "DIFFERS from ripgrep"}.\n`,
  );
  await allJs.close();
  const capped = await sessionFor("ripgrep");
  const c = await pair(
    () => runRg("common", corpus),
    () => capped.call("search_files", { query: "common" }),
  );
  rows.push([
    `search_files (ripgrep, ${confinement(capped)}), capped at 100, deterministic`,
    `raw rg --json ${ms(c.a)}`,
    ms(c.b),
    `${c.ratio.toFixed(2)}x`,
  ]);
  const cappedVerified = await sessionFor("ripgrep", {}, { confined: false });
  const cv = await pair(
    () => runRg("common", corpus),
    () => cappedVerified.call("search_files", { query: "common" }),
  );
  rows.push([
    `search_files (ripgrep, unconfined: shown lines verified), capped at 100`,
    `raw rg --json ${ms(cv.a)}`,
    ms(cv.b),
    `${cv.ratio.toFixed(2)}x`,
  ]);
  await cappedVerified.close();
  await verified.close();
  const js = await sessionFor("js");
  const j = await pair(
    () => runRg("common", corpus),
    () => js.call("search_files", { query: "common" }),
  );
  rows.push([
    `search_files (js engine), capped at 100 (stops early)`,
    `raw rg --json ${ms(j.a)}`,
    ms(j.b),
    `${j.ratio.toFixed(2)}x`,
  ]);
  const answers = new Set();
  for (let i = 0; i < 5; i++)
    answers.add(JSON.stringify((await capped.call("search_files", { query: "common" })).entries));
  const jsAnswer = JSON.stringify((await js.call("search_files", { query: "common" })).entries);
  console.log(
    `Capped determinism: ${answers.size} distinct answer(s) in 5 ripgrep runs; js engine ${answers.has(jsAnswer) ? "gives the same answer" : "DIFFERS"}.\n`,
  );
  await capped.close();
  await js.close();
}

// 4. edit_file in a 100,000-line file.
if (part("edit")) {
  const edit = await import(path.join(REPO, "packages/edit/dist/index.js"));
  const dir = path.join(base, "edit");
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, "big.ts");
  const text = `${Array.from({ length: 100_000 }, (_, i) => `export const value${i} = ${i};`).join("\n")}\n`;
  writeFileSync(file, text);
  const s = await core.createSession({ root: dir, plugins: [edit.family] });
  let flip = false;
  const raw = async () => {
    const before = readFileSync(file, "utf8");
    const after = before.replace("export const value50000 = 50000;", "export const value50000 = -1;");
    const fd = openSync(`${file}.raw`, "w");
    writeSync(fd, after);
    fsyncSync(fd);
    closeSync(fd);
  };
  const tool = async () => {
    flip = !flip;
    const [from, to] = flip ? ["= 50000;", "= -1;"] : ["= -1;", "= 50000;"];
    const out = await s.call("edit_file", {
      path: "big.ts",
      old_text: `export const value50000 ${from}`,
      new_text: `export const value50000 ${to}`,
    });
    if (out.kind !== "edit_result") throw new Error(JSON.stringify(out));
    return out;
  };
  const e = await pair(raw, tool, 11);
  rows.push([
    "edit_file, one line of a 100,000-line file (2.9 MB)",
    `raw read+replace+write+fsync ${ms(e.a)}`,
    ms(e.b),
    `${e.ratio.toFixed(2)}x`,
  ]);
  await s.close();
}

console.log(
  `Node ${process.version}, ${os.cpus().length} cores, load average ${os.loadavg()[0].toFixed(1)}; ${RUNS} runs unless noted, median of per-pair ratios.\n`,
);
console.log(table(["what", "baseline (same run)", "toolbelt", "ratio"], rows));
rmSync(base, { recursive: true, force: true });
