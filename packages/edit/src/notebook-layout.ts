/**
 * Where each cell of a notebook sits in its text, so an edit rewrites only the cell it changes: every
 * other byte of the file (other cells' metadata and outputs, number formats, escapes, key order, the
 * final newline) stays exactly as it was, whatever wrote it. Runs on text JSON.parse has already
 * accepted, so it only has to find boundaries, not to judge syntax.
 */

export interface CellLayout {
  /** `[start, end)` of each cell's JSON value, in order. */
  spans: Array<[number, number]>;
  /** Just after the `[` of the cells array, and at its `]`. */
  open: number;
  close: number;
  /** The file's indentation unit: `" "` as Jupyter writes (indent=1), `""` for compact JSON. */
  unit: string;
  /** The file's line ending: `\r\n` when its first line ends so (Jupyter on Windows), else `\n`. */
  newline: "\n" | "\r\n";
}

const WHITESPACE = new Set([" ", "\t", "\n", "\r"]);

function skipSpace(text: string, i: number): number {
  while (i < text.length && WHITESPACE.has(text[i] as string)) i++;
  return i;
}

/** `i` at an opening quote: just past the closing one. */
function skipString(text: string, i: number): number {
  for (let j = i + 1; j < text.length; j++) {
    const c = text[j];
    if (c === "\\") j++;
    else if (c === '"') return j + 1;
  }
  return text.length;
}

/** `i` at a value: just past it. */
function skipValue(text: string, i: number): number {
  const c = text[i];
  if (c === '"') return skipString(text, i);
  if (c === "{" || c === "[") {
    let depth = 0;
    for (let j = i; j < text.length; j++) {
      const d = text[j];
      if (d === '"') j = skipString(text, j) - 1;
      else if (d === "{" || d === "[") depth++;
      else if (d === "}" || d === "]") {
        depth--;
        if (depth === 0) return j + 1;
      }
    }
    return text.length;
  }
  let j = i;
  while (j < text.length && !WHITESPACE.has(text[j] as string) && !",}]".includes(text[j] as string)) j++;
  return j;
}

/** The cells' layout in a notebook's text (the last `cells` key, as JSON.parse keeps the last). */
export function cellLayout(text: string): CellLayout {
  let i = skipSpace(text, text.charCodeAt(0) === 0xfeff ? 1 : 0);
  const top = i + 1;
  i = skipSpace(text, top);
  const lead = text.slice(top, i);
  const newline = lead.lastIndexOf("\n");
  const unit = newline === -1 ? "" : lead.slice(newline + 1);
  const eol = newline > 0 && lead[newline - 1] === "\r" ? "\r\n" : "\n";
  let layout: CellLayout | undefined;
  while (i < text.length && text[i] !== "}") {
    const keyEnd = skipString(text, i);
    const key = JSON.parse(text.slice(i, keyEnd)) as string;
    i = skipSpace(text, skipSpace(text, keyEnd) + 1);
    if (key === "cells" && text[i] === "[") {
      const open = i + 1;
      const spans: Array<[number, number]> = [];
      let j = skipSpace(text, open);
      while (j < text.length && text[j] !== "]") {
        const end = skipValue(text, j);
        spans.push([j, end]);
        j = skipSpace(text, end);
        if (text[j] === ",") j = skipSpace(text, j + 1);
      }
      layout = { spans, open, close: j, unit, newline: eol };
      i = j + 1;
    } else i = skipValue(text, i);
    i = skipSpace(text, i);
    if (text[i] === ",") i = skipSpace(text, i + 1);
  }
  if (!layout) throw new Error("no cells array in the notebook text");
  return layout;
}

/** A cell as the file would hold it at the cells' depth (two indentation units), in the file's style. */
export function serializeCell(cell: Record<string, unknown>, layout: CellLayout): string {
  if (layout.unit === "") return JSON.stringify(cell);
  const indent = layout.unit.repeat(2);
  // JSON.stringify escapes newlines inside strings: every one it writes is between values.
  return JSON.stringify(cell, null, layout.unit).replace(/\n/g, `${layout.newline}${indent}`);
}

/** What separates two cells in this file (its own, when it has two), else what Jupyter would write. */
function separator(text: string, layout: CellLayout): string {
  const [a, b] = layout.spans;
  if (a && b) return text.slice(a[1], b[0]);
  return layout.unit === "" ? "," : `,${layout.newline}${layout.unit.repeat(2)}`;
}

/** The text with cell `at` (0-based) replaced by `cell`. */
export function replaceCell(text: string, layout: CellLayout, at: number, cell: string): string {
  const [start, end] = layout.spans[at] as [number, number];
  return text.slice(0, start) + cell + text.slice(end);
}

/** The text with `cell` inserted so that it becomes cell `at` (0-based; `spans.length` appends). */
export function insertCell(text: string, layout: CellLayout, at: number, cell: string): string {
  const { spans, unit, newline } = layout;
  if (spans.length === 0) {
    const inside = unit === "" ? cell : `${newline}${unit.repeat(2)}${cell}${newline}${unit}`;
    return text.slice(0, layout.open) + inside + text.slice(layout.close);
  }
  const sep = separator(text, layout);
  if (at === 0) {
    const first = (spans[0] as [number, number])[0];
    return text.slice(0, first) + cell + sep + text.slice(first);
  }
  const after = (spans[at - 1] as [number, number])[1];
  return text.slice(0, after) + sep + cell + text.slice(after);
}

/** The text without cell `at` (0-based) and the separator that went with it. */
export function deleteCell(text: string, layout: CellLayout, at: number): string {
  const { spans } = layout;
  if (spans.length === 1) return text.slice(0, layout.open) + text.slice(layout.close);
  if (at === 0)
    return text.slice(0, (spans[0] as [number, number])[0]) + text.slice((spans[1] as [number, number])[0]);
  return (
    text.slice(0, (spans[at - 1] as [number, number])[1]) + text.slice((spans[at] as [number, number])[1])
  );
}
