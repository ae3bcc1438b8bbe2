// The edit-accuracy corpus: real source files from packages in node_modules (nobody here wrote them),
// with edit cases derived from them by perturbation classes. Deterministic for a given seed.
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

/** Classes whose edit should apply, and classes that must be refused. */
export const APPLY_CLASSES = [
  "crlf",
  "tabs_vs_spaces",
  "indent_shifted",
  "trailing_whitespace",
  "rewrapped",
  "json_escaped",
  "missing_blank_lines",
  "wrapped_call",
];
export const REFUSE_CLASSES = ["duplicated_block", "near_miss", "wrapped_near_miss"];
// The wrapped classes come last: cases are drawn class by class from one seeded sequence, so the
// classes measured before them keep exactly the cases they had.
export const CLASSES = [
  ...APPLY_CLASSES.filter((c) => c !== "wrapped_call"),
  "duplicated_block",
  "near_miss",
  "wrapped_call",
  "wrapped_near_miss",
];

export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pick = (rand, list) => list[Math.floor(rand() * list.length)];

/** Source files of third-party packages: JS/TS, LF-only, between 80 and 3000 lines. */
export function sourceFiles(nodeModules) {
  const found = [];
  const walk = (dir, depth) => {
    if (depth > 6) return;
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (e.name === ".bin" || e.name === "@toolbelt" || e.name === "toolbelt" || e.name.startsWith("."))
        continue;
      const full = path.join(dir, e.name);
      if (e.isDirectory()) walk(full, depth + 1);
      else if (
        e.isFile() &&
        /\.(m?js|cjs|ts|mts)$/.test(e.name) &&
        !/\.min\.|\.d\.ts$|bundle|\.map$/.test(e.name)
      ) {
        const size = statSync(full).size;
        if (size > 4000 && size < 120000) found.push(full);
      }
    }
  };
  walk(nodeModules, 0);
  found.sort();
  return found.filter((f) => {
    const text = readFileSync(f, "utf8");
    if (text.includes("\r") || text.includes("\uFEFF")) return false;
    const lines = text.split("\n");
    if (lines.length < 80 || lines.length > 3000) return false;
    // Generated single-line blobs make poor edit targets.
    return lines.every((l) => l.length <= 300);
  });
}

const indentOf = (l) => /^[ \t]*/.exec(l)[0];
const blank = (l) => l.trim() === "";

function countOccurrences(hay, needle) {
  let n = 0;
  for (let i = hay.indexOf(needle); i !== -1; i = hay.indexOf(needle, i + 1)) n++;
  return n;
}

/** The file's indentation unit: "\t" or a run of spaces. */
function fileUnit(lines) {
  if (lines.some((l) => l.startsWith("\t"))) return "\t";
  const counts = new Map();
  let prev = 0;
  for (const l of lines) {
    if (blank(l)) continue;
    const w = indentOf(l).length;
    if (w - prev > 1) counts.set(w - prev, (counts.get(w - prev) ?? 0) + 1);
    prev = w;
  }
  let best = 2;
  let n = 0;
  for (const [k, v] of counts) if (v > n) [best, n] = [k, v];
  return " ".repeat(best);
}

/** Re-expresses indentation in the other style: tabs become spaces, spaces become tabs. */
function swapIndentStyle(lines, unit) {
  return lines.map((l) => {
    const ind = indentOf(l);
    if (unit === "\t")
      return "    ".repeat(ind.split("\t").length - 1) + ind.replace(/\t/g, "") + l.slice(ind.length);
    const levels = Math.floor(ind.length / unit.length);
    return "\t".repeat(levels) + " ".repeat(ind.length - levels * unit.length) + l.slice(ind.length);
  });
}

/** Picks a block of lines: unique in the file, with real content. */
function chooseBlock(rand, lines, text, want) {
  for (let attempt = 0; attempt < 200; attempt++) {
    const len = 4 + Math.floor(rand() * 7);
    const start = Math.floor(rand() * Math.max(1, lines.length - len));
    const block = lines.slice(start, start + len);
    if (block.length < len || blank(block[0]) || blank(block[block.length - 1])) continue;
    if (block.filter((l) => !blank(l)).length < 3) continue;
    if (block.join("").replace(/\s/g, "").length < 40) continue;
    if (countOccurrences(text, block.join("\n")) !== 1) continue;
    if (want && !want(block)) continue;
    return { start, block };
  }
  return undefined;
}

/** The edit the "model" makes: a new line after the first one, at its indentation. */
function modify(block, k) {
  const out = [...block];
  out.splice(1, 0, `${indentOf(block[0])}// edit-accuracy ${k}`);
  return out;
}

function rewrap(block) {
  for (let i = 0; i < block.length - 1; i++) {
    const a = block[i];
    const b = block[i + 1];
    if (blank(a) || blank(b)) continue;
    if (/[,([{]$|&&$|\|\|$|\+$/.test(a.trimEnd()) || /^\s*[.?:)\]}]/.test(b)) {
      if (/\/\/|\/\*|\*\/|^\s*\*|`/.test(a + b)) continue;
      const joined = [...block];
      joined.splice(i, 2, `${a.trimEnd()} ${b.trim()}`);
      return joined;
    }
  }
  for (let i = 0; i < block.length; i++) {
    const l = block[i];
    const at = l.indexOf(", ", indentOf(l).length + 10);
    if (l.length > 50 && at > 0 && !/["'`]|\/\/|\/\*/.test(l)) {
      const split = [...block];
      split.splice(i, 1, l.slice(0, at + 1), `${indentOf(l)}    ${l.slice(at + 2)}`);
      return split;
    }
  }
  return undefined;
}

/**
 * The first one-line call with two or more arguments, wrapped one argument per line as a formatter
 * would (`compute(alpha, beta)` → `compute(`, `  alpha,`, `  beta`, `)`): the same code.
 */
function wrapCall(block) {
  for (let i = 0; i < block.length; i++) {
    const line = block[i];
    if (/["'`]|\/\/|\/\*/.test(line)) continue;
    const m = /^(\s*)(.*?[A-Za-z_$][\w$]*)\((.*)\)([;,]?)\s*$/.exec(line);
    if (!m) continue;
    const args = [];
    let depth = 0;
    let current = "";
    for (const ch of m[3]) {
      if ("([{".includes(ch)) depth++;
      else if (")]}".includes(ch)) depth--;
      if (depth < 0) break;
      if (ch === "," && depth === 0) {
        args.push(current.trim());
        current = "";
      } else current += ch;
    }
    if (depth !== 0) continue;
    args.push(current.trim());
    if (args.length < 2 || args.some((a) => a === "")) continue;
    const indent = m[1];
    const wrapped = [
      `${indent}${m[2]}(`,
      ...args.map((a, j) => `${indent}  ${a}${j < args.length - 1 ? "," : ""}`),
      `${indent})${m[4]}`,
    ];
    return [...block.slice(0, i), ...wrapped, ...block.slice(i + 1)];
  }
  return undefined;
}

/** A change that alters meaning: one character of an identifier or number, an operator, or a line. */
function nearMiss(rand, block) {
  const kinds = ["token", "operator", "drop_line", "swap_lines", "string_space"];
  for (let attempt = 0; attempt < 20; attempt++) {
    const kind = pick(rand, kinds);
    const i = Math.floor(rand() * block.length);
    const line = block[i];
    if (blank(line)) continue;
    if (kind === "token") {
      const words = [...line.matchAll(/[A-Za-z_][A-Za-z0-9_]{2,}|\d+/g)];
      if (!words.length) continue;
      const w = pick(rand, words);
      const pos = w.index + Math.floor(rand() * w[0].length);
      const ch = line[pos];
      const repl = /\d/.test(ch) ? String((Number(ch) + 1) % 10) : ch === "x" ? "y" : "x";
      const out = [...block];
      out[i] = line.slice(0, pos) + repl + line.slice(pos + 1);
      return { kind, lines: out };
    }
    if (kind === "operator") {
      const ops = [
        ["===", "!=="],
        ["!==", "==="],
        ["<=", ">="],
        [" < ", " > "],
        [" + ", " - "],
        ["&&", "||"],
        ["||", "&&"],
      ];
      const op = ops.find(([a]) => line.includes(a));
      if (!op) continue;
      const out = [...block];
      out[i] = line.replace(op[0], op[1]);
      return { kind, lines: out };
    }
    if (kind === "drop_line") {
      if (i === 0 || i === block.length - 1) continue;
      const out = [...block];
      out.splice(i, 1);
      return { kind, lines: out };
    }
    if (kind === "swap_lines") {
      const j = i + 1;
      if (j >= block.length || blank(block[j]) || block[j].trim() === line.trim()) continue;
      const out = [...block];
      [out[i], out[j]] = [out[j], out[i]];
      return { kind, lines: out };
    }
    if (kind === "string_space") {
      const literal = stringLiterals(line).find(([a, b]) => line.slice(a, b).includes(" "));
      if (!literal) continue;
      const [a, b] = literal;
      const out = [...block];
      out[i] = line.slice(0, a) + line.slice(a, b).replace(" ", "  ") + line.slice(b);
      return { kind, lines: out };
    }
  }
  return undefined;
}

/** [start, end) of each quoted string literal on a line (quotes included), found by scanning. */
function stringLiterals(line) {
  const spans = [];
  let quote = "";
  let start = 0;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i];
    if (quote) {
      if (ch === "\\") i++;
      else if (ch === quote) {
        spans.push([start, i + 1]);
        quote = "";
      }
    } else if (ch === "/" && line[i + 1] === "/") break;
    else if (ch === '"' || ch === "'" || ch === "`") {
      quote = ch;
      start = i;
    }
  }
  return spans;
}

const toCrlf = (s) => s.replace(/\n/g, "\r\n");

function shift(lines, unit, dir) {
  return lines.map((l) => {
    if (blank(l)) return l;
    if (dir > 0) return unit + l;
    return l.startsWith(unit) ? l.slice(unit.length) : l.replace(/^[ \t]*/, "");
  });
}

/**
 * Builds `perClass` cases of every class from the given files. A case: the file content on disk, the
 * model's oldText/newText, and either the exact content a correct edit produces or `refuse`.
 */
export function buildCases(files, { perClass = 40, seed = 42 } = {}) {
  const rand = rng(seed);
  const cases = [];
  const sources = files.map((f) => ({ file: f, text: readFileSync(f, "utf8") }));
  for (const cls of CLASSES) {
    let made = 0;
    for (let attempt = 0; made < perClass && attempt < perClass * 40; attempt++) {
      const src = pick(rand, sources);
      const text = src.text;
      const lines = text.split("\n");
      const unit = fileUnit(lines);
      const want = {
        tabs_vs_spaces: (b) => b.some((l) => /^[ \t]+\S/.test(l)),
        rewrapped: (b) => rewrap(b) !== undefined,
        wrapped_call: (b) => wrapCall(b) !== undefined,
        wrapped_near_miss: (b) => wrapCall(b) !== undefined,
        missing_blank_lines: (b) => b.slice(1, -1).some(blank),
      }[cls];
      const chosen = chooseBlock(rand, lines, text, want);
      if (!chosen) continue;
      const { start, block } = chosen;
      const k = cases.length;
      const newBlock = modify(block, k);
      const expectedLines = [...lines.slice(0, start), ...newBlock, ...lines.slice(start + block.length)];
      const expected = expectedLines.join("\n");
      const c = {
        cls,
        source: src.file,
        content: text,
        oldText: block.join("\n"),
        newText: newBlock.join("\n"),
        expected,
      };
      switch (cls) {
        case "crlf":
          c.content = toCrlf(text);
          c.expected = toCrlf(expected);
          break;
        case "tabs_vs_spaces":
          c.oldText = swapIndentStyle(block, unit).join("\n");
          c.newText = swapIndentStyle(newBlock, unit).join("\n");
          break;
        case "indent_shifted": {
          const dir = block.every((l) => blank(l) || l.startsWith(unit)) && rand() < 0.5 ? -1 : 1;
          c.oldText = shift(block, unit, dir).join("\n");
          c.newText = shift(newBlock, unit, dir).join("\n");
          break;
        }
        case "trailing_whitespace":
          if (k % 2 === 0) {
            c.oldText = block.map((l, i) => (i % 2 === 0 && !blank(l) ? `${l}  ` : l)).join("\n");
          } else {
            const dirty = [...lines];
            for (let i = start; i < start + block.length; i += 2) if (!blank(dirty[i])) dirty[i] += " \t";
            c.content = dirty.join("\n");
          }
          break;
        case "rewrapped":
          c.oldText = rewrap(block).join("\n");
          break;
        case "wrapped_call":
          c.oldText = wrapCall(block).join("\n");
          break;
        case "wrapped_near_miss": {
          // A wrapped call whose code also changed: wrapping is tolerated, the change never.
          const miss = nearMiss(rand, wrapCall(block));
          if (!miss) continue;
          c.oldText = miss.lines.join("\n");
          c.kind = miss.kind;
          c.expected = "refuse";
          break;
        }
        case "json_escaped":
          c.oldText = JSON.stringify(c.oldText).slice(1, -1);
          c.newText = JSON.stringify(c.newText).slice(1, -1);
          break;
        case "missing_blank_lines":
          c.oldText = block.filter((l) => !blank(l)).join("\n");
          break;
        case "duplicated_block": {
          // The block appears twice: once where it was, once more elsewhere (as copied code does).
          const at = pick(rand, [0, lines.length]);
          const dup = [...lines];
          dup.splice(at, 0, ...block);
          c.content = dup.join("\n");
          // Half exact (ambiguous at the exact stage), half re-indented (ambiguous at a fuzzy stage).
          if (rand() < 0.5) c.oldText = shift(block, unit, 1).join("\n");
          c.expected = "refuse";
          break;
        }
        case "near_miss": {
          const miss = nearMiss(rand, block);
          if (!miss) continue;
          let old = miss.lines;
          if (rand() < 0.5) old = shift(old, unit, 1);
          c.oldText = old.join("\n");
          c.kind = miss.kind;
          c.expected = "refuse";
          break;
        }
      }
      cases.push(c);
      made++;
    }
  }
  return cases;
}

/** applied correctly / refused / applied wrongly, for one case's outcome (`after` undefined = refused). */
export function judge(c, after) {
  if (after === undefined) return "refused";
  if (c.expected === "refuse") return "wrong";
  return after === c.expected ? "correct" : "wrong";
}
