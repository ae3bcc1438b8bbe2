/**
 * The model-facing text: `# Key: value` header lines, one blank line, then the body — the one shape of
 * every tool's text in every profile. Listings and search results are trees in which each shared path
 * prefix is written once (or flat rows, with `toolOutput.structure: "flat"`). `parseToolText` reads it
 * back, and still reads text written before the blank line (headers, then the body at once).
 *
 * Nothing a file or a caller controls can add a line or a header: header values and match text
 * have control and invisible characters escaped (display only), names are escaped reversibly
 * (`escapeName`) and read back with `unescapeText`. The escape rules are in escape.ts.
 */
import { escapeName, escapePath, escapeText, unescapeText } from "./escape.js";

// Re-exported here too: the console bundles this module alone (by path) and needs the same escape.
export {
  type Elided,
  ESCAPE_LEGEND,
  type EscapeOptions,
  elideMiddle,
  escapeName,
  escapePath,
  escapeText,
  SPACE_RUN_MIN,
  unescapeText,
  type VisibleText,
  visibleText,
} from "./escape.js";

export interface TreeMatch {
  line: number;
  text: string;
  /** A context line around a match rather than a match. */
  context?: boolean;
}

export interface TreeEntry {
  /** Root-relative path with `/` separators. */
  path: string;
  /** A note after the name, such as `(image)`. */
  note?: string;
  matches?: TreeMatch[];
}

export type HeaderValue = string | number | boolean | undefined | null;

/** How listings and search results are written: an indented tree (the default) or flat rows. */
export const OUTPUT_STRUCTURES = ["tree", "flat"] as const;
export type OutputStructure = (typeof OUTPUT_STRUCTURES)[number];

export function renderHeaders(headers: Array<[string, HeaderValue]>): string {
  return headers
    .filter(([, value]) => value !== undefined && value !== null && value !== "")
    .map(([key, value]) => `# ${key}: ${escapeText(String(value), { reversible: false })}`)
    .join("\n");
}

/** Header lines, one blank line, then the body (just the headers when there is no body). */
export function renderText(headers: Array<[string, HeaderValue]>, body = ""): string {
  const head = renderHeaders(headers);
  if (!head) return body;
  return body ? `${head}\n\n${body}` : head;
}

/** `N` or `N (capped at N)`, the one way a count that may be truncated is written. */
export function countWithCap(count: number, cap: number | undefined, capped: boolean, unit = ""): string {
  const u = unit ? ` ${unit}` : "";
  return capped && cap !== undefined ? `${count} (capped at ${cap}${u})` : String(count);
}

interface TrieNode {
  children: Map<string, TrieNode>;
  entry?: TreeEntry;
}

function buildTrie(entries: TreeEntry[]): TrieNode {
  const root: TrieNode = { children: new Map() };
  for (const entry of entries) {
    const parts = entry.path.split("/").filter(Boolean);
    let node = root;
    for (const part of parts) {
      let child = node.children.get(part);
      if (!child) {
        child = { children: new Map() };
        node.children.set(part, child);
      }
      node = child;
    }
    node.entry = entry;
  }
  return root;
}

function compareNames(a: [string, TrieNode], b: [string, TrieNode]): number {
  // Directories first, then files; each group by name.
  const ad = a[1].children.size > 0 ? 0 : 1;
  const bd = b[1].children.size > 0 ? 0 : 1;
  if (ad !== bd) return ad - bd;
  return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0;
}

/** Lines gathered before they are joined into one chunk (see `renderTree`). */
const CHUNK_LINES = 512;

/** The display-only escape of a match row: tabs stay as written. */
const MATCH_ESCAPE = { keep: "\t", reversible: false } as const;

/**
 * What `escapeText(text, MATCH_ESCAPE)` would change, in rows joined by `\n`: every unsafe character
 * but the kept tab and the `\n` between rows (a `\n` inside a text is looked for on its own). A row
 * is `indent line: text`, so no surrogate of a text can pair with a character of another row.
 */
let rowsUnsafe: RegExp | undefined; // made on first use (see UNSAFE in escape.ts)

/**
 * Match rows `start..end` as lines joined by `\n`: `line: text` (`line- text` for context) after
 * `indent` (the tree's indentation, or a flat row's `path:`).
 */
function renderRows(matches: TreeMatch[], start: number, end: number, indent: string): string {
  // Content stays as written (tabs, backslashes) except what could break the line or a terminal.
  // Rows are written raw and checked with one regex test: almost every row has nothing to escape,
  // and one test over a few hundred rows costs less than one per row. Any hit writes them escaped.
  const rows: string[] = [];
  let newline = false;
  for (let i = start; i < end; i++) {
    const match = matches[i] as TreeMatch;
    if (match.text.includes("\n")) newline = true;
    rows.push(`${indent}${match.line}${match.context ? "-" : ":"} ${match.text}`);
  }
  const raw = rows.join("\n");
  rowsUnsafe ??= /[\x00-\x08\x0B-\x1F\x7F-\x9F\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u;
  if (!newline && !rowsUnsafe.test(raw)) return raw;
  for (let i = start; i < end; i++) {
    const match = matches[i] as TreeMatch;
    rows[i - start] =
      `${indent}${match.line}${match.context ? "-" : ":"} ${escapeText(match.text, MATCH_ESCAPE)}`;
  }
  return rows.join("\n");
}

/**
 * Renders paths as an indented tree (two spaces a level); chains of directories with one child are
 * joined (`packages/core/src/`). Matches sit under their file as `line: text` (`line- text` for context).
 */
export function renderTree(entries: TreeEntry[]): string {
  // Lines are joined a chunk at a time: each line's pieces are copied while still young, so a tree of
  // 640,000 match rows keeps a few thousand flat chunks alive instead of 640,000 concatenations, which
  // halves the time (most of it was garbage collection). The text is the same as one join of all lines.
  const chunks: string[] = [];
  const lines: string[] = [];
  const push = (line: string): void => {
    lines.push(line);
    if (lines.length >= CHUNK_LINES) {
      chunks.push(lines.join("\n"));
      lines.length = 0;
    }
  };
  const walk = (node: TrieNode, depth: number): void => {
    const sorted = [...node.children.entries()].sort(compareNames);
    const indent = "  ".repeat(depth);
    const rowIndent = `${indent}  `;
    for (const [name, child] of sorted) {
      if (child.children.size > 0) {
        let label = escapeName(name);
        let cursor = child;
        while (cursor.children.size === 1 && !cursor.entry) {
          const [onlyName, only] = [...cursor.children.entries()][0] as [string, TrieNode];
          if (only.children.size === 0) break;
          label += `/${escapeName(onlyName)}`;
          cursor = only;
        }
        push(`${indent}${label}/`);
        walk(cursor, depth + 1);
        continue;
      }
      const entry = child.entry;
      const note = entry?.note ? ` ${escapeText(entry.note, { reversible: false })}` : "";
      push(`${indent}${escapeName(name)}${note}`);
      const matches = entry?.matches;
      if (!matches) continue;
      for (let start = 0; start < matches.length; start += CHUNK_LINES) {
        push(renderRows(matches, start, Math.min(start + CHUNK_LINES, matches.length), rowIndent));
      }
    }
  };
  walk(buildTrie(entries), 0);
  if (lines.length) chunks.push(lines.join("\n"));
  return chunks.join("\n");
}

/** A path in a flat search row: escaped, and its `:` written `\x3A` so the row splits at its first colon. */
function flatRowPath(path: string): string {
  // A backslash right before a colon is a lone one in escapePath's output (`:` is no escape letter):
  // doubled, so it cannot read as the start of the colon's escape.
  return escapePath(path).replace(/(\\?):/g, (_m, slash: string) => `${slash ? "\\\\" : ""}\\x3A`);
}

/**
 * Flat rows, for text that is grepped more than read: one full path per row (a note after it), and
 * a search's matches as `path:line: text` rows (`path:line- text` for context), in the order given.
 */
export function renderFlat(entries: TreeEntry[]): string {
  const chunks: string[] = [];
  for (const entry of entries) {
    const matches = entry.matches;
    if (!matches?.length) {
      const note = entry.note ? ` ${escapeText(entry.note, { reversible: false })}` : "";
      chunks.push(`${escapePath(entry.path)}${note}`);
      continue;
    }
    const prefix = `${flatRowPath(entry.path)}:`;
    for (let start = 0; start < matches.length; start += CHUNK_LINES)
      chunks.push(renderRows(matches, start, Math.min(start + CHUNK_LINES, matches.length), prefix));
  }
  return chunks.join("\n");
}

/** The body of a listing or search result in the structure asked for (`toolOutput.structure`). */
export function renderEntries(entries: TreeEntry[], structure: OutputStructure = "tree"): string {
  return structure === "flat" ? renderFlat(entries) : renderTree(entries);
}

/**
 * One section of a sectioned body, such as a PDF's pages or a notebook's cells and outputs: a
 * `# Key: value` line, one blank line, then the content (just the line when there is none).
 */
export interface TextSection {
  /** `Page`, `Cell`, `Output`. */
  key: string;
  /** What the header line says after the key: `3`, `2 (code, id a1b2)`. */
  value: string | number;
  body: string;
}

/** The display-only escape of section content: tabs and backslashes stay as written. */
const CONTENT_ESCAPE = { keep: "\t", reversible: false } as const;

/**
 * One line of section content as written: control and invisible characters escaped (display only),
 * and a line that would read as a `# Key: value` header gets its `#` written `\x23`, so no text of a
 * file can start a section or pass for a header. Every other line, `# comments` included, is as is.
 */
function contentLine(line: string): string {
  const shown = escapeText(line, CONTENT_ESCAPE);
  return HEADER.test(shown) ? `\\x23${shown.slice(1)}` : shown;
}

/**
 * Sections one after another, a blank line between them: the body of a paged or celled read.
 * `parseToolText()` gives them back as `sections` (content as shown: escaped control characters
 * stay escaped, as in search rows).
 */
export function renderSections(sections: TextSection[]): string {
  return sections
    .map((section) => {
      const head = `# ${section.key}: ${escapeText(String(section.value), { reversible: false })}`;
      if (section.body === "") return head;
      return `${head}\n\n${section.body.split("\n").map(contentLine).join("\n")}`;
    })
    .join("\n\n");
}

/** Kinds whose body is sections (`renderSections`). */
const SECTION_KINDS = new Set(["pdf_content", "notebook"]);

const ESCAPED_HASH = "\\x23";

/** The inverse of `renderSections` (but for the display-only escapes). */
function parseSections(lines: string[]): TextSection[] {
  const sections: Array<{ key: string; value: string; lines: string[] }> = [];
  for (const line of lines) {
    const m = HEADER.exec(line);
    if (m) {
      sections.push({ key: m[1] as string, value: m[2] ?? "", lines: [] });
      continue;
    }
    const restored =
      line.startsWith(ESCAPED_HASH) && HEADER.test(`#${line.slice(ESCAPED_HASH.length)}`)
        ? `#${line.slice(ESCAPED_HASH.length)}`
        : line;
    sections.at(-1)?.lines.push(restored);
  }
  return sections.map((section, i) => {
    const body = section.lines;
    // The blank line after the header, and the one before the next section.
    if (body[0] === "") body.shift();
    if (i < sections.length - 1 && body.at(-1) === "") body.pop();
    return { key: section.key, value: section.value, body: body.join("\n") };
  });
}

export interface CountHeader {
  count: number;
  capped: boolean;
  cap?: number;
  /** Extra cap terms after the first, e.g. `1048576 chars`. */
  capDetail?: string;
}

export interface ParsedToolText {
  kind?: string;
  /** Header values keyed as written (`Count`, `Matches`, `Path`, ...). */
  headers: Record<string, string>;
  /** Headers whose value is a count, parsed (`Count`, `Matches`, `Files`, ...). */
  counts: Record<string, CountHeader>;
  /** The body after the header lines. */
  body: string;
  /** Tree entries, when the body is a listing or search tree. */
  entries?: TreeEntry[];
  /** Everything a tree held: number of files and of matches. */
  totals?: { files: number; matches: number };
  /** Whether the listing or search was cut at a cap (`# Count:` / `# Matches:` says `capped at`). */
  truncated?: boolean;
  /** The cap it was cut at, and the further cap terms (`matches / 1048576 chars`). */
  cap?: number;
  capDetail?: string;
  /** The sections of a paged or celled read (`renderSections`): a PDF's pages, a notebook's cells. */
  sections?: TextSection[];
  /** `# Skipped: N files (...)`: files a search left out. */
  skipped?: number;
  /** `# Changed: N lines (...)`: lines a search dropped because they changed while it ran. */
  changed?: number;
  error?: { code: string; message: string };
}

const HEADER = /^# ([A-Za-z][A-Za-z0-9 _-]*): ?(.*)$/;
const RETIRED_DIR = /^# (.+\/)$/;
const COUNT = /^(\d+)(?: \(capped at (\d+)([^)]*)\))?$/;
const MATCH = /^(\d+)([:-]) ([\s\S]*)$/;

function parseCount(value: string): CountHeader | undefined {
  const m = COUNT.exec(value.trim());
  if (!m) return undefined;
  const detail = m[3]?.trim();
  return {
    count: Number(m[1]),
    capped: m[2] !== undefined,
    ...(m[2] !== undefined ? { cap: Number(m[2]) } : {}),
    ...(detail ? { capDetail: detail } : {}),
  };
}

function parseIndentedTree(lines: string[]): TreeEntry[] {
  const entries: TreeEntry[] = [];
  // stack[i] = directory path prefix at depth i
  const dirs: string[] = [];
  let lastFile: { entry: TreeEntry; depth: number } | undefined;
  for (const raw of lines) {
    if (raw.trim() === "") continue;
    // Indentation is spaces only: names have leading whitespace escaped, so it cannot add depth.
    const indentWidth = /^ */.exec(raw)?.[0].length ?? 0;
    const depth = Math.floor(indentWidth / 2);
    const text = raw.slice(indentWidth);
    const match = MATCH.exec(text);
    if (match && lastFile && depth === lastFile.depth + 1) {
      lastFile.entry.matches ??= [];
      lastFile.entry.matches.push({
        line: Number(match[1]),
        text: match[3] ?? "",
        ...(match[2] === "-" ? { context: true } : {}),
      });
      continue;
    }
    dirs.length = Math.min(dirs.length, depth);
    const prefix = dirs.length ? `${dirs[dirs.length - 1]}/` : "";
    if (text.endsWith("/")) {
      dirs.push(prefix + text.slice(0, -1));
      lastFile = undefined;
      continue;
    }
    const note = /^(.*?) (\([^()]*\))$/.exec(text);
    const entry: TreeEntry = note
      ? { path: unescapeText(prefix + note[1]), note: note[2] as string }
      : { path: unescapeText(prefix + text) };
    entries.push(entry);
    lastFile = { entry, depth };
  }
  return entries;
}

const FLAT_MATCH = /^([^:]*):(\d+)([:-]) ([\s\S]*)$/;
const NOTE = /^(.*?) (\([^()]*\))$/;

/** Flat rows back into entries: paths one per row; with `matches`, `path:line: text` rows. */
function parseFlatRows(lines: string[], matches: boolean): TreeEntry[] {
  const entries: TreeEntry[] = [];
  let last: TreeEntry | undefined;
  for (const raw of lines) {
    if (raw.trim() === "") continue;
    const row = matches ? FLAT_MATCH.exec(raw) : null;
    if (row) {
      const path = unescapeText(row[1] as string);
      if (last?.path !== path || !last.matches) {
        last = { path, matches: [] };
        entries.push(last);
      }
      last.matches?.push({
        line: Number(row[2]),
        text: row[4] ?? "",
        ...(row[3] === "-" ? { context: true } : {}),
      });
      continue;
    }
    const note = NOTE.exec(raw);
    last = note
      ? { path: unescapeText(note[1] as string), note: note[2] as string }
      : { path: unescapeText(raw) };
    entries.push(last);
  }
  return entries;
}

function parseRetiredGroups(lines: string[]): TreeEntry[] {
  const entries: TreeEntry[] = [];
  let dir = "";
  let last: TreeEntry | undefined;
  for (const raw of lines) {
    if (raw.trim() === "") continue;
    const group = RETIRED_DIR.exec(raw);
    if (group) {
      dir = group[1] === "./" ? "" : (group[1] as string);
      last = undefined;
      continue;
    }
    const text = raw.trim();
    const match = MATCH.exec(text);
    if (match && last && raw.startsWith(" ")) {
      last.matches ??= [];
      last.matches.push({
        line: Number(match[1]),
        text: match[3] ?? "",
        ...(match[2] === "-" ? { context: true } : {}),
      });
      continue;
    }
    const note = /^(.*?) (\([^()]*\))$/.exec(text);
    last = note ? { path: dir + note[1], note: note[2] } : { path: dir + text };
    entries.push(last);
  }
  return entries;
}

/** Kinds whose body is a path tree. */
const TREE_KINDS = new Set(["file_list", "dir_list", "search_results"]);

/** Texts without `# Kind:` (the mouaif profile's) say what they are by their first header. */
const KIND_BY_HEADER: Array<[string, string]> = [
  ["Listing", "file_list"],
  ["Search", "search_results"],
];

/**
 * Turns model-facing text back into structure: headers, counts with their caps, and for listings and
 * search results the tree entries. Reads both the indented tree and the retired `# dir/` grouped form.
 */
export function parseToolText(text: string): ParsedToolText {
  const lines = text.split("\n");
  const headers: Record<string, string> = {};
  const counts: Record<string, CountHeader> = {};
  let i = 0;
  for (; i < lines.length; i++) {
    const line = lines[i] as string;
    if (RETIRED_DIR.test(line)) break;
    const m = HEADER.exec(line);
    if (!m) break;
    const key = m[1] as string;
    const value = m[2] ?? "";
    headers[key] = value;
    const count = parseCount(value);
    if (count) counts[key] = count;
  }
  // One blank line separates the headers from the body; text written before it had none.
  if (i > 0 && lines[i] === "") i++;
  const bodyLines = lines.slice(i);
  const result: ParsedToolText = { headers, counts, body: bodyLines.join("\n") };
  const kind = headers.Kind ?? KIND_BY_HEADER.find(([h]) => headers[h] !== undefined)?.[1];
  if (kind) result.kind = kind;
  if (headers.Error) {
    result.kind = "error";
    result.error = { code: headers.Error, message: result.body.trim() };
    return result;
  }
  if (kind && SECTION_KINDS.has(kind)) {
    result.sections = parseSections(bodyLines);
    return result;
  }
  // Only a listing can be in the retired form: a `# docs/` heading in a file read is just text.
  const retired = (!kind || TREE_KINDS.has(kind)) && bodyLines.some((l) => RETIRED_DIR.test(l));
  if (retired || (kind && TREE_KINDS.has(kind))) {
    const entries = retired
      ? parseRetiredGroups(bodyLines)
      : headers.Structure === "flat"
        ? parseFlatRows(bodyLines, kind === "search_results")
        : parseIndentedTree(bodyLines);
    result.entries = entries;
    result.totals = {
      files: entries.length,
      matches: entries.reduce((n, e) => n + (e.matches?.filter((m) => !m.context).length ?? 0), 0),
    };
    const count = counts.Matches ?? counts.Count;
    if (count) {
      result.truncated = count.capped;
      if (count.cap !== undefined) result.cap = count.cap;
      if (count.capDetail) result.capDetail = count.capDetail;
    }
    const skipped = /^(\d+)\b/.exec(headers.Skipped ?? "");
    if (skipped) result.skipped = Number(skipped[1]);
    const changed = /^(\d+)\b/.exec(headers.Changed ?? "");
    if (changed) result.changed = Number(changed[1]);
  }
  return result;
}
