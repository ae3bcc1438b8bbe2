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

const OPERATORS = new Set([..."+-*/%<>=&|!^~?:."].map((c) => c.charCodeAt(0)));

/** Letters, digits, `_ $ @ #`, and anything beyond ASCII (identifiers in other scripts). */
function isWord(code: number): boolean {
  return (
    (code >= 48 && code <= 57) ||
    (code >= 65 && code <= 90) ||
    (code >= 97 && code <= 122) ||
    code === 95 ||
    code === 36 ||
    code === 64 ||
    code === 35 ||
    code > 127
  );
}

function needsSpace(before: number, after: number): boolean {
  if (isWord(before) && isWord(after)) return true;
  return OPERATORS.has(before) && OPERATORS.has(after);
}

function isSpace(code: number): boolean {
  return (
    code === 32 || code === 9 || code === 10 || code === 13 || code === 11 || code === 12 || code === 0xa0
  );
}

const utf16 = new TextDecoder("utf-16le");

export function normalForm(source: string): NormalForm {
  // Typed buffers: this runs over whole files.
  const codes = new Uint16Array(source.length);
  const map = new Int32Array(source.length);
  let n = 0;
  const lineStarts: NormalForm["lineStarts"] = [];
  let quote = 0;
  let escaped = false;
  let pendingSpace = false;
  let atLineStart = true;
  let previousCode = -1;
  let line = 0;
  let lineOffset = 0;
  for (let i = 0; i < source.length; i++) {
    const code = source.charCodeAt(i);
    if (code === 10) {
      // A string that did not close on its line is treated as closed: the normal form must not let
      // one stray apostrophe in a comment decide how the rest of the file is read.
      quote = 0;
      escaped = false;
      pendingSpace = true;
      atLineStart = true;
      line++;
      lineOffset = i + 1;
      continue;
    }
    if (quote) {
      codes[n] = code;
      map[n++] = i;
      previousCode = code;
      if (escaped) escaped = false;
      else if (code === 92) escaped = true;
      else if (code === quote) quote = 0;
      continue;
    }
    if (isSpace(code)) {
      pendingSpace = true;
      continue;
    }
    if (pendingSpace && previousCode >= 0 && needsSpace(previousCode, code)) {
      codes[n] = 32;
      map[n++] = i;
    }
    pendingSpace = false;
    if (atLineStart) {
      lineStarts.push({ normIndex: n, line, indent: source.slice(lineOffset, i) });
      atLineStart = false;
    }
    codes[n] = code;
    map[n++] = i;
    previousCode = code;
    if (code === 34 || code === 39 || code === 96) quote = code;
  }
  const norm = utf16.decode(new Uint8Array(codes.buffer, 0, n * 2));
  return { norm, map: map.subarray(0, n), lineStarts };
}
