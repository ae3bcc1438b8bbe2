import { unescapeText } from "@toolbelt/core";
import { rawText, type TextDocument, toLf } from "./document.js";
import { columns, isBlank, leadingWhitespace, reindent, sameIndentScale, sameNesting } from "./indent.js";
import { type NormalForm, normalForm } from "./normal-form.js";

/**
 * How a search text was found, in the order they are tried. Each one widens matching along one
 * dimension that cannot change what the code means, and every one of them requires a unique match.
 */
export type Strategy =
  | "exact"
  | "line_endings"
  | "indentation"
  | "formatting"
  | "line_wrapping"
  | "unescaped";

export const ALL_STRATEGIES: readonly Strategy[] = [
  "exact",
  "line_endings",
  "indentation",
  "formatting",
  "line_wrapping",
  "unescaped",
];
/** What "exact" means for search_replace_block and structured_patch: bytes, modulo line-ending transport. */
export const STRICT_STRATEGIES: readonly Strategy[] = ["exact", "line_endings"];

const LABEL: Record<Strategy, string> = {
  exact: "exact",
  line_endings: "line-ending-insensitive",
  indentation: "trimmed lines (indentation-insensitive)",
  formatting: "formatter-tolerant",
  line_wrapping: "line-wrapping-tolerant",
  unescaped: "JSON-unescaped retry",
};

export function strategyLabel(strategy: Strategy): string {
  return LABEL[strategy];
}

export type Match = {
  /** Offsets in `doc.text` (LF text) of the span to replace. */
  start: number;
  end: number;
  /** The LF text to put there, already re-indented to the file's depth. */
  replacement: string;
  strategy: Strategy;
  /** For `unescaped`: the strategy that matched after unescaping. */
  via?: Strategy;
  /** 1-based first and last line of the matched span. */
  startLine: number;
  endLine: number;
};

export type Candidate = {
  start_line: number;
  end_line: number;
  /** The candidate's lines, each prefixed by its line number. */
  text: string;
  /** The first line where the search text and the candidate differ. */
  first_difference?: string;
};

export type MatchFailure = {
  code: "ENO_MATCH" | "EMULTI_MATCH" | "EINVAL_INPUT" | "ETOO_LARGE";
  message: string;
  strategy?: Strategy;
  /** For EMULTI_MATCH: where each match starts (1-based). */
  lines?: number[];
  candidate?: Candidate;
  tried: Strategy[];
};

export type LocateOptions = {
  strategies?: readonly Strategy[];
  /** Only matches starting at or after this offset of `doc.text` count (for `...` pieces). */
  from?: number;
  /** What the search text is called in messages (`oldText`, `old_string`, `SEARCH`). */
  label?: string;
};

/**
 * Work one locate() may do beyond linear scans, in line or character comparisons: the checks run
 * per place a stage finds (indentation pairs, formatter spans). A file that repeats the same lines
 * thousands of times, searched with thousands of lines, would otherwise cost their product (a
 * 100k-line file and a 20k-line search text took minutes). Past the budget the answer is
 * ETOO_LARGE naming it, never a guess. Each unit is one line of one place checked (pairing its
 * indentation, sorting the pairs): 2M units are well under a second.
 */
export const MATCH_BUDGET = 2_000_000;
/** Places a stage collects: enough to refuse as ambiguous and name them; more only lengthen the message. */
export const MAX_REPORTED_MATCHES = 100;
/** Line checks spent on places found beyond the second: an EMULTI_MATCH needs only two. */
const REPORT_WORK = 400_000;

/** How many places of a `lines`-line search a stage collects before it stops and says "more than". */
function reportCap(lines: number): number {
  return Math.max(2, Math.min(MAX_REPORTED_MATCHES, Math.floor(REPORT_WORK / Math.max(1, lines))));
}
/** Needles longer than this are found with KMP (linear); V8's indexOf is O(n·m) on repetitive text. */
const NATIVE_NEEDLE_MAX = 32;

class BudgetExceeded extends Error {
  constructor(readonly stage: Strategy) {
    super(`match budget exceeded in ${stage}`);
  }
}

class Budget {
  private left = MATCH_BUDGET;
  spend(units: number, stage: Strategy): void {
    this.left -= units;
    if (this.left < 0) throw new BudgetExceeded(stage);
  }
}

/**
 * Calls `onHit` for each place `needle` occurs in `haystack` at or after `from` (overlapping, or
 * disjoint), until it returns false. Linear in both lengths whatever the text repeats.
 */
function eachOccurrence(
  haystack: string,
  needle: string,
  from: number,
  onHit: (at: number) => boolean,
  disjoint = false,
): void {
  const m = needle.length;
  if (m === 0) return;
  if (m <= NATIVE_NEEDLE_MAX) {
    for (
      let i = haystack.indexOf(needle, from);
      i !== -1;
      i = haystack.indexOf(needle, i + (disjoint ? m : 1))
    )
      if (!onHit(i)) return;
    return;
  }
  const pattern = new Uint16Array(m);
  for (let i = 0; i < m; i++) pattern[i] = needle.charCodeAt(i);
  const fail = new Int32Array(m);
  for (let i = 1, k = 0; i < m; i++) {
    const c = pattern[i] as number;
    while (k > 0 && pattern[k] !== c) k = fail[k - 1] as number;
    if (pattern[k] === c) k++;
    fail[i] = k;
  }
  const n = haystack.length;
  for (let i = from, k = 0; i < n; i++) {
    const c = haystack.charCodeAt(i);
    while (k > 0 && pattern[k] !== c) k = fail[k - 1] as number;
    if (pattern[k] === c) k++;
    if (k === m) {
      if (!onHit(i - m + 1)) return;
      k = disjoint ? 0 : (fail[k - 1] as number);
    }
  }
}

/** Where `needle` occurs in `ids` (line ids), KMP: linear however often the file repeats a line. */
function eachLineRun(
  ids: Int32Array,
  needle: Int32Array,
  from: number,
  onHit: (line: number) => boolean,
): void {
  const m = needle.length;
  if (m === 0) return;
  const fail = new Int32Array(m);
  for (let i = 1, k = 0; i < m; i++) {
    const c = needle[i] as number;
    while (k > 0 && needle[k] !== c) k = fail[k - 1] as number;
    if (needle[k] === c) k++;
    fail[i] = k;
  }
  for (let i = from, k = 0; i < ids.length; i++) {
    const c = ids[i] as number;
    while (k > 0 && needle[k] !== c) k = fail[k - 1] as number;
    if (needle[k] === c) k++;
    if (k === m) {
      if (!onHit(i - m + 1)) return;
      k = fail[k - 1] as number;
    }
  }
}

/**
 * Lines, line offsets and indexes of one document, computed once per document version, each only when
 * a stage asks for it: an exact match in a large file needs none of them.
 */
type DocIndex = {
  readonly text: string;
  readonly lines: string[];
  readonly lineStarts: number[];
  /** Whether `lines`/`lineStarts` are built (else line numbers are counted in `text`). */
  readonly split: boolean;
  /** Trimmed lines and where each occurs: built only when a line-based stage needs them. */
  trimmedLines?: { trimmed: string[]; byTrimmed: Map<string, number[]> };
  /** Each line's trimmed text as a small integer, and the number of each trimmed text. */
  trimmedIds?: { ids: Int32Array; idOf: Map<string, number> };
  normal?: NormalForm;
  /** The last search text's normal form and where it occurs (formatting, then line_wrapping, ask for it). */
  formatterHits?: { key: string; file: NormalForm; needle: NormalForm; hits: number[] };
  raw?: string;
  crOffsets?: number[];
};

const indexes = new WeakMap<TextDocument, DocIndex>();

function indexOf(doc: TextDocument): DocIndex {
  let index = indexes.get(doc);
  if (index) return index;
  const text = doc.text;
  let built: { lines: string[]; lineStarts: number[] } | undefined;
  const build = () => {
    if (built) return built;
    const lines = text.split("\n");
    const lineStarts: number[] = new Array(lines.length);
    let offset = 0;
    for (let i = 0; i < lines.length; i++) {
      lineStarts[i] = offset;
      offset += (lines[i] as string).length + 1;
    }
    built = { lines, lineStarts };
    return built;
  };
  index = {
    text,
    get lines() {
      return build().lines;
    },
    get lineStarts() {
      return build().lineStarts;
    },
    get split() {
      return built !== undefined;
    },
  };
  indexes.set(doc, index);
  return index;
}

function trimmedOf(index: DocIndex): { trimmed: string[]; byTrimmed: Map<string, number[]> } {
  if (index.trimmedLines) return index.trimmedLines;
  const trimmed: string[] = new Array(index.lines.length);
  const byTrimmed = new Map<string, number[]>();
  for (let i = 0; i < index.lines.length; i++) {
    const t = (index.lines[i] as string).trim();
    trimmed[i] = t;
    const list = byTrimmed.get(t);
    if (list) list.push(i);
    else byTrimmed.set(t, [i]);
  }
  index.trimmedLines = { trimmed, byTrimmed };
  return index.trimmedLines;
}

function trimmedIdsOf(index: DocIndex): { ids: Int32Array; idOf: Map<string, number> } {
  if (index.trimmedIds) return index.trimmedIds;
  const { trimmed } = trimmedOf(index);
  const ids = new Int32Array(trimmed.length);
  const idOf = new Map<string, number>();
  for (let i = 0; i < trimmed.length; i++) {
    const t = trimmed[i] as string;
    let id = idOf.get(t);
    if (id === undefined) {
      id = idOf.size;
      idOf.set(t, id);
    }
    ids[i] = id;
  }
  index.trimmedIds = { ids, idOf };
  return index.trimmedIds;
}

function lineAt(index: DocIndex, offset: number): number {
  if (!index.split) {
    // Counting is one native scan up to the offset; splitting the file would be a string per line.
    let n = 0;
    const text = index.text;
    for (let i = text.indexOf("\n"); i !== -1 && i < offset; i = text.indexOf("\n", i + 1)) n++;
    return n;
  }
  let lo = 0;
  let hi = index.lineStarts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if ((index.lineStarts[mid] as number) <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/**
 * lineAt for offsets in ascending order: one forward count over the text when the index is not split
 * (lineAt alone would count from the top for each offset, the square of the file for replace_all).
 */
function linesAt(index: DocIndex, offsets: readonly number[]): number[] {
  if (index.split) return offsets.map((o) => lineAt(index, o));
  const text = index.text;
  const out = new Array<number>(offsets.length);
  let n = 0;
  let nl = text.indexOf("\n");
  for (let k = 0; k < offsets.length; k++) {
    const offset = offsets[k] as number;
    while (nl !== -1 && nl < offset) {
      n++;
      nl = text.indexOf("\n", nl + 1);
    }
    out[k] = n;
  }
  return out;
}

function lineEnd(index: DocIndex, line: number): number {
  return (index.lineStarts[line] as number) + (index.lines[line] as string).length;
}

/** `more`: the stage stopped collecting at MAX_REPORTED_MATCHES places. */
type StageResult =
  | { kind: "none" }
  | { kind: "many"; lines: number[]; more?: boolean }
  | { kind: "one"; match: Match };

/** Search and replacement as whole lines: a trailing newline dropped, blank edge lines trimmed from the search. */
function blockLines(search: string, replace: string): { search: string[]; replace: string[] } {
  const s = toLf(search).split("\n");
  const r = toLf(replace).split("\n");
  if (s.length > 1 && s[s.length - 1] === "") {
    s.pop();
    if (r.length > 1 && r[r.length - 1] === "") r.pop();
  }
  // Indexes, not shift(): a search text of thousands of blank lines must not cost their square.
  let s0 = 0;
  let r0 = 0;
  while (s0 < s.length && isBlank(s[s0] as string)) {
    s0++;
    if (r.length - r0 > 1 && isBlank(r[r0] as string)) r0++;
  }
  let s1 = s.length;
  let r1 = r.length;
  while (s1 > s0 && isBlank(s[s1 - 1] as string)) {
    s1--;
    if (r1 - r0 > 1 && isBlank(r[r1 - 1] as string)) r1--;
  }
  const kept = r.slice(r0, r1);
  if (kept.length === 1 && kept[0] === "") kept.length = 0;
  return { search: s.slice(s0, s1), replace: kept };
}

/** Up to MAX_REPORTED_MATCHES + 1 places (one more tells that there are more). */
function occurrences(haystack: string, needle: string, from: number): number[] {
  const found: number[] = [];
  eachOccurrence(haystack, needle, from, (i) => found.push(i) <= MAX_REPORTED_MATCHES);
  return found;
}

function stageExact(
  doc: TextDocument,
  index: DocIndex,
  search: string,
  replace: string,
  from: number,
): StageResult {
  index.raw ??= doc.eols.includes("\r\n") ? rawText(doc) : doc.text;
  const raw = index.raw;
  if (raw === doc.text) {
    const hits = occurrences(doc.text, search, from);
    return spanResult(index, hits, search.length, toLf(replace), "exact");
  }
  // CRLF present: find the bytes as written, then map raw offsets to LF-text offsets.
  if (!index.crOffsets) {
    const crs: number[] = [];
    for (let i = raw.indexOf("\r\n"); i !== -1; i = raw.indexOf("\r\n", i + 1)) crs.push(i);
    index.crOffsets = crs;
  }
  const crs = index.crOffsets;
  const toText = (rawOffset: number): number => {
    let lo = 0;
    let hi = crs.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((crs[mid] as number) < rawOffset) lo = mid + 1;
      else hi = mid;
    }
    return rawOffset - lo;
  };
  const splits = (rawOffset: number) =>
    raw.charCodeAt(rawOffset - 1) === 13 && raw.charCodeAt(rawOffset) === 10;
  const spans: Array<[number, number]> = [];
  eachOccurrence(raw, search, 0, (hit) => {
    const end = hit + search.length;
    if (splits(hit) || splits(end)) return true;
    const start = toText(hit);
    if (start < from) return true;
    return spans.push([start, toText(end)]) <= MAX_REPORTED_MATCHES;
  });
  if (spans.length === 0) return { kind: "none" };
  if (spans.length > 1) {
    const starts = spans.map(([s]) => s);
    return many(linesAt(index, starts).map((l) => l + 1));
  }
  const [start, end] = spans[0] as [number, number];
  return one(index, start, end, toLf(replace), "exact");
}

function one(
  index: DocIndex,
  start: number,
  end: number,
  replacement: string,
  strategy: Strategy,
  /** lineAt(index, start), when the caller has it (see linesAt). */
  knownStartLine?: number,
): StageResult {
  const startLine = knownStartLine ?? lineAt(index, start);
  const last = Math.max(start, end - 1);
  let endLine = startLine;
  if (index.split) endLine = lineAt(index, last);
  else
    for (let i = index.text.indexOf("\n", start); i !== -1 && i < last; i = index.text.indexOf("\n", i + 1))
      endLine++;
  return {
    kind: "one",
    match: { start, end, replacement, strategy, startLine: startLine + 1, endLine: endLine + 1 },
  };
}

function many(lines: number[], cap = MAX_REPORTED_MATCHES): StageResult {
  return lines.length > cap
    ? { kind: "many", lines: lines.slice(0, cap), more: true }
    : { kind: "many", lines };
}

function spanResult(
  index: DocIndex,
  hits: number[],
  length: number,
  replacement: string,
  strategy: Strategy,
): StageResult {
  if (hits.length === 0) return { kind: "none" };
  if (hits.length > 1) return many(linesAt(index, hits).map((l) => l + 1));
  const start = hits[0] as number;
  return one(index, start, start + length, replacement, strategy);
}

function stageLineEndings(
  doc: TextDocument,
  index: DocIndex,
  search: string,
  replace: string,
  from: number,
): StageResult {
  const lf = toLf(search);
  if (lf === search && index.raw === doc.text) return { kind: "none" };
  return spanResult(index, occurrences(doc.text, lf, from), lf.length, toLf(replace), "line_endings");
}

function stageIndentation(
  index: DocIndex,
  search: string[],
  replace: string[],
  from: number,
  budget: Budget,
): StageResult {
  const first = search[0];
  if (first === undefined) return { kind: "none" };
  // A native substring scan first: when the first line occurs nowhere, trimming every line of a
  // large file would cost more than the search.
  const head = first.trim();
  let seen = false;
  for (let i = 0; i < index.lines.length && !seen; i++) {
    const line = index.lines[i] as string;
    seen = line.includes(head) && line.trim() === head;
  }
  if (!seen) return { kind: "none" };
  // Then whole runs of trimmed lines, as line ids: linear however often the file repeats itself.
  const { ids, idOf } = trimmedIdsOf(index);
  const needle = new Int32Array(search.length);
  for (let j = 0; j < search.length; j++) {
    const id = idOf.get((search[j] as string).trim());
    if (id === undefined) return { kind: "none" };
    needle[j] = id;
  }
  const found: Array<{ line: number; pairs: Array<readonly [string, string]> }> = [];
  const starts: number[] = [];
  eachLineRun(ids, needle, lineAt(index, from), (line) => {
    if ((index.lineStarts[line] as number) < from) return true;
    starts.push(line);
    return true;
  });
  const cap = reportCap(search.length);
  for (const line of starts) {
    if (found.length > cap) break;
    budget.spend(search.length, "indentation");
    const pairs: Array<readonly [string, string]> = [];
    for (let j = 0; j < search.length; j++) {
      const s = search[j] as string;
      if (isBlank(s)) continue;
      pairs.push([leadingWhitespace(s), leadingWhitespace(index.lines[line + j] as string)]);
    }
    if (!sameNesting(pairs.map(([s, f]) => [columns(s), columns(f)] as const))) continue;
    found.push({ line, pairs });
  }
  if (found.length === 0) return { kind: "none" };
  if (found.length > 1)
    return many(
      found.map((f) => f.line + 1),
      cap,
    );
  const { line, pairs } = found[0] as { line: number; pairs: Array<readonly [string, string]> };
  const last = line + search.length - 1;
  const replacement = reindent(replace, {
    pairs,
    modelLines: [...search, ...replace],
    fileLines: contextLines(index, line, last),
  }).join("\n");
  return one(index, index.lineStarts[line] as number, lineEnd(index, last), replacement, "indentation");
}

/** File lines around a match (or the head of the file) to learn its indentation style from. */
function contextLines(index: DocIndex, first: number, last: number): string[] {
  const around = index.lines.slice(Math.max(0, first - 40), Math.min(index.lines.length, last + 41));
  const hasIndent = around.some((l) => /^[ \t]/.test(l));
  return hasIndent ? around : index.lines.slice(0, 2000);
}

/** Where a search text's normal form occurs in the file's, found once for both stages that use it. */
function formatterHits(
  doc: TextDocument,
  index: DocIndex,
  search: string[],
): { file: NormalForm; needle: NormalForm; hits: number[] } {
  const key = search.join("\n");
  if (index.formatterHits?.key === key) return index.formatterHits;
  index.normal ??= normalForm(doc.text);
  const file = index.normal;
  const needle = normalForm(key);
  const hits: number[] = [];
  if (needle.norm !== "")
    eachOccurrence(file.norm, needle.norm, 0, (k) => {
      hits.push(k);
      return true;
    });
  index.formatterHits = { key, file, needle, hits };
  return index.formatterHits;
}

/** How many of the file's code lines start inside `[from, to)` of its normal form. */
function lineStartsWithin(file: NormalForm, from: number, to: number): number {
  const starts = file.lineStarts;
  let lo = 0;
  let hi = starts.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((starts[mid] as { normIndex: number }).normIndex < from) lo = mid + 1;
    else hi = mid;
  }
  let count = 0;
  for (let i = lo; i < starts.length && (starts[i] as { normIndex: number }).normIndex < to; i++) count++;
  return count;
}

/**
 * The two stages on the normal form (normal-form.ts): the same code, whitespace aside where it cannot
 * change meaning. `formatting` also wants the lines to break where the search text's do (blank lines,
 * indentation and spaces around punctuation may differ); `line_wrapping` lets them break anywhere
 * between tokens, so a call wrapped one argument per line matches the same call on one line.
 */
function stageFormatting(
  doc: TextDocument,
  index: DocIndex,
  search: string[],
  replace: string[],
  from: number,
  budget: Budget,
  strategy: "formatting" | "line_wrapping",
): StageResult {
  const { file, needle, hits } = formatterHits(doc, index, search);
  if (hits.length === 0) return { kind: "none" };
  const text = doc.text;
  const onlySpaceBetween = (a: number, b: number) => /^[ \t]*$/.test(text.slice(a, b));
  const fileLineStarts = new Map<number, string>();
  const found: Array<{ first: number; last: number; pairs: Array<readonly [string, string]> }> = [];
  const cap = reportCap(needle.lineStarts.length);
  for (const k of hits) {
    if (found.length > cap) break;
    const start = file.map[k] as number;
    const end = (file.map[k + needle.norm.length - 1] as number) + 1;
    if (start < from) continue;
    const first = lineAt(index, start);
    const last = lineAt(index, end - 1);
    // Whole lines only: a formatter-tolerant match never starts or ends in the middle of a line.
    if (
      !onlySpaceBetween(index.lineStarts[first] as number, start) ||
      !onlySpaceBetween(end, lineEnd(index, last))
    )
      continue;
    budget.spend(needle.lineStarts.length + last - first + 1, strategy);
    if (fileLineStarts.size === 0)
      for (const ls of file.lineStarts) fileLineStarts.set(ls.normIndex, ls.indent);
    // The lines that start where the search text's lines start: their indentation is paired.
    const pairs: Array<readonly [string, string]> = [];
    for (const ls of needle.lineStarts) {
      const fileIndent = fileLineStarts.get(k + ls.normIndex);
      if (fileIndent !== undefined) pairs.push([ls.indent, fileIndent]);
    }
    const sameBreaks =
      pairs.length === needle.lineStarts.length &&
      lineStartsWithin(file, k, k + needle.norm.length) === needle.lineStarts.length;
    if (strategy === "formatting" && !sameBreaks) continue;
    const depths = pairs.map(([s, f]) => [columns(s), columns(f)] as const);
    if (!sameNesting(depths) || !sameIndentScale(depths)) continue;
    found.push({ first, last, pairs });
  }
  if (found.length > 1)
    return many(
      found.map((f) => f.first + 1),
      cap,
    );
  if (found.length === 0) return { kind: "none" };
  const { first, last, pairs } = found[0] as {
    first: number;
    last: number;
    pairs: Array<readonly [string, string]>;
  };
  const firstSearch = search.find((l) => !isBlank(l)) ?? "";
  const basePairs: Array<readonly [string, string]> = [
    [leadingWhitespace(firstSearch), leadingWhitespace(index.lines[first] as string)],
    ...pairs,
  ];
  const replacement = reindent(replace, {
    pairs: basePairs,
    modelLines: [...search, ...replace],
    fileLines: contextLines(index, first, last),
  }).join("\n");
  return one(index, index.lineStarts[first] as number, lineEnd(index, last), replacement, strategy);
}

const STRING_SYNTAX = { syntax: "string" } as const;

function describeLines(lines: number[], more = false): string {
  const shown = lines.slice(0, 10).join(", ");
  if (more) return `${shown}, … (more than ${lines.length} in all)`;
  return lines.length > 10 ? `${shown}, … (${lines.length} in all)` : shown;
}

/**
 * Finds the one place `search` refers to, trying each allowed strategy in order. Any stage that finds
 * more than one place stops the search with EMULTI_MATCH; none at all gives ENO_MATCH with the closest
 * candidate. Never picks a first match silently.
 */
export function locate(
  doc: TextDocument,
  search: string,
  replace: string,
  options: LocateOptions = {},
): Match | MatchFailure {
  const strategies = options.strategies ?? ALL_STRATEGIES;
  const label = options.label ?? "the search text";
  const from = options.from ?? 0;
  if (search.trim() === "") {
    return {
      code: "EINVAL_INPUT",
      message: `${label} is empty or whitespace only; it would match everywhere. Give the exact lines to replace, with a non-blank line of context.`,
      tried: [],
    };
  }
  const tried: Strategy[] = [];
  const budget = new Budget();
  const run = (s: string, r: string, allowed: readonly Strategy[]): StageResult => {
    const index = indexOf(doc);
    index.raw ??= doc.eols.includes("\r\n") ? rawText(doc) : doc.text;
    const lines = blockLines(s, r);
    for (const strategy of allowed) {
      let result: StageResult;
      if (strategy === "exact") result = stageExact(doc, index, s, r, from);
      else if (strategy === "line_endings") result = stageLineEndings(doc, index, s, r, from);
      else if (strategy === "indentation")
        result = stageIndentation(index, lines.search, lines.replace, from, budget);
      else if (strategy === "formatting" || strategy === "line_wrapping")
        result = stageFormatting(doc, index, lines.search, lines.replace, from, budget, strategy);
      else continue;
      if (!tried.includes(strategy)) tried.push(strategy);
      if (result.kind !== "none") return result;
    }
    return { kind: "none" };
  };
  const ambiguous = (lines: number[], strategy: Strategy, more = false): MatchFailure => ({
    code: "EMULTI_MATCH",
    message: `${label} matches ${more ? `more than ${lines.length}` : lines.length} places (starting at lines ${describeLines(lines, more)}) with the ${strategyLabel(strategy)} strategy; nothing was changed. Include more surrounding lines so it matches exactly one place.`,
    strategy,
    lines,
    tried: [...tried],
  });
  try {
    return locateWithin(doc, search, replace, strategies, label, from, tried, run, ambiguous);
  } catch (error) {
    if (!(error instanceof BudgetExceeded)) throw error;
    const searchLines = toLf(search).split("\n").length;
    return {
      code: "ETOO_LARGE",
      message: `${label} (${searchLines} lines) could not be matched within the matcher's bound of ${MATCH_BUDGET} line comparisons per call: the ${strategyLabel(error.stage)} stage found it in too many places of this ${indexOf(doc).lines.length}-line file that repeats the same lines. Nothing was changed. Give a shorter ${label} that includes a line occurring only once in the file.`,
      strategy: error.stage,
      tried: [...tried],
    };
  }
}

type Run = (s: string, r: string, allowed: readonly Strategy[]) => StageResult;

function locateWithin(
  doc: TextDocument,
  search: string,
  replace: string,
  strategies: readonly Strategy[],
  label: string,
  from: number,
  tried: Strategy[],
  run: Run,
  ambiguous: (lines: number[], strategy: Strategy, more?: boolean) => MatchFailure,
): Match | MatchFailure {
  const first = run(
    search,
    replace,
    strategies.filter((s) => s !== "unescaped"),
  );
  if (first.kind === "one") return first.match;
  if (first.kind === "many") return ambiguous(first.lines, tried[tried.length - 1] as Strategy, first.more);
  // A model that sent its text still JSON-escaped: read one level of string escaping off and retry.
  const s = strategies.includes("unescaped") ? unescapeText(search, STRING_SYNTAX) : search;
  if (s !== search && s.trim() !== "") {
    const before = tried.length;
    const again = run(
      s,
      unescapeText(replace, STRING_SYNTAX),
      strategies.filter((x) => x !== "unescaped"),
    );
    tried.splice(before);
    if (!tried.includes("unescaped")) tried.push("unescaped");
    if (again.kind === "one") return { ...again.match, via: again.match.strategy, strategy: "unescaped" };
    if (again.kind === "many") return ambiguous(again.lines, "unescaped", again.more);
  }
  const candidate = closestCandidate(doc, search, from);
  const triedText = tried.map(strategyLabel).join(", ");
  let message = `${label} was not found in the file (tried: ${triedText}); nothing was changed.`;
  if (candidate) {
    message += `\nClosest candidate, lines ${candidate.start_line}-${candidate.end_line}:\n${candidate.text}`;
    if (candidate.first_difference) message += `\nFirst difference: ${candidate.first_difference}`;
  } else {
    message += " No similar lines were found; read the file again before retrying.";
  }
  return { code: "ENO_MATCH", message, tried, ...(candidate ? { candidate } : {}) };
}

/**
 * Every non-overlapping place `search` occurs with the first strategy (exact, then line endings) that
 * finds any — for replace_all.
 */
export function locateAll(doc: TextDocument, search: string, replace: string): Match[] {
  const index = indexOf(doc);
  index.raw ??= doc.eols.includes("\r\n") ? rawText(doc) : doc.text;
  const spans = (needle: string, haystack: string): number[] => {
    const hits: number[] = [];
    for (let i = haystack.indexOf(needle); i !== -1; i = haystack.indexOf(needle, i + needle.length))
      hits.push(i);
    return hits;
  };
  const lf = toLf(search);
  // Matching runs on LF text; it is "exact" only when the bytes were LF to begin with.
  const strategy: Strategy = lf === search && index.raw === doc.text ? "exact" : "line_endings";
  const starts = spans(lf, doc.text);
  const lines = linesAt(index, starts);
  const replacement = toLf(replace);
  return starts.map((start, k) => {
    const result = one(index, start, start + lf.length, replacement, strategy, lines[k]);
    return (result as { kind: "one"; match: Match }).match;
  });
}

/** Character pairs of a string, as numbers (whitespace runs count as one space). */
function bigramSet(s: string): Set<number> {
  const t = s.replace(/\s+/g, " ");
  const grams = new Set<number>();
  for (let i = 0; i < t.length - 1; i++) grams.add(t.charCodeAt(i) * 65536 + t.charCodeAt(i + 1));
  return grams;
}

/** Share of `line`'s character pairs that occur in the probe: a cheap likeness for a hint, never for matching. */
function likeness(probe: Set<number>, probeLength: number, line: string): number {
  let shared = 0;
  let total = 0;
  let previous = -1;
  for (let i = 0; i < line.length; i++) {
    let code = line.charCodeAt(i);
    if (code === 9) code = 32;
    if (code === 32 && previous === 32) continue;
    if (previous >= 0) {
      total++;
      if (probe.has(previous * 65536 + code)) shared++;
    }
    previous = code;
  }
  return (2 * shared) / Math.max(1, total + probeLength - 1);
}

const CANDIDATE_MAX_LINES = 40;
/** Votes cast when looking for the closest candidate; past it the commonest lines do not vote. */
const CANDIDATE_VOTE_BUDGET = 2_000_000;

/**
 * The most times a search line may occur in the file and still vote: every line when the votes fit
 * the budget (the usual case), else only the rarer ones, which are the informative ones anyway.
 */
function voteLimit(counts: number[]): number {
  let total = 0;
  for (const c of counts) total += c;
  if (total <= CANDIDATE_VOTE_BUDGET) return Number.POSITIVE_INFINITY;
  const sorted = [...counts].sort((a, b) => a - b);
  let spent = 0;
  let limit = 0;
  for (const c of sorted) {
    // Lines tied with the one that does not fit stay out too: the limit is a count, not a position.
    if (spent + c > CANDIDATE_VOTE_BUDGET) return Math.min(limit, c - 1);
    spent += c;
    limit = c;
  }
  return limit;
}

/** The window of the file that looks most like the search text, for an actionable ENO_MATCH. */
export function closestCandidate(doc: TextDocument, search: string, from = 0): Candidate | undefined {
  const index = indexOf(doc);
  const lines = toLf(search).replace(/\n$/, "").split("\n");
  while (lines.length > 0 && isBlank(lines[0] as string)) lines.shift();
  while (lines.length > 0 && isBlank(lines[lines.length - 1] as string)) lines.pop();
  if (lines.length === 0) return undefined;
  const fromLine = lineAt(index, from);
  const votes = new Map<number, number>();
  const { byTrimmed } = trimmedOf(index);
  const limit = voteLimit(lines.map((l) => byTrimmed.get(l.trim())?.length ?? 0));
  lines.forEach((line, j) => {
    const t = line.trim();
    if (t.length < 2) return;
    const where = byTrimmed.get(t) ?? [];
    if (where.length > limit) return;
    for (const i of where) {
      const start = i - j;
      if (start < fromLine) continue;
      votes.set(start, (votes.get(start) ?? 0) + 1);
    }
  });
  let best: number | undefined;
  let bestVotes = 0;
  for (const [start, n] of votes) {
    if (n > bestVotes || (n === bestVotes && best !== undefined && start < best)) {
      best = start;
      bestVotes = n;
    }
  }
  if (best === undefined) {
    const probeIndex = lines.findIndex((l) => l.trim().length > 0);
    const probe = (lines[probeIndex] as string).trim();
    const grams = bigramSet(probe);
    let bestScore = 0.5;
    for (let i = fromLine; i < index.lines.length; i++) {
      const t = trimmedOf(index).trimmed[i] as string;
      // Lines of very different length cannot be the likeliest candidate; skip them cheaply.
      if (t.length === 0 || t.length > probe.length * 2 + 8 || t.length * 2 + 8 < probe.length) continue;
      const score = likeness(grams, probe.length, t);
      if (score > bestScore) {
        bestScore = score;
        best = i - probeIndex;
      }
    }
  }
  if (best === undefined) return undefined;
  const start = Math.max(0, best);
  const end = Math.min(index.lines.length, start + Math.min(lines.length, CANDIDATE_MAX_LINES)) - 1;
  const width = String(end + 1).length;
  const text = index.lines
    .slice(start, end + 1)
    .map((l, i) => `${String(start + i + 1).padStart(width)}: ${l}`)
    .join("\n");
  // Report the first difference in content; a whitespace-only difference only when there is no other.
  let firstDifference: string | undefined;
  let whitespaceDifference: string | undefined;
  for (let j = 0; j < lines.length && start + j <= end; j++) {
    const fileLine = index.lines[start + j] as string;
    const searchLine = lines[j] as string;
    if (fileLine === searchLine) continue;
    if (fileLine.trim() === searchLine.trim()) {
      whitespaceDifference ??= `line ${start + j + 1} differs only in whitespace: file ${JSON.stringify(fileLine)}, search ${JSON.stringify(searchLine)}`;
      continue;
    }
    firstDifference = `line ${start + j + 1} is ${JSON.stringify(fileLine)}; the search text has ${JSON.stringify(searchLine)}`;
    break;
  }
  firstDifference ??= whitespaceDifference;
  return {
    start_line: start + 1,
    end_line: end + 1,
    text,
    ...(firstDifference ? { first_difference: firstDifference } : {}),
  };
}
