/**
 * One escape for every name, line and command that reaches a model or a person as text. A file
 * name or a command is data: it must never add a line, forge a header, rewrite a terminal line or
 * reorder what is shown. Characters that could do so are written as backslash escapes:
 *
 * - `\n`, `\r`, `\t` for newline, carriage return and tab;
 * - `\xHH` (two upper-case hex digits) for other C0 controls, DEL and C1 controls;
 * - `\u{H…}` for format characters (bidi controls such as U+202E, zero-width characters, BOM,
 *   tag characters), the line and paragraph separators U+2028/U+2029 and lone surrogates.
 *
 * A backslash already in the text is doubled only where it would otherwise read as an escape:
 * when the next character is `\`, `n`, `r`, `t`, `x`, `u` or a character that is itself escaped.
 * So `back\slash` prints unchanged, `a\nb` (backslash, n) prints as `a\\nb`, and `unescapeText`
 * gives back exactly the original text.
 */

/**
 * Characters never printed raw: controls, format characters, line/paragraph separators, lone
 * surrogates. Made on first use: a Unicode property class is costly for V8 to build, which a run
 * that prints no text (a read as JSON) need not pay.
 */
let unsafe: RegExp | undefined;
const UNSAFE = (): RegExp => {
  unsafe ??= /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u;
  return unsafe;
};

/** Letters that follow a backslash in an escape. */
const ESCAPE_LETTERS = new Set(["\\", "n", "r", "t", "x", "u"]);

const NAMED: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

export type EscapeOptions = {
  /** Characters left raw although they would be escaped, e.g. `"\t"` for source lines. */
  keep?: string;
  /**
   * Double backslashes that would read as an escape (default true), which makes the text
   * reversible with `unescapeText`. Off for display-only text that must show backslashes as typed
   * (source lines, regexes); such text is not read back.
   */
  reversible?: boolean;
};

/** The escape of one code point: `\n`, `\xHH` or `\u{H…}`. */
export function escapeCodePoint(ch: string): string {
  const named = NAMED[ch];
  if (named) return named;
  const cp = ch.codePointAt(0) ?? 0;
  const hex = cp.toString(16).toUpperCase();
  return cp < 0x100 ? `\\x${hex.padStart(2, "0")}` : `\\u{${hex}}`;
}

/** Whether `ch` (one code point) is written as an escape. */
export function isUnsafeChar(ch: string): boolean {
  return UNSAFE().test(ch);
}

/**
 * Escapes `chars` (code points); `force(i)` escapes position `i` even when it is printable, which
 * lets name rules make leading spaces and the like visible without breaking reversibility.
 */
function escapeCodePoints(chars: string[], options: EscapeOptions, force?: (i: number) => boolean): string {
  const keep = options.keep ?? "";
  const reversible = options.reversible !== false;
  const escaped = (i: number): boolean => {
    const ch = chars[i];
    if (ch === undefined) return false;
    if (force?.(i)) return true;
    return UNSAFE().test(ch) && !keep.includes(ch);
  };
  let out = "";
  for (let i = 0; i < chars.length; i++) {
    const ch = chars[i] as string;
    if (escaped(i)) out += escapeCodePoint(ch);
    else if (ch === "\\" && reversible) {
      const next = chars[i + 1];
      out += next !== undefined && (ESCAPE_LETTERS.has(next) || escaped(i + 1)) ? "\\\\" : "\\";
    } else out += ch;
  }
  return out;
}

/** Every character `UNSAFE` matches, for the precheck that skips those the caller keeps (made on first use). */
let unsafeAll: RegExp | undefined;

/**
 * Whether `escapeText` would change `text`; false only when the slow path would return it as it is.
 * One regex test rather than a scan: V8 runs the class test faster than a charCode loop in JS.
 */
function needsEscape(text: string, keep: string, reversible: boolean): boolean {
  // A backslash may need doubling: left to the slow path, which knows what follows it.
  if (reversible && text.includes("\\")) return true;
  if (!UNSAFE().test(text)) return false;
  if (!keep) return true;
  // Tabs in source lines are kept: a line whose only unsafe characters are kept is unchanged.
  unsafeAll ??= new RegExp(UNSAFE().source, "gu");
  unsafeAll.lastIndex = 0;
  for (let m = unsafeAll.exec(text); m; m = unsafeAll.exec(text)) {
    if (!keep.includes(m[0])) return true;
  }
  return false;
}

/** The escape done character by character, with no precheck; `escapeText` is this when text needs it. */
export function escapeTextSlow(text: string, options: EscapeOptions = {}): string {
  return escapeCodePoints(Array.from(text), options);
}

/** Escapes control, format and separator characters (see the module comment). */
export function escapeText(text: string, options: EscapeOptions = {}): string {
  // Fast path: most names and lines hold nothing to escape, and are returned as they are.
  if (!needsEscape(text, options.keep ?? "", options.reversible !== false)) return text;
  return escapeCodePoints(Array.from(text), options);
}

const WHITESPACE = /\s/u;
const EDGE_SPACE = /^\s|\s$/u;
/** The parser's note suffix, `name (image)`: a name ending like that has that space escaped. */
const NOTE_SUFFIX = / \([^()]*\)$/;

/**
 * One path segment as the text format prints it: `escapeText`, plus `\x20`-style escapes for what
 * would change how a line parses — leading or trailing whitespace (indentation is structure), a
 * leading `# ` (a header line) and a trailing ` (…)` (a note). Reversible with `unescapeText`.
 */
export function escapeName(name: string): string {
  if (!EDGE_SPACE.test(name) && !NOTE_SUFFIX.test(name) && !name.startsWith("# ")) return escapeText(name);
  const chars = Array.from(name);
  let lead = 0;
  while (lead < chars.length && WHITESPACE.test(chars[lead] as string)) lead++;
  let trail = chars.length;
  while (trail > lead && WHITESPACE.test(chars[trail - 1] as string)) trail--;
  const note = NOTE_SUFFIX.exec(name);
  const noteSpace = note ? Array.from(name.slice(0, note.index)).length : -1;
  const hash = chars[0] === "#" && chars[1] === " ";
  return escapeCodePoints(chars, {}, (i) => i < lead || i >= trail || i === noteSpace || (hash && i === 0));
}

/**
 * `/`-separated path with every segment escaped by `escapeName`. On a line of its own the whole path
 * could also end in a note that spans segments (`a (b/c)`): that note's space is written `\x20`, and a
 * lone backslash right before it (escapeText leaves one before a space) is then written `\\`.
 */
export function escapePath(path: string): string {
  const escaped = path.split("/").map(escapeName).join("/");
  const note = NOTE_SUFFIX.exec(escaped);
  if (!note) return escaped;
  const head = escaped.slice(0, note.index);
  return `${head.endsWith("\\") ? `${head}\\` : head}\\x20${escaped.slice(note.index + 1)}`;
}

/** The escapes escapeText writes: `\\`, `\n`, `\r`, `\t`, `\xHH`, `\u{H…}`. */
const TEXT_ESCAPE = /\\(\\|n|r|t|x[0-9A-Fa-f]{2}|u\{[0-9A-Fa-f]{1,6}\})/g;
/** One level of JSON/JavaScript string-literal escaping: `\\`, `\n`, `\r`, `\t`, `\"`, `\'`, `\/`, `\uHHHH`. */
const STRING_ESCAPE = /\\(\\|n|r|t|u[0-9A-Fa-f]{4}|["'/])/g;

export type UnescapeOptions = {
  /**
   * Which escapes to read. `text` (the default): those escapeText and escapeName write, so that
   * `unescapeText(escapeText(s)) === s`. `string`: one level of JSON/JavaScript string escaping, for
   * text a model sent still escaped (`\"`, `\'` and `\/` too, which `text` must leave alone: escapeText
   * writes a backslash before them as it is).
   */
  syntax?: "text" | "string";
};

/**
 * The one unescaper: the inverse of `escapeText`/`escapeName`, or with `{ syntax: "string" }` of a
 * string literal's escaping. A backslash that starts no escape of the syntax stays as it is.
 */
export function unescapeText(text: string, options: UnescapeOptions = {}): string {
  if (!text.includes("\\")) return text;
  return text.replace(options.syntax === "string" ? STRING_ESCAPE : TEXT_ESCAPE, (whole, body: string) => {
    switch (body[0]) {
      case "\\":
        return "\\";
      case "n":
        return "\n";
      case "r":
        return "\r";
      case "t":
        return "\t";
      case "x":
        return String.fromCharCode(Number.parseInt(body.slice(1), 16));
      case "u": {
        if (body[1] !== "{") return String.fromCharCode(Number.parseInt(body.slice(1), 16));
        const cp = Number.parseInt(body.slice(2, -1), 16);
        return cp <= 0x10ffff ? String.fromCodePoint(cp) : whole;
      }
      default:
        // A quote or a slash (string syntax only).
        return body;
    }
  });
}

/** Runs of this many spaces or more are shown as `␠×N` in a command a person approves. */
export const SPACE_RUN_MIN = 8;
const SPACE_MARK = "\u2420";

export type VisibleText = {
  /** The text as shown: raw when nothing needed escaping, else escaped. */
  text: string;
  /** Whether anything was escaped (escapes are then read as described in the module comment). */
  escaped: boolean;
};

/**
 * A command (or path) as a person approving it must see it: every character that runs, none
 * hidden. Text without control/format characters or long space runs is shown as it is. Otherwise
 * it is escaped reversibly, and each run of `SPACE_RUN_MIN`+ spaces becomes `␠×N` (a literal `␠`
 * is then escaped too), so padding cannot push the rest of a command out of sight.
 * `{ reversible: false }` leaves backslashes as they are, for text that is already an encoding
 * (JSON) and would only read worse with them doubled.
 */
export function visibleText(text: string, options: Pick<EscapeOptions, "reversible"> = {}): VisibleText {
  const run = new RegExp(` {${SPACE_RUN_MIN},}`);
  if (!UNSAFE().test(text) && !run.test(text)) return { text, escaped: false };
  const chars = Array.from(text);
  const parts: string[] = [];
  let i = 0;
  while (i < chars.length) {
    let j = i;
    while (j < chars.length && chars[j] === " ") j++;
    if (j - i >= SPACE_RUN_MIN) {
      parts.push(`${SPACE_MARK}×${j - i}`);
      i = j;
      continue;
    }
    let k = j;
    // The next stretch up to a long space run.
    while (k < chars.length) {
      if (chars[k] === " ") {
        let e = k;
        while (e < chars.length && chars[e] === " ") e++;
        if (e - k >= SPACE_RUN_MIN) break;
        k = e;
      } else k++;
    }
    const piece = chars.slice(i, k);
    parts.push(escapeCodePoints(piece, options, (n) => piece[n] === SPACE_MARK));
    i = k;
  }
  return { text: parts.join(""), escaped: true };
}

/** A note for people reading escaped text. */
export const ESCAPE_LEGEND =
  "shown escaped: \\n \\r \\t \\xHH \\u{…} are control or invisible characters, \\\\ a backslash, ␠×N N spaces";

export type Elided = { head: string; tail: string; hidden: number };

/** An escape or `␠×N` token starting at `i`, which a cut must not split. */
const TOKEN = /\\(?:u\{[0-9A-F]+\}|x[0-9A-F]{2}|.)|␠×\d+/uy;

/** Where a cut at `cut` may fall: the start of the token spanning it, or `cut` itself. */
function safeCut(text: string, cut: number): number {
  // Scanned from the start: only a scan from the left knows which backslashes pair up. Steps are
  // whole code points, so no cut splits a surrogate pair either.
  for (let i = 0; i < cut; ) {
    TOKEN.lastIndex = i;
    const m = TOKEN.exec(text);
    const end = m ? i + m[0].length : i + ((text.codePointAt(i) ?? 0) > 0xffff ? 2 : 1);
    if (end > cut) return i;
    i = end;
  }
  return cut;
}

/**
 * The head and tail of `text` when it is longer than `max` characters (else all of it as `head`),
 * cut only between tokens, with the number of characters left out; the caller states that number
 * and offers the rest.
 */
export function elideMiddle(text: string, max: number): Elided {
  if (text.length <= max) return { head: text, tail: "", hidden: 0 };
  const headEnd = safeCut(text, Math.ceil(max / 2));
  const tailStart = safeCut(text, text.length - Math.floor(max / 2));
  return { head: text.slice(0, headEnd), tail: text.slice(tailStart), hidden: tailStart - headEnd };
}
