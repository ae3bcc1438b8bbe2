import { closeSync, openSync, readSync } from "node:fs";
import { sniffBom } from "../text-decode.js";
import { makeOverride, walkFiles } from "../walk.js";
import type { CompiledQuery } from "./regex.js";
import { collectionBound, type EngineResult, type FileMatches, type LineMatch } from "./results.js";

export type JsSearch = {
  root: string;
  /** Absolute real path of the directory or file to search. */
  start: string;
  isFile: boolean;
  /** Root-relative form of `start` when it is a file. */
  fileRel?: string;
  query: CompiledQuery;
  include?: string;
  maxMatches: number;
  signal?: AbortSignal;
};

const LONE_CR_OR_SEPARATOR = /\r(?!\n)|[\u2028\u2029]/;

function stripCr(line: string): string {
  return line.endsWith("\r") ? line.slice(0, -1) : line;
}

/** Line-by-line: the exact reference semantics, used when the fast scan could differ. */
function searchLines(text: string, query: CompiledQuery): LineMatch[] {
  const out: LineMatch[] = [];
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (query.line.test(line)) out.push({ line: i + 1, text: stripCr(line) });
  }
  return out;
}

/**
 * Scans the whole text with a global multiline regex and verifies each candidate line on its own,
 * so a match that ran across a newline or leaned on JS's wider `^`/`$` never counts.
 */
function scanText(text: string, query: CompiledQuery): LineMatch[] {
  if (LONE_CR_OR_SEPARATOR.test(text)) return searchLines(text, query);
  const out: LineMatch[] = [];
  const re = query.scan;
  re.lastIndex = 0;
  let lineNo = 1;
  let counted = 0;
  while (re.lastIndex <= text.length) {
    const m = re.exec(text);
    if (!m) break;
    const lineStart = m.index === 0 ? 0 : text.lastIndexOf("\n", m.index - 1) + 1;
    let lineEnd = text.indexOf("\n", m.index);
    if (lineEnd === -1) lineEnd = text.length;
    // Count newlines between the previous counted point and this line.
    for (let p = text.indexOf("\n", counted); p !== -1 && p < lineStart; p = text.indexOf("\n", p + 1))
      lineNo++;
    counted = lineStart;
    const line = text.slice(lineStart, lineEnd);
    if (lineStart < text.length && query.line.test(line)) out.push({ line: lineNo, text: stripCr(line) });
    re.lastIndex = lineEnd + 1;
  }
  return out;
}

/** Searches raw UTF-8 bytes for the required literal and decodes only the lines around hits. */
function searchBytes(buf: Buffer, bomLength: number, query: CompiledQuery): LineMatch[] {
  const literal = query.literal as Buffer;
  const out: LineMatch[] = [];
  let hit = buf.indexOf(literal, bomLength);
  if (hit === -1) return out;
  let lineNo = 1;
  let counted = 0;
  while (hit !== -1) {
    const lineStart = hit === 0 ? 0 : buf.lastIndexOf(10, hit - 1) + 1;
    let lineEnd = buf.indexOf(10, hit);
    if (lineEnd === -1) lineEnd = buf.length;
    for (let p = buf.indexOf(10, counted); p !== -1 && p < lineStart; p = buf.indexOf(10, p + 1)) lineNo++;
    counted = lineStart;
    const line = buf.toString("utf8", Math.max(lineStart, bomLength), lineEnd);
    if (query.line.test(line)) out.push({ line: lineNo, text: stripCr(line) });
    if (lineEnd >= buf.length) break;
    hit = buf.indexOf(literal, lineEnd + 1);
  }
  return out;
}

/** Searches one file's bytes; undefined when it is binary (a NUL byte), as ripgrep skips it. */
export function searchBuffer(buf: Buffer, query: CompiledQuery): LineMatch[] | undefined {
  const bom = sniffBom(buf);
  if (bom.encoding === "utf-16le" || bom.encoding === "utf-16be") {
    const text = new TextDecoder(bom.encoding).decode(buf.subarray(bom.length));
    if (text.includes("\0")) return undefined;
    return scanText(text, query);
  }
  if (buf.indexOf(0) !== -1) return undefined;
  if (query.literal) return searchBytes(buf, bom.length, query);
  return scanText(buf.toString("utf8", bom.length), query);
}

/** Bytes read first: a NUL in them marks a binary file, whose rest is never read. */
const HEAD_BYTES = 64 * 1024;

/**
 * Reads a file, except that a binary one (a NUL byte in its first 64 KiB, ripgrep's tell too) is
 * given up after that first read: installed trees hold executables of 100 MB and more.
 * Synchronous on purpose: per-file promise round trips through the thread pool cost more than
 * the reads themselves on page-cached trees; the caller yields between short slices instead.
 */
function readUnlessBinary(abs: string): Buffer | undefined {
  const fd = openSync(abs, "r");
  try {
    // Read until EOF into one scratch buffer reused across files (allocating per file made the
    // walk GC-bound); no fstat, the reads tell the size.
    let filled = readSync(fd, scratch, 0, Math.min(HEAD_BYTES, scratch.length), 0);
    if (filled === 0) return scratch.subarray(0, 0);
    const bom = sniffBom(scratch.subarray(0, filled));
    const utf16 = bom.encoding === "utf-16le" || bom.encoding === "utf-16be";
    if (!utf16 && scratch.subarray(0, filled).indexOf(0) !== -1) return undefined;
    while (true) {
      if (filled === scratch.length) {
        const bigger = Buffer.allocUnsafe(scratch.length * 2);
        scratch.copy(bigger, 0, 0, filled);
        scratch = bigger;
      }
      const read = readSync(fd, scratch, filled, scratch.length - filled, filled);
      if (read === 0) break;
      filled += read;
    }
    const view = scratch.subarray(0, filled);
    // Give a huge buffer back to the GC rather than holding it for the life of the process.
    if (scratch.length > SCRATCH_KEEP) scratch = Buffer.allocUnsafe(SCRATCH_KEEP);
    return view;
  } finally {
    closeSync(fd);
  }
}

const SCRATCH_KEEP = 4 * 1024 * 1024;
let scratch = Buffer.allocUnsafe(1024 * 1024);

/** The JS engine: the shared walker, each file read and searched as the walk reaches it. */
export async function searchWithJs(search: JsSearch): Promise<EngineResult> {
  const bound = collectionBound(search.maxMatches);
  const files: FileMatches[] = [];
  let total = 0;
  const searchFile = (abs: string, rel: string): boolean => {
    let buf: Buffer | undefined;
    try {
      buf = readUnlessBinary(abs);
    } catch {
      return true;
    }
    if (!buf) return true;
    const matches = searchBuffer(buf, search.query);
    if (!matches?.length) return true;
    files.push({ path: rel, matches });
    total += matches.length;
    return total < bound;
  };
  if (search.isFile) {
    searchFile(search.start, search.fileRel ?? search.start);
    return { files, stoppedEarly: total >= bound };
  }
  await walkFiles(
    {
      root: search.root,
      start: search.start,
      ...(search.include ? { override: makeOverride(search.include) } : {}),
      ...(search.signal ? { signal: search.signal } : {}),
    },
    (file) => searchFile(file.abs, file.rel),
  );
  return { files, stoppedEarly: total >= bound };
}
