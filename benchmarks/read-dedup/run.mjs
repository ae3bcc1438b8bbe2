// Replays a realistic agent read trace (re-reads, overlapping windows, edits in between) through
// read_file and reports the bytes the model receives with and without de-duplication, and what a
// de-duplicated read costs. It also reports the ceiling: the saving if every file_unchanged answer
// cost nothing (what a shorter notice can approach), for the model-facing text and for the JSON payload.
// Usage: node benchmarks/read-dedup/run.mjs [--reads N] [--seed S] [--trace held-out]
// `--trace held-out` replays a second trace shape (defaults: 240 reads, seed 2026) that was fixed
// before range-aware de-duplication was tuned and is never used to tune it: more partial overlaps,
// 10-line windows, writes in between.
import { promises as fs, readdirSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { REPO, stats, table } from "../lib.mjs";

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(name);
  return i === -1 ? fallback : Number(args[i + 1]);
};
const HELD_OUT = args.includes("--trace") && args[args.indexOf("--trace") + 1] === "held-out";
const READS = opt("--reads", HELD_OUT ? 240 : 400);
let seed = opt("--seed", HELD_OUT ? 2026 : 42);
// mulberry32: a tiny seeded PRNG so every run replays the same trace.
const random = () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const pick = (list) => list[Math.floor(random() * list.length)];

const core = await import(path.join(REPO, "packages/core/dist/index.js"));
const files = await import(path.join(REPO, "packages/files/dist/index.js"));

// A real project to read: the TypeScript sources of this repository's packages.
const root = await fs.mkdtemp(path.join(os.tmpdir(), "tb-read-dedup-"));
const sources = [];
const collect = (dir, pkg) => {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const abs = path.join(dir, e.name);
    if (e.isDirectory()) collect(abs, pkg);
    else if (e.name.endsWith(".ts") && statSync(abs).size > 0)
      sources.push({ rel: `${pkg}/${path.relative(path.join(REPO, "packages", pkg), abs)}`, abs });
  }
};
for (const pkg of readdirSync(path.join(REPO, "packages"))) {
  for (const sub of ["src", "test"]) {
    try {
      collect(path.join(REPO, "packages", pkg, sub), pkg);
    } catch {}
  }
}
sources.sort((a, b) => (a.rel < b.rel ? -1 : 1));
const project = [];
for (const s of sources) {
  await fs.mkdir(path.dirname(path.join(root, s.rel)), { recursive: true });
  const text = await fs.readFile(s.abs, "utf8");
  await fs.writeFile(path.join(root, s.rel), text);
  project.push({ rel: s.rel, lines: text.split("\n").length, text });
}

// The trace: about half the reads repeat an earlier window or a window inside it; one step in
// twelve is an edit (through write_file, or on disk by someone else) of a file already read.
const trace = [];
const seen = [];
let repeats = 0;
while (trace.filter((s) => s.op === "read").length < READS) {
  const r = random();
  if (seen.length > 0 && r < 0.08) {
    const target = pick(seen).rel;
    trace.push({ op: random() < 0.5 ? "write" : "external", rel: target });
    continue;
  }
  if (HELD_OUT && seen.length > 0 && r < 0.55) {
    const prev = pick(seen);
    repeats++;
    const file = project.find((p) => p.rel === prev.rel);
    const kind = random();
    const from = prev.offset ?? 1;
    const span = prev.limit ?? file.lines;
    if (kind < 0.25) trace.push({ op: "read", rel: prev.rel, offset: prev.offset, limit: prev.limit });
    else if (kind < 0.5) {
      // A 10-line window inside the earlier one.
      const offset = from + Math.floor(random() * Math.max(1, span - 10));
      trace.push({ op: "read", rel: prev.rel, offset, limit: 10 });
    } else if (kind < 0.85) {
      // A window overlapping the earlier one and reaching past it (scrolling on).
      const offset = Math.max(1, from + Math.floor(span * (0.3 + 0.5 * random())));
      const limit = 20 + Math.floor(random() * 80);
      if (offset <= file.lines) trace.push({ op: "read", rel: prev.rel, offset, limit });
      else trace.push({ op: "read", rel: prev.rel, offset: prev.offset, limit: prev.limit });
    } else {
      // A 10-line window just before the earlier one, overlapping its first lines.
      const offset = Math.max(1, from - 5);
      trace.push({ op: "read", rel: prev.rel, offset, limit: 10 });
    }
    continue;
  }
  if (seen.length > 0 && r < 0.55) {
    const prev = pick(seen);
    repeats++;
    if (prev.limit && random() < 0.5) {
      // A window inside the earlier one.
      const offset = prev.offset + Math.floor(random() * Math.max(1, prev.limit / 2));
      const limit = Math.max(1, Math.floor(prev.limit / 3));
      trace.push({ op: "read", rel: prev.rel, offset, limit });
    } else trace.push({ op: "read", rel: prev.rel, offset: prev.offset, limit: prev.limit });
    continue;
  }
  // A fresh read: a file not read yet while there are any, as an agent exploring a project does.
  const unread = project.filter((p) => !seen.some((x) => x.rel === p.rel));
  const file = pick(unread.length ? unread : project);
  const whole = random() < 0.5 || file.lines < 80;
  const offset = whole ? undefined : 1 + Math.floor(random() * (file.lines - 60));
  const limit = whole
    ? undefined
    : HELD_OUT
      ? 10 + Math.floor(random() * 70)
      : 40 + Math.floor(random() * 120);
  const read = { op: "read", rel: file.rel, offset, limit };
  trace.push(read);
  seen.push(read);
}

let floor = 0;
const firstSeen = {};
async function replay(dedup) {
  // Restore the files so both replays start from the same tree.
  for (const p of project) await fs.writeFile(path.join(root, p.rel), p.text);
  const session = await core.createSession({ root, plugins: [files.family] });
  let bytes = 0;
  let json = 0;
  let unchangedBytes = 0;
  let unchangedJson = 0;
  let unchanged = 0;
  let partial = 0;
  let edits = 0;
  const fullTimes = [];
  const dedupTimes = [];
  for (const step of trace) {
    if (step.op !== "read") delete firstSeen[step.rel];
    if (step.op === "write") {
      const abs = path.join(root, step.rel);
      const text = await fs.readFile(abs, "utf8");
      await session.call("write_file", { path: step.rel, content: `${text}// edit ${++edits}\n` });
      continue;
    }
    if (step.op === "external") {
      await fs.appendFile(path.join(root, step.rel), `// external edit ${++edits}\n`);
      continue;
    }
    if (!dedup) session.ledger.clear();
    const input = {
      path: step.rel,
      ...(step.offset ? { offset: step.offset } : {}),
      ...(step.limit ? { limit: step.limit } : {}),
    };
    const start = process.hrtime.bigint();
    const { payload, text } = await session.callWithText("read_file", input);
    const us = Number(process.hrtime.bigint() - start) / 1e3;
    if (payload.kind === "error") throw new Error(`${step.rel}: ${payload.message}`);
    const textBytes = Buffer.byteLength(text, "utf8");
    const jsonBytes = Buffer.byteLength(JSON.stringify(payload), "utf8");
    if (payload.kind === "file_unchanged") {
      unchanged++;
      unchangedBytes += textBytes;
      unchangedJson += jsonBytes;
      dedupTimes.push(us);
    } else {
      fullTimes.push(us);
      if (payload.already_shown) partial++;
    }
    bytes += textBytes;
    json += jsonBytes;
    if (!dedup) {
      // The floor no de-duplication can beat: each numbered line once per version of its file.
      firstSeen[step.rel] ??= new Set();
      const seenLines = firstSeen[step.rel];
      for (const l of payload.content.split("\n")) {
        const n = /^\s*(\d+)\t/.exec(l)?.[1];
        if (n && !seenLines.has(n)) {
          seenLines.add(n);
          floor += Buffer.byteLength(l, "utf8") + 1;
        }
      }
    }
  }
  await session.close();
  return { bytes, json, unchangedBytes, unchangedJson, unchanged, partial, fullTimes, dedupTimes };
}

const without = await replay(false);
const withDedup = await replay(true);
await fs.rm(root, { recursive: true, force: true });

const reads = trace.filter((s) => s.op === "read").length;
const editsCount = trace.length - reads;
const saved = 1 - withDedup.bytes / without.bytes;
console.log(
  `Trace${HELD_OUT ? " (held-out)" : ""}: ${reads} reads of ${project.length} real TypeScript files (this repo's packages/*/src and test), ${repeats} of them (${((100 * repeats) / reads).toFixed(0)}%) repeat an earlier window or a window inside it, ${editsCount} edits in between (half through write_file, half on disk). Seeded, deterministic.\n`,
);
console.log(
  table(
    ["", "bytes to the model", "file_unchanged answers", "partial (only new lines)", "vs without"],
    [
      ["without de-duplication", String(without.bytes), "0", "0", "—"],
      [
        "with de-duplication",
        String(withDedup.bytes),
        String(withDedup.unchanged),
        String(withDedup.partial),
        `${(100 * saved).toFixed(1)}% fewer`,
      ],
    ],
  ),
);
console.log(
  `\nFloor (every numbered line once per version of its file, no headers): ${floor} bytes, ${(100 * (1 - floor / without.bytes)).toFixed(1)}% fewer than without; de-duplication reached ${((100 * (without.bytes - withDedup.bytes)) / (without.bytes - floor)).toFixed(0)}% of that possible saving.`,
);
// The ceiling: every byte of the file_unchanged answers saved too.
const ceiling = (before, after, notices) => {
  const reached = before - after;
  const possible = reached + notices;
  return `${(100 * (reached / before)).toFixed(1)}% fewer; ceiling ${(100 * (possible / before)).toFixed(1)}% fewer; ${((100 * reached) / possible).toFixed(1)}% of the ceiling reached`;
};
const perNotice = (total) => (withDedup.unchanged ? (total / withDedup.unchanged).toFixed(0) : "—");
console.log(
  `\nCeiling (every file_unchanged answer free; goal ≥ 97% of it reached): text ${ceiling(without.bytes, withDedup.bytes, withDedup.unchangedBytes)}; JSON payloads ${ceiling(without.json, withDedup.json, withDedup.unchangedJson)}. A file_unchanged answer is ${perNotice(withDedup.unchangedBytes)} bytes of text and ${perNotice(withDedup.unchangedJson)} bytes of JSON on average.`,
);
const full = stats(withDedup.fullTimes);
const dd = stats(withDedup.dedupTimes);
console.log("\nCost per read_file call in-process (with de-duplication on):\n");
console.log(
  table(
    ["answer", "calls", "median", "p90"],
    [
      [
        "full content",
        String(withDedup.fullTimes.length),
        `${full.median.toFixed(0)} µs`,
        `${full.p90.toFixed(0)} µs`,
      ],
      [
        "file_unchanged",
        String(withDedup.dedupTimes.length),
        `${dd.median.toFixed(0)} µs`,
        `${dd.p90.toFixed(0)} µs`,
      ],
    ],
  ),
);
console.log(
  "\nA de-duplicated read still reads and hashes the file (size + mtime + SHA-1 of the content), so it costs about what a full read costs in time; what it saves is the model's tokens.",
);
