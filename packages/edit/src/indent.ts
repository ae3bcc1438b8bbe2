/** Indentation arithmetic for re-indenting a replacement to the depth the file has at the match. */

const TAB_COLUMNS = 4;

export function leadingWhitespace(line: string): string {
  const m = /^[ \t]*/.exec(line);
  return m ? m[0] : "";
}

export function isBlank(line: string): boolean {
  return line.trim() === "";
}

/** Visual width of an indentation string, a tab counting as four columns. */
export function columns(indent: string): number {
  let n = 0;
  for (const ch of indent) n += ch === "\t" ? TAB_COLUMNS : 1;
  return n;
}

/**
 * The step between indentation levels in a set of lines: tabs, or the most frequent increase in
 * leading spaces between consecutive lines. Increases of one column are skipped: they are usually
 * the ` * ` of a doc comment, not a level.
 */
export function indentUnit(lines: readonly string[]): { tabs: boolean; unit: number } | undefined {
  const counts = new Map<number, number>();
  let previous: number | undefined;
  let tabs = 0;
  let spaces = 0;
  for (const line of lines) {
    if (isBlank(line)) continue;
    const indent = leadingWhitespace(line);
    if (indent.startsWith("\t")) tabs++;
    else if (indent.startsWith(" ")) spaces++;
    const cols = columns(indent);
    if (previous !== undefined && cols - previous > 1)
      counts.set(cols - previous, (counts.get(cols - previous) ?? 0) + 1);
    previous = cols;
  }
  if (tabs > 0 && tabs >= spaces) return { tabs: true, unit: TAB_COLUMNS };
  let best: number | undefined;
  let bestCount = 0;
  for (const [step, count] of counts) {
    if (count > bestCount || (count === bestCount && best !== undefined && step < best)) {
      best = step;
      bestCount = count;
    }
  }
  return best === undefined ? undefined : { tabs: false, unit: best };
}

function render(cols: number, tabs: boolean): string {
  const n = Math.max(0, cols);
  if (!tabs) return " ".repeat(n);
  return "\t".repeat(Math.floor(n / TAB_COLUMNS)) + " ".repeat(n % TAB_COLUMNS);
}

/**
 * Whether two blocks nest the same way: lines indented equally in one are equal in the other, and a
 * deeper line in one is deeper in the other. Units may differ (tabs vs spaces, 2 vs 4); structure may not,
 * because in indentation-sensitive languages a changed structure is changed meaning.
 */
export function sameNesting(pairs: ReadonlyArray<readonly [number, number]>): boolean {
  const sorted = [...pairs].sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  for (let i = 1; i < sorted.length; i++) {
    const [ps, pf] = sorted[i - 1] as readonly [number, number];
    const [s, f] = sorted[i] as readonly [number, number];
    if (s === ps ? f !== pf : f <= pf) return false;
  }
  return true;
}

/**
 * Whether every depth maps by one unit and offset (columns in the file = a × columns in the search + b),
 * for the formatter-tolerant stages: there the lines may break anywhere, so a search text that lost a
 * line (a closing brace) could otherwise borrow the next one at another depth and still nest the same
 * way. (The indentation stage compares line for line and keeps alignment within a level, as a ` * ` of
 * a comment under tabs, which no single scale maps.)
 */
export function sameIndentScale(pairs: ReadonlyArray<readonly [number, number]>): boolean {
  const sorted = [...pairs].sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  if (sorted.length < 3) return true;
  const [s0, f0] = sorted[0] as readonly [number, number];
  const [s1, f1] = sorted[sorted.length - 1] as readonly [number, number];
  // Every depth on the line through the shallowest and the deepest.
  return sorted.every(([s, f]) => (f - f0) * (s1 - s0) === (f1 - f0) * (s - s0));
}

export type IndentContext = {
  /** (indent in the search text, indent of the file line it matched), first non-blank line first. */
  pairs: ReadonlyArray<readonly [string, string]>;
  /** Lines of the search and replacement, to learn the model's indentation unit. */
  modelLines: readonly string[];
  /** Lines of the file around the match (or the whole file), to learn the file's unit and style. */
  fileLines: readonly string[];
};

/**
 * Re-indents replacement lines written at the search text's depth to the depth the file has. An
 * indentation seen in the search maps to the file indentation it matched; any other moves by whole
 * levels relative to the first line, converted between the model's unit and the file's.
 */
export function reindent(lines: readonly string[], context: IndentContext): string[] {
  const base = context.pairs[0];
  if (!base) return [...lines];
  const direct = new Map<string, string>();
  for (const [s, f] of context.pairs) if (!direct.has(s)) direct.set(s, f);
  const model = indentUnit(context.modelLines);
  const file = indentUnit(context.fileLines);
  const fileTabs = file?.tabs ?? base[1].startsWith("\t");
  const modelUnit = model?.unit ?? file?.unit ?? TAB_COLUMNS;
  const fileUnit = file?.unit ?? modelUnit;
  const baseModel = columns(base[0]);
  const baseFile = columns(base[1]);
  return lines.map((line) => {
    if (isBlank(line)) return "";
    const indent = leadingWhitespace(line);
    const rest = line.slice(indent.length);
    const mapped = direct.get(indent);
    if (mapped !== undefined) return mapped + rest;
    const delta = columns(indent) - baseModel;
    const levels = Math.trunc(delta / modelUnit);
    const remainder = delta - levels * modelUnit;
    return render(baseFile + levels * fileUnit + remainder, fileTabs) + rest;
  });
}
