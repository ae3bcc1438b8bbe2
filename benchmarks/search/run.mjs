// search_files against raw ripgrep and the JS walker against grep, on a tree of at least 20,000 files.
// Usage: node benchmarks/search/run.mjs [--tree DIR] [--runs N]
// Without --tree it builds /tmp/toolbelt-bench-search/tree from copies of this repo's node_modules
// (an installed node_modules here holds ~5,000 files, so it is copied until the tree reaches 20,000).
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync } from "node:fs";
import path from "node:path";
import { fmt, REPO, stats, table } from "../lib.mjs";

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(name);
  return i === -1 ? fallback : args[i + 1];
};
const RUNS = Number(opt("--runs", "7"));
const JS_RUNS = Number(opt("--js-runs", "3"));
const MIN_FILES = 20_000;

function countFiles(dir) {
  let n = 0;
  const stack = [dir];
  while (stack.length) {
    const d = stack.pop();
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) stack.push(path.join(d, e.name));
      else if (e.isFile()) n++;
    }
  }
  return n;
}

function buildTree() {
  const tree = "/tmp/toolbelt-bench-search/tree";
  const source = path.join(REPO, "node_modules");
  mkdirSync(tree, { recursive: true });
  let files = countFiles(tree);
  const perCopy = countFiles(source);
  for (let i = 0; files < MIN_FILES; i++) {
    const target = path.join(tree, `copy${i}`);
    if (existsSync(target)) continue;
    // -P: copy symlinks as symlinks (workspace links must not be followed into the repo).
    const r = spawnSync("cp", ["-rP", source, target]);
    if (r.status !== 0) throw new Error(`cp failed: ${r.stderr}`);
    files += perCopy;
  }
  return { tree, perCopy };
}

const explicitTree = opt("--tree", undefined);
const { tree, perCopy } = explicitTree
  ? { tree: path.resolve(explicitTree), perCopy: undefined }
  : buildTree();
const fileCount = countFiles(tree);
if (fileCount < MIN_FILES) console.warn(`warning: ${tree} holds only ${fileCount} files (< ${MIN_FILES})`);

const core = await import(path.join(REPO, "packages/core/dist/index.js"));
const files = await import(path.join(REPO, "packages/files/dist/index.js"));
const rg = await files.locateRipgrep();
if (!rg) throw new Error("no ripgrep found: the benchmark needs one");

// The exact flags search_files passes (taken from the files family), so the baseline does the same work.
const rgArgs = (query) => files.ripgrepArgs({ target: ".", query });

function runProcess(argv, cwd) {
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint();
    const child = spawn(argv[0], argv.slice(1), { cwd, stdio: ["ignore", "pipe", "ignore"] });
    let bytes = 0;
    let lines = 0;
    child.stdout.on("data", (c) => {
      bytes += c.length;
      for (let i = c.indexOf(10); i !== -1; i = c.indexOf(10, i + 1)) lines++;
    });
    child.on("error", reject);
    child.on("close", (code) => {
      if (code !== 0 && code !== 1) reject(new Error(`${argv.join(" ")} exited ${code}`));
      else resolve({ ms: Number(process.hrtime.bigint() - start) / 1e6, bytes, lines });
    });
  });
}

async function timeIt(fn, runs = RUNS, warmup = 2) {
  const times = [];
  let last;
  for (let i = 0; i < warmup + runs; i++) {
    const start = process.hrtime.bigint();
    last = await fn();
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    if (i >= warmup) times.push(ms);
  }
  return { ...stats(times), last };
}

/**
 * Times `a` and `b` alternately, so both see the same machine load (other jobs share these two
 * cores), and reports each median and the median of the per-pair ratios b/a.
 */
async function timePair(a, b, runs = RUNS, warmup = 1) {
  const ta = [];
  const tb = [];
  const ratios = [];
  let lastA;
  let lastB;
  for (let i = 0; i < warmup + runs; i++) {
    const flip = i % 2 === 1;
    const runA = async () => {
      const t = process.hrtime.bigint();
      lastA = await a();
      return Number(process.hrtime.bigint() - t) / 1e6;
    };
    const runB = async () => {
      const t = process.hrtime.bigint();
      lastB = await b();
      return Number(process.hrtime.bigint() - t) / 1e6;
    };
    let msA;
    let msB;
    if (flip) {
      msB = await runB();
      msA = await runA();
    } else {
      msA = await runA();
      msB = await runB();
    }
    if (i < warmup) continue;
    ta.push(msA);
    tb.push(msB);
    ratios.push(msB / msA);
  }
  return { a: stats(ta), b: stats(tb), ratio: stats(ratios).median, lastA, lastB };
}

// Limits high enough that toolbelt collects and parses every match, as raw rg prints every match.
const limits = { fileSearchMaxMatches: 1_000_000, fileSearchMaxBytes: 1 << 30 };
async function session(engine) {
  return core.createSession({
    root: tree,
    plugins: [files.family],
    config: core.parseConfig({ tools: { search: { engine } }, limits }),
  });
}

const queries = [
  { label: "regex `function\\s+\\w+Sync`", query: "function\\s+\\w+Sync" },
  { label: "literal `createHash`", query: "createHash" },
  { label: "rare literal `TOOLBELT_NO_SUCH_TOKEN`", query: "TOOLBELT_NO_SUCH_TOKEN" },
  { label: "no literal `\\bfs\\.\\w+Sync\\(`", query: "\\bfs\\.\\w+Sync\\(" },
];

const rgSession = await session("ripgrep");
const jsSession = await session("js");
const rows = [];
const jsRows = [];
for (const q of queries) {
  const pair = await timePair(
    () => runProcess([rg.path, ...rgArgs(q.query)], tree),
    () => rgSession.call("search_files", { query: q.query }),
  );
  if (pair.lastB.kind !== "search_results") throw new Error(JSON.stringify(pair.lastB));
  rows.push([
    q.label,
    String(pair.lastB.matches),
    fmt(pair.a.median),
    fmt(pair.b.median),
    `${pair.ratio.toFixed(2)}x`,
  ]);
  const js = await timePair(
    () => runProcess(["grep", "-rnIE", "--exclude-dir=.git", q.query, "."], tree),
    () => jsSession.call("search_files", { query: q.query }),
    JS_RUNS,
  );
  if (js.lastB.kind !== "search_results") throw new Error(JSON.stringify(js.lastB));
  if (js.lastB.matches !== pair.lastB.matches) {
    console.warn(`note: js found ${js.lastB.matches} matches, ripgrep ${pair.lastB.matches} for ${q.query}`);
  }
  jsRows.push([
    q.label,
    String(js.lastB.matches),
    `${js.lastA.lines}`,
    fmt(js.a.median),
    fmt(js.b.median),
    `${js.ratio.toFixed(2)}x`,
  ]);
}
await rgSession.close();
await jsSession.close();

// The CLI pays Node start-up and family loading on top; shown once for scale.
const bin = path.join(REPO, "packages/toolbelt/dist/bin.js");
let cliRow;
if (existsSync(bin)) {
  const cli = await timeIt(
    () =>
      runProcess(
        [
          process.execPath,
          bin,
          "run",
          "search_files",
          "--root",
          tree,
          "--input",
          JSON.stringify({ query: queries[0].query }),
        ],
        REPO,
      ),
    3,
    1,
  );
  cliRow = fmt(cli.median);
}

console.log(
  `Tree: ${tree} — ${fileCount} files${perCopy ? ` (copies of node_modules, ${perCopy} files each)` : ""}; ripgrep ${rg.path}; ${RUNS} runs, median.\n`,
);
console.log(
  "search_files (ripgrep engine, in-process session, every match collected) vs raw `rg --json` with the same flags:\n",
);
console.log(table(["query", "matches", "raw rg --json", "search_files", "ratio (goal ≤ 1.15x)"], rows));
console.log(
  "\nJS walker engine (in-process) vs `grep -rnIE` (grep honours no .gitignore; both skip binary files):\n",
);
console.log(
  table(["query", "matches (js)", "grep lines", "grep -rnIE", "js walker", "ratio (goal ≤ 2x)"], jsRows),
);
if (cliRow)
  console.log(
    `\nFor scale: \`toolbelt run search_files\` (CLI, process start included), first query: ${cliRow}`,
  );
