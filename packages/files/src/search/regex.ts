import { ToolbeltError } from "@toolbelt/core";
import type { QuerySpec } from "./match-program.js";

/** A query compiled for the JS engine: one regex for a single line, one for scanning whole files. */
export type CompiledQuery = {
  line: RegExp;
  scan: RegExp;
  /** A string every match contains, searched in raw bytes before anything is decoded. */
  literal: Buffer | undefined;
  /** The same, as the search worker rebuilds it. */
  spec: QuerySpec;
};

const FLAG_GROUP = /^\(\?([imsx]+)\)/;

/**
 * Rewrites the few ripgrep (Rust regex) spellings that JS lacks but can express:
 * a leading inline flag group such as `(?i)`, `\A` and `\z`, and POSIX classes inside brackets.
 */
function translate(query: string): { source: string; ignoreCase: boolean } {
  let source = query;
  let ignoreCase = false;
  const flags = FLAG_GROUP.exec(source);
  if (flags) {
    if ((flags[1] as string).includes("x"))
      throw new ToolbeltError("EINVAL_INPUT", "the js search engine does not support the (?x) flag");
    ignoreCase = (flags[1] as string).includes("i");
    source = source.slice(flags[0].length);
  }
  const posix: Record<string, string> = {
    alpha: "A-Za-z",
    digit: "0-9",
    alnum: "A-Za-z0-9",
    upper: "A-Z",
    lower: "a-z",
    space: "\\t\\n\\v\\f\\r ",
    xdigit: "0-9A-Fa-f",
    word: "\\w",
    punct: "!-\\/:-@\\[-`{-~",
  };
  source = source.replace(/\[:(\w+):\]/g, (whole, name: string) => posix[name] ?? whole);
  source = source.replace(/(^|[^\\])((?:\\\\)*)\\A/g, "$1$2^").replace(/(^|[^\\])((?:\\\\)*)\\z/g, "$1$2$");
  return { source, ignoreCase };
}

const QUANTIFIER_START = new Set(["*", "?", "{", "+"]);
const ESCAPABLE = new Set([..."\\.^$*+?()[]{}|/-#&~ \"'`,:;<=>!@%"]);

/**
 * The longest run of literal characters the regex requires, or undefined when there is none
 * (a top-level alternation, or nothing but classes). Conservative: anything it does not fully
 * understand ends the run, so a found literal is always required by every match.
 */
export function requiredLiteral(source: string): string | undefined {
  let best = "";
  let run = "";
  const flush = () => {
    if (run.length > best.length) best = run;
    run = "";
  };
  let i = 0;
  while (i < source.length) {
    const ch = source[i] as string;
    if (ch === "|") return undefined;
    let literal: string | undefined;
    let width = 1;
    if (ch === "\\") {
      const next = source[i + 1];
      if (next !== undefined && ESCAPABLE.has(next)) literal = next;
      width = 2;
    } else if (ch === "[") {
      let j = i + 1;
      if (source[j] === "^") j++;
      if (source[j] === "]") j++;
      while (j < source.length && source[j] !== "]") j += source[j] === "\\" ? 2 : 1;
      width = j + 1 - i;
    } else if (ch === "(") {
      let depth = 0;
      let j = i;
      for (; j < source.length; j++) {
        const c = source[j];
        if (c === "\\") j++;
        else if (c === "[") {
          j++;
          while (j < source.length && source[j] !== "]") j += source[j] === "\\" ? 2 : 1;
        } else if (c === "(") depth++;
        else if (c === ")" && --depth === 0) break;
      }
      width = j + 1 - i;
    } else if (!".^$*+?{}()".includes(ch)) {
      literal = ch;
    }
    const after = source[i + width];
    if (literal !== undefined && after !== undefined && QUANTIFIER_START.has(after)) {
      if (after === "+") {
        run += literal;
        flush();
      } else flush();
      // Skip the quantifier (and a lazy/possessive suffix) so it is not read as a literal.
      let j = i + width;
      if (source[j] === "{") {
        while (j < source.length && source[j] !== "}") j++;
      }
      j++;
      if (source[j] === "?" || source[j] === "+") j++;
      i = j;
      continue;
    }
    if (literal !== undefined) run += literal;
    else {
      flush();
      if (after !== undefined && QUANTIFIER_START.has(after)) {
        let j = i + width;
        if (source[j] === "{") while (j < source.length && source[j] !== "}") j++;
        j++;
        if (source[j] === "?" || source[j] === "+") j++;
        i = j;
        continue;
      }
    }
    i += width;
  }
  flush();
  return best || undefined;
}

const ASCII_WORD = /^[A-Za-z0-9_]$/;

/** Rust's Unicode `\w`: letters, marks, decimal digits, connector punctuation, joiners. */
const WORD = "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}";

/**
 * Rewrites `\w \W \d \D \b \B` into their Unicode meaning (as in Rust regex, where `\w` matches
 * `é`); valid only with the `u` flag. `\W` inside a bracket class has no such spelling and stays ASCII.
 */
export function unicodeClasses(source: string): string {
  let out = "";
  let inClass = false;
  // The previous plain (unescaped, outside a class) character, or "" after anything else.
  let prev = "";
  for (let i = 0; i < source.length; i++) {
    const ch = source[i] as string;
    const last = prev;
    prev = "";
    if (ch === "\\") {
      const next = source[i + 1] ?? "";
      i++;
      if (inClass) {
        if (next === "w") out += WORD;
        else if (next === "d") out += "\\p{Nd}";
        else if (next === "D") out += "\\P{Nd}";
        else out += `\\${next}`;
        continue;
      }
      if (next === "w") out += `[${WORD}]`;
      else if (next === "W") out += `[^${WORD}]`;
      else if (next === "d") out += "\\p{Nd}";
      else if (next === "D") out += "\\P{Nd}";
      else if (next === "b") {
        // Next to a literal word character a boundary is one lookaround; the leading `(?=x)`
        // lets most positions fail on one comparison (a full boundary test per position made a
        // search of minified lines several times slower).
        const following = source[i + 1] ?? "";
        const optional = "?*{".includes(source[i + 2] || "+");
        if (ASCII_WORD.test(following) && !optional) out += `(?=${following})(?<![${WORD}])`;
        else if (ASCII_WORD.test(last)) out += `(?![${WORD}])`;
        else out += `(?:(?<=[${WORD}])(?![${WORD}])|(?<![${WORD}])(?=[${WORD}]))`;
      } else if (next === "B") out += `(?:(?<=[${WORD}])(?=[${WORD}])|(?<![${WORD}])(?![${WORD}]))`;
      else out += `\\${next}`;
      continue;
    }
    if (ch === "[" && !inClass) {
      inClass = true;
      out += ch;
      // A `]` right after `[` or `[^` is a literal member, not the end of the class.
      if (source[i + 1] === "^") out += source[++i];
      if (source[i + 1] === "]") out += `\\${source[++i]}`;
      continue;
    }
    if (ch === "]" && inClass) inClass = false;
    else if (!inClass) prev = ch;
    out += ch;
  }
  return out;
}

function build(source: string, flags: string): RegExp {
  try {
    return new RegExp(unicodeClasses(source), `${flags}u`);
  } catch {
    // Unicode mode rejects identity escapes such as `\-` that Rust regex accepts; fall back to
    // the pattern as written, where `\w`, `\d` and `\b` are ASCII-only.
    return new RegExp(source, flags);
  }
}

/** Compiles a search query for the JS engine; an invalid pattern is EINVAL_INPUT. */
export function compileQuery(query: string): CompiledQuery {
  const { source, ignoreCase } = translate(query);
  const i = ignoreCase ? "i" : "";
  let line: RegExp;
  let scan: RegExp;
  try {
    // `s`: a Rust `.` matches everything but `\n`, including `\r` (lines never contain `\n` here).
    line = build(source, `s${i}`);
    // No `s` here: `.` crossing newlines would make a scan quadratic. Lines holding a lone `\r`
    // or U+2028/9 (where JS `.` stops and Rust's does not) are searched line by line instead.
    scan = build(source, `gm${i}`);
  } catch (error) {
    throw new ToolbeltError(
      "EINVAL_INPUT",
      `invalid regex ${JSON.stringify(query)}: ${(error as Error).message}`,
      {
        details: { field: "query" },
      },
    );
  }
  const lit = ignoreCase ? undefined : requiredLiteral(source);
  return {
    line,
    scan,
    literal: lit ? Buffer.from(lit, "utf8") : undefined,
    spec: { line: [line.source, line.flags], scan: [scan.source, scan.flags], literal: lit ?? null },
  };
}
