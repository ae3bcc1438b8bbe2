import { comparePaths } from "../tree-order.js";

/** One matching line as both engines report it. */
export type LineMatch = { line: number; text: string };
export type FileMatches = { path: string; matches: LineMatch[] };

/** What an engine hands back: every file with matches, in any order. */
export type EngineResult = {
  files: FileMatches[];
  /** The engine stopped collecting early because far more than the caps matched. */
  stoppedEarly: boolean;
};

/** A match line longer than this is cut (one minified line must not flood the answer). */
export const MATCH_LINE_MAX_CHARS = 500;

/** Engines stop collecting past this many matches; sorted results are then capped for display. */
export function collectionBound(maxMatches: number): number {
  return Math.max(maxMatches * 10, 1000);
}

export function cutLine(text: string): string {
  if (text.length <= MATCH_LINE_MAX_CHARS) return text;
  return `${text.slice(0, MATCH_LINE_MAX_CHARS)} … [line cut: ${text.length} chars]`;
}

export type CappedResults = {
  files: FileMatches[];
  matchCount: number;
  capped: boolean;
};

/**
 * Sorts by path and line, cuts long lines, and keeps matches until `maxMatches` or `maxChars`
 * (the characters of the kept match lines) would be exceeded.
 */
export function capResults(result: EngineResult, maxMatches: number, maxChars: number): CappedResults {
  const sorted = [...result.files]
    .filter((f) => f.matches.length > 0)
    .sort((a, b) => comparePaths(a.path, b.path));
  const files: FileMatches[] = [];
  let matchCount = 0;
  let chars = 0;
  let capped = result.stoppedEarly;
  outer: for (const file of sorted) {
    const kept: LineMatch[] = [];
    for (const m of [...file.matches].sort((a, b) => a.line - b.line)) {
      const text = cutLine(m.text);
      if (matchCount >= maxMatches || chars + text.length > maxChars) {
        capped = true;
        if (kept.length) files.push({ path: file.path, matches: kept });
        break outer;
      }
      kept.push({ line: m.line, text });
      matchCount += 1;
      chars += text.length;
    }
    files.push({ path: file.path, matches: kept });
  }
  return { files, matchCount, capped };
}
