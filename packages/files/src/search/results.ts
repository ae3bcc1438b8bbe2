import { comparePaths } from "../tree-order.js";

/** One matching line as both engines report it. */
export type LineMatch = { line: number; text: string };
export type FileMatches = { path: string; matches: LineMatch[] };

/** What an engine hands back: the files a TopFiles kept, in comparePaths order. */
export type EngineResult = {
  files: FileMatches[];
  /** More matched than was collected (files or lines past the kept set). */
  stoppedEarly: boolean;
  /** Files with matches the allowlist did not admit. */
  skipped?: number;
};

/**
 * What a search found so far, for progress: files with matches and their matching lines (before any
 * cap; files the allowlist refuses are not counted). Each report holds the totals, never a delta.
 */
export type SearchProgress = { files: number; matches: number };

/** A match line longer than this is cut (one minified line must not flood the answer). */
export const MATCH_LINE_MAX_CHARS = 500;

/**
 * What a capped search keeps, whatever order the engine finds files in: the first files in
 * comparePaths order whose matches (the first `maxMatches` lines of each) reach `maxMatches`, so
 * the capped answer is the prefix of the full answer in the documented order, the same for every
 * run and both engines. Memory stays under about twice `maxMatches` lines: a file past the kept
 * set once it is full is refused at once (`wants`), and kept files falling out are dropped.
 */
export class TopFiles {
  readonly #max: number;
  readonly #admit: ((rel: string) => boolean) | undefined;
  /** Sorted by comparePaths. */
  readonly #files: FileMatches[] = [];
  #total = 0;
  /** Matches were found that the kept set leaves out. */
  #more = false;
  /** Files with matches the allowlist did not admit. */
  skipped = 0;

  constructor(maxMatches: number, admit?: (rel: string) => boolean) {
    this.#max = Math.max(1, maxMatches);
    this.#admit = admit;
  }

  /** The kept set already holds `maxMatches` matches: later files in the order cannot get in. */
  get full(): boolean {
    return this.#total >= this.#max;
  }

  /**
   * The answer is known, capped: the kept set is full and more matched than it shows. A search
   * walking files in comparePaths order can stop here.
   */
  get settled(): boolean {
    return this.full && (this.#more || this.#total > this.#max);
  }

  /** Whether a file at `rel` could still be kept (so its matches are worth decoding). */
  wants(rel: string): boolean {
    if (this.#admit && !this.#admit(rel)) {
      this.skipped++;
      return false;
    }
    return this.#fits(rel);
  }

  #fits(rel: string): boolean {
    if (!this.full) return true;
    const last = this.#files[this.#files.length - 1] as FileMatches;
    if (comparePaths(rel, last.path) < 0) return true;
    this.#more = true;
    return false;
  }

  /** The most matches of one file worth keeping (later lines could never be shown). */
  get perFile(): number {
    return this.#max;
  }

  /** Notes that a file had more matching lines than `perFile` (they were not collected). */
  markMore(): void {
    this.#more = true;
  }

  offer(file: FileMatches): void {
    if (file.matches.length === 0) return;
    if (!this.wants(file.path)) return;
    const matches = file.matches.length > this.#max ? file.matches.slice(0, this.#max) : file.matches;
    if (matches !== file.matches) this.#more = true;
    let lo = 0;
    let hi = this.#files.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (comparePaths((this.#files[mid] as FileMatches).path, file.path) < 0) lo = mid + 1;
      else hi = mid;
    }
    this.#files.splice(lo, 0, { path: file.path, matches });
    this.#total += matches.length;
    // Drop files from the end while the rest still reach the cap without them.
    while (this.#files.length > 1) {
      const last = this.#files[this.#files.length - 1] as FileMatches;
      if (this.#total - last.matches.length < this.#max) break;
      this.#files.pop();
      this.#total -= last.matches.length;
      this.#more = true;
    }
  }

  result(): EngineResult {
    return { files: [...this.#files], stoppedEarly: this.#more };
  }
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
    // Both engines hand lines over in order; sorting a copy of 640,000 of them cost more than checking.
    const inOrder = file.matches.every((m, i, all) => i === 0 || (all[i - 1] as LineMatch).line <= m.line);
    for (const m of inOrder ? file.matches : [...file.matches].sort((a, b) => a.line - b.line)) {
      const text = cutLine(m.text);
      if (matchCount >= maxMatches || chars + text.length > maxChars) {
        capped = true;
        if (kept.length) files.push({ path: file.path, matches: kept });
        break outer;
      }
      kept.push(text === m.text ? m : { line: m.line, text });
      matchCount += 1;
      chars += text.length;
    }
    files.push({ path: file.path, matches: kept });
  }
  return { files, matchCount, capped };
}
