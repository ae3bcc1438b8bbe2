import type { LineMatch } from "./results.js";

/** A compiled query as it crosses into the worker: RegExp sources and flags, and the required literal. */
export type QuerySpec = {
  line: [source: string, flags: string];
  scan: [source: string, flags: string];
  literal: string | null;
};

/** How a file's text starts in a batch: after its BOM, as UTF-8 or UTF-16. */
export const ENCODING_CODE = { "utf-8": 0, "utf-16le": 1, "utf-16be": 2 } as const;

export type MatchRequest = {
  query: QuerySpec;
  /** The files' bytes, one after another (BOMs already skipped). */
  data: Uint8Array;
  /** Per file: start, end (in `data`) and encoding code, flattened. */
  files: number[];
};

/**
 * The matches of a request, flat: per file its number of matching lines (-1 for a binary file, a
 * NUL byte), every match's line number in order, and their texts joined by LF (a line holds none).
 * Flat because cloning one small object per match between threads cost more than the matching.
 */
export type MatchResponse = { counts: number[]; lines: Int32Array; texts: string };

/** Per file of a request: its matching lines, or null for a binary file. */
export function decodeResponse(response: MatchResponse): Array<LineMatch[] | null> {
  const texts = response.texts.split("\n");
  const out: Array<LineMatch[] | null> = [];
  let at = 0;
  for (const count of response.counts) {
    if (count < 0) {
      out.push(null);
      continue;
    }
    const matches: LineMatch[] = [];
    for (let end = at + count; at < end; at++)
      matches.push({ line: response.lines[at] as number, text: texts[at] as string });
    out.push(matches);
  }
  return out;
}

/**
 * The JS engine's matching, as one self-contained function: it runs in the search worker from its
 * source text (`String(matchProgram)`), so it may use nothing from outside its own body but globals.
 */
export function matchProgram(): (request: MatchRequest) => MatchResponse {
  const LONE_CR_OR_SEPARATOR = /\r(?!\n)|[\u2028\u2029]/;
  type Compiled = { line: RegExp; scan: RegExp; literal: Buffer | undefined; literalText: string };
  let key = "";
  let compiled: Compiled | undefined;

  const stripCr = (line: string): string => (line.endsWith("\r") ? line.slice(0, -1) : line);

  /** Line-by-line: the exact reference semantics, used when the fast scan could differ. */
  const searchLines = (text: string, query: Compiled): LineMatch[] => {
    const out: LineMatch[] = [];
    const lines = text.split("\n");
    if (lines.at(-1) === "") lines.pop();
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i] as string;
      if (query.line.test(line)) out.push({ line: i + 1, text: stripCr(line) });
    }
    return out;
  };

  /**
   * Scans the whole text with a global multiline regex and verifies each candidate line on its own,
   * so a match that ran across a newline or leaned on JS's wider `^`/`$` never counts.
   */
  const scanText = (text: string, query: Compiled): LineMatch[] => {
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
      for (let p = text.indexOf("\n", counted); p !== -1 && p < lineStart; p = text.indexOf("\n", p + 1))
        lineNo++;
      counted = lineStart;
      const line = text.slice(lineStart, lineEnd);
      if (lineStart < text.length && query.line.test(line)) out.push({ line: lineNo, text: stripCr(line) });
      re.lastIndex = lineEnd + 1;
    }
    return out;
  };

  /** Searches raw UTF-8 bytes for the required literal and decodes only the lines around hits. */
  const searchBytes = (buf: Buffer, query: Compiled): LineMatch[] => {
    const literal = query.literal as Buffer;
    const out: LineMatch[] = [];
    let hit = buf.indexOf(literal);
    if (hit === -1) return out;
    let lineNo = 1;
    let counted = 0;
    while (hit !== -1) {
      const lineStart = hit === 0 ? 0 : buf.lastIndexOf(10, hit - 1) + 1;
      let lineEnd = buf.indexOf(10, hit);
      if (lineEnd === -1) lineEnd = buf.length;
      for (let p = buf.indexOf(10, counted); p !== -1 && p < lineStart; p = buf.indexOf(10, p + 1)) lineNo++;
      counted = lineStart;
      const line = buf.toString("utf8", lineStart, lineEnd);
      if (query.line.test(line)) out.push({ line: lineNo, text: stripCr(line) });
      if (lineEnd >= buf.length) break;
      hit = buf.indexOf(literal, lineEnd + 1);
    }
    return out;
  };

  /**
   * searchBytes on the decoded text, for a file the literal is in: one decode, then string searches
   * and slices, where a Buffer method call and a decode per matching line cost more than the match
   * (a file where every line matches). The same lines either way: LF is LF in UTF-8 and in its
   * decoding, and each candidate line is tested whole with the line regex.
   */
  const searchDecoded = (text: string, query: Compiled): LineMatch[] => {
    const literal = query.literalText;
    const out: LineMatch[] = [];
    let hit = text.indexOf(literal);
    let lineNo = 1;
    let counted = 0;
    while (hit !== -1) {
      const lineStart = hit === 0 ? 0 : text.lastIndexOf("\n", hit - 1) + 1;
      let lineEnd = text.indexOf("\n", hit);
      if (lineEnd === -1) lineEnd = text.length;
      for (let p = text.indexOf("\n", counted); p !== -1 && p < lineStart; p = text.indexOf("\n", p + 1))
        lineNo++;
      counted = lineStart;
      const line = text.slice(lineStart, lineEnd);
      if (query.line.test(line)) out.push({ line: lineNo, text: stripCr(line) });
      if (lineEnd >= text.length) break;
      hit = text.indexOf(literal, lineEnd + 1);
    }
    return out;
  };

  const searchOne = (buf: Buffer, encoding: number, query: Compiled): LineMatch[] | null => {
    if (encoding !== 0) {
      const text = new TextDecoder(encoding === 1 ? "utf-16le" : "utf-16be").decode(buf);
      if (text.includes("\0")) return null;
      return scanText(text, query);
    }
    if (buf.indexOf(0) !== -1) return null;
    if (query.literal) {
      const first = buf.indexOf(query.literal);
      if (first === -1) return [];
      // Past a few hits per 4 KiB decoding the file once is cheaper than a decode per line.
      const second = buf.indexOf(query.literal, first + 1);
      // Not for a literal holding U+FFFD, which decoding also makes of invalid bytes.
      if (second !== -1 && second - first < 4096 && !query.literalText.includes("\ufffd"))
        return searchDecoded(buf.toString("utf8"), query);
      return searchBytes(buf, query);
    }
    return scanText(buf.toString("utf8"), query);
  };

  return ({ query, data, files }) => {
    const k = JSON.stringify(query);
    if (k !== key || !compiled) {
      compiled = {
        line: new RegExp(query.line[0], query.line[1]),
        scan: new RegExp(query.scan[0], query.scan[1]),
        literal: query.literal === null ? undefined : Buffer.from(query.literal, "utf8"),
        literalText: query.literal ?? "",
      };
      key = k;
    }
    const all = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    const counts: number[] = [];
    const lines: number[] = [];
    const texts: string[] = [];
    for (let i = 0; i + 2 < files.length; i += 3) {
      const buf = all.subarray(files[i] as number, files[i + 1] as number);
      const found = searchOne(buf, files[i + 2] as number, compiled);
      counts.push(found ? found.length : -1);
      for (const m of found ?? []) {
        lines.push(m.line);
        texts.push(m.text);
      }
    }
    return { counts, lines: Int32Array.from(lines), texts: texts.join("\n") };
  };
}
