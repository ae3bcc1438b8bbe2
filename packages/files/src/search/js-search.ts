import { promises as fs } from "node:fs";
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
  /** Files read at once. */
  concurrency?: number;
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

/** The JS engine: the shared walker, files read with bounded concurrency, results like ripgrep's. */
export async function searchWithJs(search: JsSearch): Promise<EngineResult> {
  const bound = collectionBound(search.maxMatches);
  const files: FileMatches[] = [];
  let total = 0;
  let stoppedEarly = false;
  const searchFile = async (abs: string, rel: string) => {
    if (stoppedEarly) return;
    let buf: Buffer;
    try {
      buf = await fs.readFile(abs);
    } catch {
      return;
    }
    const matches = searchBuffer(buf, search.query);
    if (!matches?.length || stoppedEarly) return;
    files.push({ path: rel, matches });
    total += matches.length;
    if (total >= bound) stoppedEarly = true;
  };
  if (search.isFile) {
    await searchFile(search.start, search.fileRel ?? search.start);
    return { files, stoppedEarly };
  }
  const limit = search.concurrency ?? 16;
  const queue: Array<{ abs: string; rel: string }> = [];
  let active = 0;
  let wake: (() => void) | undefined;
  const drain = () => {
    while (active < limit && queue.length > 0 && !stoppedEarly) {
      const next = queue.shift() as { abs: string; rel: string };
      active++;
      void searchFile(next.abs, next.rel).finally(() => {
        active--;
        drain();
        wake?.();
      });
    }
  };
  await walkFiles(
    {
      root: search.root,
      start: search.start,
      ...(search.include ? { override: makeOverride(search.include) } : {}),
      ...(search.signal ? { signal: search.signal } : {}),
    },
    (file) => {
      queue.push(file);
      drain();
      return !stoppedEarly;
    },
  );
  while (active > 0 || (queue.length > 0 && !stoppedEarly)) {
    drain();
    await new Promise<void>((resolve) => {
      wake = resolve;
    });
  }
  return { files, stoppedEarly };
}
