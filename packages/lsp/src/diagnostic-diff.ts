import type { Diagnostic } from "vscode-languageserver-protocol";

/** Lines as a language server counts them: `\n`, `\r\n` and `\r` each end one. */
export function linesOf(text: string): string[] {
  return text.split(/\r\n|\r|\n/);
}

/**
 * How many lines the two texts share at their start (`head`) and, after those, at their end
 * (`tail`): everything between is what the write changed.
 */
export function unchangedEnds(
  before: readonly string[],
  after: readonly string[],
): { head: number; tail: number } {
  const most = Math.min(before.length, after.length);
  let head = 0;
  while (head < most && before[head] === after[head]) head++;
  let tail = 0;
  while (tail < most - head && before[before.length - 1 - tail] === after[after.length - 1 - tail]) tail++;
  return { head, tail };
}

function problemKey(d: Diagnostic): string {
  const message = typeof d.message === "string" ? d.message : String(d.message);
  return JSON.stringify([d.severity ?? 1, d.code ?? null, d.source ?? null, message]);
}

/**
 * The key of a diagnostic outside the changed lines: the problem and its place, with lines below the
 * change moved by `shift`; undefined when the diagnostic touches the changed lines.
 */
function placedKey(d: Diagnostic, head: number, tailStart: number, shift: number): string | undefined {
  const { start, end } = d.range;
  let at: [number, number, number, number];
  if (end.line < head) at = [start.line, start.character, end.line, end.character];
  else if (start.line >= tailStart)
    at = [start.line + shift, start.character, end.line + shift, end.character];
  else return undefined;
  return `${problemKey(d)}@${at.join(":")}`;
}

/** Takes one `key` from a multiset; false when none is left. */
function take(counts: Map<string, number>, key: string): boolean {
  const n = counts.get(key) ?? 0;
  if (n === 0) return false;
  counts.set(key, n - 1);
  return true;
}

function add(counts: Map<string, number>, key: string): void {
  counts.set(key, (counts.get(key) ?? 0) + 1);
}

/**
 * The diagnostics of `afterText` that were not there in `beforeText`. Outside the changed lines a
 * problem is the same when its message, code, source and severity match and its range is where the
 * earlier one's lands once the lines the write added or removed are counted (a problem below the
 * change has moved, not appeared). On the changed lines places mean nothing: a problem there is new
 * only when no problem with the same message, code, source and severity was on the lines it replaced.
 */
export function newDiagnostics(
  beforeText: string,
  afterText: string,
  before: readonly Diagnostic[],
  after: readonly Diagnostic[],
): Diagnostic[] {
  const old = linesOf(beforeText);
  const next = linesOf(afterText);
  const { head, tail } = unchangedEnds(old, next);
  const shift = next.length - old.length;
  const placed = new Map<string, number>();
  const changed = new Map<string, number>();
  for (const d of before) {
    const key = placedKey(d, head, old.length - tail, shift);
    if (key === undefined) add(changed, problemKey(d));
    else add(placed, key);
  }
  return after.filter((d) => {
    const key = placedKey(d, head, next.length - tail, 0);
    return key === undefined ? !take(changed, problemKey(d)) : !take(placed, key);
  });
}
