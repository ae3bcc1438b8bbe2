/**
 * The formatter-tolerant normal form: what is left of code when indentation, blank lines, line
 * wrapping and spaces around punctuation are taken away — and nothing else. Whitespace is kept (as one
 * space) where removing it could join two tokens into another one (`a b` vs `ab`, `< -` vs `<-`), and
 * kept exactly inside quoted strings, since a formatter never touches those. Line breaks are kept
 * where they carry meaning: inside a string (a template literal or a triple-quoted string spans lines
 * as written; any other quote left open at the end of its line keeps that break and closes there), and
 * at the end of a line comment (`//`, or a `#` that starts a line or follows whitespace: a comment or a
 * preprocessor line), where joining the next line would put code inside the comment. Quotes do not
 * open inside `//` and `/* … *\/` comments (prose there has stray apostrophes and backticks); after a
 * `#` they open but close at the end of the line, since `#` also starts JavaScript's private names.
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

const BACKTICK = 96;
const SLASH = 47;
const STAR = 42;
const HASH = 35;

export function normalForm(source: string): NormalForm {
  // Typed buffers: this runs over whole files.
  const codes = new Uint16Array(source.length);
  const map = new Int32Array(source.length);
  let n = 0;
  const lineStarts: NormalForm["lineStarts"] = [];
  let quote = 0;
  /** The open string spans lines: a template literal or a triple-quoted string opened in code. */
  let spans = false;
  /** The open string is triple-quoted (three `"` or three `'`): only the same three end it. */
  let triple = false;
  let escaped = false;
  /** In a line comment: `//` (no quotes open) or `#` (quotes open, and close by the line's end). */
  let lineComment: 0 | typeof SLASH | typeof HASH = 0;
  let blockComment = false;
  let pendingSpace = false;
  let atLineStart = true;
  let previousCode = -1;
  let line = 0;
  let lineOffset = 0;
  const keep = (code: number, at: number) => {
    codes[n] = code;
    map[n++] = at;
    previousCode = code;
  };
  for (let i = 0; i < source.length; i++) {
    const code = source.charCodeAt(i);
    if (code === 10) {
      // A line break inside a string, or one that ends a line comment, is kept as it is.
      if (quote || lineComment) keep(10, i);
      // A string that does not span lines and did not close on its line is treated as closed, so
      // that one stray apostrophe cannot decide how the rest of the file is read.
      if (quote && !spans) quote = 0;
      lineComment = 0;
      escaped = false;
      pendingSpace = !quote;
      atLineStart = true;
      line++;
      lineOffset = i + 1;
      continue;
    }
    if (quote) {
      // A line that starts inside a string has no indentation to pair: it is no line start of code.
      atLineStart = false;
      keep(code, i);
      if (escaped) escaped = false;
      else if (code === 92) escaped = true;
      else if (code === quote && !triple) quote = 0;
      else if (code === quote && source.charCodeAt(i + 1) === quote && source.charCodeAt(i + 2) === quote) {
        keep(code, ++i);
        keep(code, ++i);
        quote = 0;
      }
      continue;
    }
    if (isSpace(code)) {
      pendingSpace = true;
      continue;
    }
    const next = source.charCodeAt(i + 1);
    if (blockComment) {
      if (code === STAR && next === SLASH) blockComment = false;
    } else if (!lineComment) {
      if (code === SLASH && next === SLASH) lineComment = SLASH;
      else if (code === SLASH && next === STAR) blockComment = true;
      else if (code === HASH && (atLineStart || pendingSpace)) lineComment = HASH;
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
    keep(code, i);
    if (blockComment || lineComment === SLASH || !(code === 34 || code === 39 || code === BACKTICK)) continue;
    quote = code;
    triple = code !== BACKTICK && next === code && source.charCodeAt(i + 2) === code;
    spans = !lineComment && (code === BACKTICK || triple);
    if (triple) {
      keep(code, ++i);
      keep(code, ++i);
    }
  }
  const norm = utf16.decode(new Uint8Array(codes.buffer, 0, n * 2));
  return { norm, map: map.subarray(0, n), lineStarts };
}
