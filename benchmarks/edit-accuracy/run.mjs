// Edit accuracy: how often edit_file applies an edit where a careful human would, refuses what it
// should refuse, and — the number that must stay 0 — applies an edit in the wrong place.
// Usage: node benchmarks/edit-accuracy/run.mjs [--per-class N] [--files N]
// Needs the built packages (npx turbo run build --filter=@toolbelt/toolbelt...).
import { promises as fs, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { REPO, stats, table } from "../lib.mjs";
import { APPLY_CLASSES, buildCases, CLASSES, judge, REFUSE_CLASSES, rng, sourceFiles } from "./corpus.mjs";

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
};
const PER_CLASS = arg("per-class", 60);
const FILES = arg("files", 60);

const { createSession } = await import(path.join(REPO, "packages/core/dist/index.js"));
const { family, locate, decodeDocument } = await import(path.join(REPO, "packages/edit/dist/index.js"));

// --- the corpus --------------------------------------------------------------------------------
const all = sourceFiles(path.join(REPO, "node_modules"));
const rand = rng(7);
const chosen = [...all]
  .sort(() => rand() - 0.5)
  .slice(0, FILES)
  .sort();
const cases = buildCases(chosen, { perClass: PER_CLASS, seed: 42 });

// --- baselines: what the complained-about tools do ------------------------------------------------
/** Plain `str.replace`: exact text only, first occurrence wins. */
function naive(c) {
  return c.content.includes(c.oldText) ? c.content.replace(c.oldText, () => c.newText) : undefined;
}

function grams(s) {
  const g = new Map();
  for (let i = 0; i < s.length - 1; i++) g.set(s.slice(i, i + 2), (g.get(s.slice(i, i + 2)) ?? 0) + 1);
  return g;
}
function dice(a, b) {
  if (a === b) return 1;
  const ga = grams(a);
  const gb = grams(b);
  let shared = 0;
  for (const [k, n] of ga) shared += Math.min(n, gb.get(k) ?? 0);
  const total = Math.max(1, a.length - 1) + Math.max(1, b.length - 1);
  return (2 * shared) / total;
}
/** A similarity matcher: the best window of equally many lines, if its mean line similarity is >= 0.8. */
function similarity(c) {
  const lines = c.content.split("\n");
  const want = c.oldText.split("\n").map((l) => l.trim());
  let best = -1;
  let bestScore = 0.8;
  for (let i = 0; i + want.length <= lines.length; i++) {
    let score = 0;
    for (let j = 0; j < want.length; j++) score += dice(lines[i + j].trim(), want[j]);
    score /= want.length;
    if (score > bestScore) {
      bestScore = score;
      best = i;
    }
  }
  if (best < 0) return undefined;
  return [...lines.slice(0, best), ...c.newText.split("\n"), ...lines.slice(best + want.length)].join("\n");
}

// --- run ---------------------------------------------------------------------------------------
const root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "edit-accuracy-")));
const session = await createSession({
  root,
  plugins: [family],
  config: { agent: { edit_tool: "edit_file" } },
});
const empty = () => ({ correct: 0, refused: 0, wrong: 0, n: 0 });
const results = { ours: {}, naive: {}, similarity: {} };
const strategies = {};
const wrongExamples = [];
for (const cls of CLASSES) for (const k of Object.keys(results)) results[k][cls] = empty();

let i = 0;
for (const c of cases) {
  const rel = `case-${i++}${path.extname(c.source)}`;
  const abs = path.join(root, rel);
  await fs.writeFile(abs, c.content);
  const payload = await session.call("edit_file", { path: rel, old_text: c.oldText, new_text: c.newText });
  const after = payload.kind === "error" ? undefined : await fs.readFile(abs, "utf8");
  const verdict = judge(c, after);
  const r = results.ours[c.cls];
  r[verdict]++;
  r.n++;
  const key = payload.kind === "error" ? payload.code : payload.strategy;
  strategies[c.cls] ??= {};
  strategies[c.cls][key] = (strategies[c.cls][key] ?? 0) + 1;
  if (verdict === "wrong")
    wrongExamples.push({ cls: c.cls, source: path.relative(REPO, c.source), strategy: key });
  for (const [name, fn] of [
    ["naive", naive],
    ["similarity", similarity],
  ]) {
    const b = results[name][c.cls];
    b[judge(c, fn(c))]++;
    b.n++;
  }
  await fs.rm(abs, { force: true });
}

const cell = (r) => `${r.correct} / ${r.refused} / ${r.wrong}`;
const rows = CLASSES.map((cls) => [
  cls,
  APPLY_CLASSES.includes(cls) ? "apply" : "refuse",
  results.ours[cls].n,
  cell(results.ours[cls]),
  cell(results.naive[cls]),
  cell(results.similarity[cls]),
  Object.entries(strategies[cls] ?? {})
    .map(([k, v]) => `${k}: ${v}`)
    .join(", "),
]);

const summary = (name) => {
  let applyN = 0;
  let applyOk = 0;
  let refuseN = 0;
  let refuseOk = 0;
  let wrong = 0;
  for (const cls of CLASSES) {
    const r = results[name][cls];
    wrong += r.wrong;
    if (APPLY_CLASSES.includes(cls)) {
      applyN += r.n;
      applyOk += r.correct;
    } else {
      refuseN += r.n;
      refuseOk += r.refused;
    }
  }
  return { applyN, applyOk, refuseN, refuseOk, wrong };
};
const pct = (a, b) => `${((100 * a) / Math.max(1, b)).toFixed(1)}%`;

console.log(
  `Corpus: ${chosen.length} source files from node_modules (of ${all.length} eligible), ${cases.length} cases, ${PER_CLASS} per class.\n`,
);
console.log(
  "Cells: applied correctly / refused / applied wrongly. For `refuse` classes, refused is the right outcome.\n",
);
console.log(
  table(
    [
      "class",
      "expected",
      "cases",
      "toolbelt edit_file",
      "baseline: str.replace",
      "baseline: similarity ≥ 0.8",
      "toolbelt outcome by strategy",
    ],
    rows,
  ),
);
const s = Object.fromEntries(["ours", "naive", "similarity"].map((n) => [n, summary(n)]));
console.log();
console.log(
  table(
    ["", "toolbelt edit_file", "baseline: str.replace", "baseline: similarity ≥ 0.8"],
    [
      [
        "applied correctly (apply classes)",
        ...["ours", "naive", "similarity"].map(
          (n) => `${s[n].applyOk}/${s[n].applyN} (${pct(s[n].applyOk, s[n].applyN)})`,
        ),
      ],
      [
        "refused (refuse classes)",
        ...["ours", "naive", "similarity"].map(
          (n) => `${s[n].refuseOk}/${s[n].refuseN} (${pct(s[n].refuseOk, s[n].refuseN)})`,
        ),
      ],
      ["applied wrongly (all classes)", ...["ours", "naive", "similarity"].map((n) => String(s[n].wrong))],
    ],
  ),
);
if (wrongExamples.length)
  console.log(`\nWrongly applied by toolbelt: ${JSON.stringify(wrongExamples, null, 2)}`);

// --- timing: one edit in a 10,000-line file ----------------------------------------------------------
const bigLines = [];
for (const f of chosen) {
  for (const l of readFileSync(f, "utf8").split("\n")) {
    if (bigLines.length < 10000) bigLines.push(l);
  }
  if (bigLines.length >= 10000) break;
}
const bigText = bigLines.join("\n");
let target = 9000;
while (
  target < bigLines.length - 6 &&
  (bigLines.slice(target, target + 5).some((l) => l.trim() === "") ||
    bigText.split(bigLines.slice(target, target + 5).join("\n")).length !== 2 ||
    !bigLines[target].startsWith(" "))
)
  target++;
const block = bigLines.slice(target, target + 5);
// Each edit adds one line after the search text, written at the search text's own depth.
const withAddition = (old) => `${old}\n${/^[ \t]*/.exec(old.split("\n").at(-1))[0]}// timing`;
const edits = {
  exact: block.join("\n"),
  indentation: block
    .map((l) => l.replace(/^[ \t]+/, (m) => m.slice(0, Math.max(0, m.length - 2))))
    .join("\n"),
  // Two lines joined into one (re-wrapped), a blank line added, spaces doubled after commas.
  formatting: [`${block[0]} ${block[1].trim()}`, "", ...block.slice(2)].join("\n").replace(/, /g, ",  "),
  "no match (all stages + candidate)": block.map((l) => `${l}x`).join("\n"),
};
const bigAbs = path.join(root, "big.js");
const timingRows = [];
const naiveTimes = [];
for (let run = 0; run < 23; run++) {
  await fs.writeFile(bigAbs, bigText);
  const t0 = performance.now();
  const text = await fs.readFile(bigAbs, "utf8");
  await fs.writeFile(
    bigAbs,
    text.replace(edits.exact.old_text, () => edits.exact.new_text),
  );
  if (run >= 3) naiveTimes.push(performance.now() - t0);
}
const naiveMedian = stats(naiveTimes).median;
for (const [name, oldText] of Object.entries(edits)) {
  const input = { old_text: oldText, new_text: withAddition(oldText) };
  const times = [];
  let outcome = "";
  for (let run = 0; run < 23; run++) {
    await fs.writeFile(bigAbs, bigText);
    const t0 = performance.now();
    const payload = await session.call("edit_file", { path: "big.js", ...input });
    if (run >= 3) times.push(performance.now() - t0);
    outcome = payload.kind === "error" ? payload.code : payload.strategy;
  }
  // The matching alone, in memory (decode + locate), without the write, fsync and diff.
  const bytes = new TextEncoder().encode(bigText);
  const cpu = [];
  for (let run = 0; run < 23; run++) {
    const t0 = performance.now();
    locate(decodeDocument(bytes, "big.js"), input.old_text, input.new_text);
    if (run >= 3) cpu.push(performance.now() - t0);
  }
  const st = stats(times);
  timingRows.push([
    name,
    outcome,
    `${st.median.toFixed(1)} ms`,
    `${st.p90.toFixed(1)} ms`,
    `${stats(cpu).median.toFixed(1)} ms`,
    `${(st.median / naiveMedian).toFixed(1)}x`,
  ]);
}
console.log(
  `\nOne edit in a ${bigLines.length}-line file (${(Buffer.byteLength(bigText) / 1024).toFixed(0)} KiB), 20 runs after 3 warm-up:\n`,
);
console.log(
  table(
    [
      "edit_file call",
      "outcome",
      "median",
      "p90",
      "matching only (median)",
      "median vs read+str.replace+write",
    ],
    timingRows,
  ),
);
console.log(`\nBaseline read + str.replace + write (no fsync): median ${naiveMedian.toFixed(2)} ms`);

await session.close();
await fs.rm(root, { recursive: true, force: true });
process.exitCode = s.ours.wrong === 0 && s.ours.applyOk / s.ours.applyN >= 0.95 ? 0 : 1;

void fileURLToPath;
void REFUSE_CLASSES;
