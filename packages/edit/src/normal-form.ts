/**
 * The formatter-tolerant normal form: what is left of code when indentation, blank lines, line
 * wrapping and spaces around punctuation are taken away — and nothing else. Whitespace is kept (as one
 * space) where removing it could join two tokens into another one (`a b` vs `ab`, `< -` vs `<-`), and
 * kept exactly inside quoted strings on a line, since a formatter never touches those.
 */
export type NormalForm = {
  norm: string;
  /** Offset in the source of each character of `norm`. */
  map: Int32Array;
  /** For each source line, the index in `norm` of its first character and that line's indent width. */
  lineStarts: Array<{ normIndex: number; line: number; indent: string }>;
};

const WORD = /[\p{L}\p{N}_$@#]/u;
const OPERATOR = /[+\-*/%<>=&|!^~?:.]/;

function needsSpace(before: string, after: string): boolean {
  if (WORD.test(before) && WORD.test(after)) return true;
  return OPERATOR.test(before) && OPERATOR.test(after);
}

function isSpace(code: number): boolean {
  return (
    code === 32 || code === 9 || code === 10 || code === 13 || code === 11 || code === 12 || code === 0xa0
  );
}

export function normalForm(source: string): NormalForm {
  const out: string[] = [];
  const map: number[] = [];
  const lineStarts: NormalForm["lineStarts"] = [];
  let quote = "";
  let escaped = false;
  let pendingSpace = false;
  let atLineStart = true;
  let line = 0;
  let lineOffset = 0;
  for (let i = 0; i < source.length; i++) {
    const ch = source[i] as string;
    const code = source.charCodeAt(i);
    if (ch === "\n") {
      // A string that did not close on its line is treated as closed: the normal form must not let
      // one stray apostrophe in a comment decide how the rest of the file is read.
      quote = "";
      escaped = false;
      pendingSpace = true;
      atLineStart = true;
      line++;
      lineOffset = i + 1;
      continue;
    }
    if (quote) {
      out.push(ch);
      map.push(i);
      if (escaped) escaped = false;
      else if (ch === "\\") escaped = true;
      else if (ch === quote) quote = "";
      continue;
    }
    if (isSpace(code)) {
      pendingSpace = true;
      continue;
    }
    const previous = out[out.length - 1];
    if (pendingSpace && previous !== undefined && needsSpace(previous, ch)) {
      out.push(" ");
      map.push(i);
    }
    pendingSpace = false;
    if (atLineStart) {
      lineStarts.push({ normIndex: out.length, line, indent: source.slice(lineOffset, i) });
      atLineStart = false;
    }
    out.push(ch);
    map.push(i);
    if (ch === '"' || ch === "'" || ch === "`") quote = ch;
  }
  return { norm: out.join(""), map: Int32Array.from(map), lineStarts };
}
