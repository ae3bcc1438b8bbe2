import { Buffer, isAscii, isUtf8 } from "node:buffer";
import { ToolbeltError } from "@toolbelt/core";

/**
 * A text file as the matchers see it: LF-only text, plus everything needed to write it back byte for
 * byte as it was — the byte-order mark and each line's own terminator (CRLF, LF, or none on the last).
 */
export type TextDocument = {
  bom: boolean;
  /** The content with every CRLF turned into LF; offsets of matches refer to this. */
  text: string;
  /** The terminator after each line of `text` ("\r\n", "\n", or "" after the last line). */
  eols: string[];
};

export const EOL_STYLES = ["lf", "crlf", "mixed", "none"] as const;

export type EolStyle = (typeof EOL_STYLES)[number];

const BOM = "\uFEFF";

// What this module knows about the documents it made (they are never changed in place once made):
// - LF_ONLY: every terminator is "\n" (the last one ""), so the text is the file as it is written;
// - ENCODED: the exact text a document encodes to, once known (a decoded file: what was read).
// Both let a large file be encoded, compared and described without walking it line by line again.
const LF_ONLY = new WeakSet<TextDocument>();
const ENCODED = new WeakMap<TextDocument, string>();

export function emptyDocument(): TextDocument {
  return { bom: false, text: "", eols: [""] };
}

/** Decodes file bytes; refuses binary or non-UTF-8 content rather than corrupting it. */
export function decodeDocument(bytes: Uint8Array, rel: string): TextDocument {
  const probe = bytes.subarray(0, 8192);
  if (probe.includes(0)) {
    throw new ToolbeltError("EBINARY", `${rel} looks binary (it contains NUL bytes); refusing to edit it`, {
      details: { path: rel },
    });
  }
  // Validated first, then decoded without checks: for valid UTF-8 this is what a fatal TextDecoder
  // gives (a BOM included). ASCII, the usual source file, decodes as Latin-1 at a few times the speed.
  if (!isUtf8(bytes)) {
    throw new ToolbeltError("EBINARY", `${rel} is not valid UTF-8; refusing to edit it`, {
      details: { path: rel },
    });
  }
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const decoded = view.toString(isAscii(view) ? "latin1" : "utf8");
  const bom = decoded.startsWith(BOM);
  const raw = bom ? decoded.slice(1) : decoded;
  const doc = fromRaw(raw, bom);
  ENCODED.set(doc, decoded);
  return doc;
}

/** Builds a document from text that may contain CRLF line endings. */
export function fromRaw(raw: string, bom = false): TextDocument {
  // Most files hold no CR: the text is the raw text and every terminator LF, without splitting a
  // large file into lines and joining it again.
  if (raw.indexOf("\r") === -1) {
    const eols = new Array<string>(countNewlines(raw)).fill("\n");
    eols.push("");
    return lfOnly({ bom, text: raw, eols });
  }
  const eols: string[] = [];
  const parts: string[] = [];
  let lineStart = 0;
  for (let i = raw.indexOf("\n"); i !== -1; i = raw.indexOf("\n", i + 1)) {
    const crlf = i > lineStart && raw.charCodeAt(i - 1) === 13;
    parts.push(raw.slice(lineStart, crlf ? i - 1 : i));
    eols.push(crlf ? "\r\n" : "\n");
    lineStart = i + 1;
  }
  parts.push(raw.slice(lineStart));
  eols.push("");
  return { bom, text: parts.join("\n"), eols };
}

/** The exact text of the file again: BOM and every original line terminator restored. */
export function encodeDocument(doc: TextDocument): string {
  const last = doc.eols.length - 1;
  if (
    doc.eols[last] === "" &&
    doc.eols.every((e, i) => i === last || e === "\n") &&
    countNewlines(doc.text) === last
  ) {
    // Every terminator is the LF the text already holds.
    return doc.bom ? BOM + doc.text : doc.text;
  }
  const lines = doc.text.split("\n");
  let out = doc.bom ? BOM : "";
  for (let i = 0; i < lines.length; i++) out += (lines[i] as string) + (doc.eols[i] ?? "");
  return out;
}

function lfOnly(doc: TextDocument): TextDocument {
  LF_ONLY.add(doc);
  return doc;
}

/**
 * encodeDocument for the documents this package made and never changes: what is known about them
 * (see LF_ONLY, ENCODED) answers without a walk over the lines, and the answer is kept.
 */
export function encodedText(doc: TextDocument): string {
  let text = ENCODED.get(doc);
  if (text === undefined) {
    text = LF_ONLY.has(doc) ? (doc.bom ? BOM + doc.text : doc.text) : encodeDocument(doc);
    ENCODED.set(doc, text);
  }
  return text;
}

/** The file's content as written on disk (without BOM), CRLFs included. */
export function rawText(doc: TextDocument): string {
  return encodeDocument({ ...doc, bom: false });
}

export function eolStyle(doc: TextDocument): EolStyle {
  if (LF_ONLY.has(doc)) return doc.eols.length > 1 ? "lf" : "none";
  let crlf = 0;
  let lf = 0;
  for (const eol of doc.eols) {
    if (eol === "\r\n") crlf++;
    else if (eol === "\n") lf++;
  }
  if (crlf === 0 && lf === 0) return "none";
  if (crlf === 0) return "lf";
  if (lf === 0) return "crlf";
  return "mixed";
}

/** The terminator most lines use; LF for a file with none. */
export function dominantEol(doc: TextDocument): string {
  let crlf = 0;
  let lf = 0;
  for (const eol of doc.eols) {
    if (eol === "\r\n") crlf++;
    else if (eol === "\n") lf++;
  }
  return crlf > lf ? "\r\n" : "\n";
}

export function hasFinalNewline(doc: TextDocument): boolean {
  return doc.text.endsWith("\n");
}

/** Line index (0-based) of an offset in `text`. */
export function lineIndexAt(text: string, offset: number): number {
  let n = 0;
  for (let i = text.indexOf("\n"); i !== -1 && i < offset; i = text.indexOf("\n", i + 1)) n++;
  return n;
}

/**
 * Replaces `text[start, end)` with `replacement` (LF text). Lines outside the edited span keep their
 * own terminators; new line breaks inside the span take the span's terminator (the file's dominant
 * one when the span had none or mixed ones), so a CRLF file stays CRLF and a mixed file stays as mixed
 * as it was.
 */
export function spliceDocument(
  doc: TextDocument,
  start: number,
  end: number,
  replacement: string,
  /** The line of `start`, when the caller knows it (a match does): saves counting lines up to it. */
  knownStartLine?: number,
): TextDocument {
  const startLine = knownStartLine ?? lineIndexAt(doc.text, start);
  const endLine = startLine + countNewlines(doc.text.slice(start, end));
  const lf = LF_ONLY.has(doc);
  const spanEols = lf ? [] : doc.eols.slice(startLine, endLine).filter((e) => e !== "");
  const uniform = spanEols.length > 0 && spanEols.every((e) => e === spanEols[0]);
  const inner = lf ? "\n" : uniform ? (spanEols[0] as string) : dominantEol(doc);
  const added = countNewlines(replacement);
  // One copy of the terminators, the span's replaced in place (a large file has one per line); a
  // large insertion is joined instead, as spreading it into arguments could overflow the stack.
  const inserted = new Array<string>(added).fill(inner);
  const kept = doc.eols[endLine] !== undefined;
  let eols: string[];
  if (kept && added <= 1024) {
    eols = doc.eols.slice();
    eols.splice(startLine, endLine - startLine, ...inserted);
  } else eols = doc.eols.slice(0, startLine).concat(inserted, kept ? doc.eols.slice(endLine) : [""]);
  const after = { bom: doc.bom, text: doc.text.slice(0, start) + replacement + doc.text.slice(end), eols };
  return lf ? lfOnly(after) : after;
}

/**
 * What spliceDocument makes of each span in turn, last first (the spans in ascending order and
 * disjoint, as replace_all finds them), in one pass over the document: one splice per span copied the
 * whole text and its line endings each time, the square of the file for a replacement on every line.
 * New line breaks take the terminator that splice would give them, the dominant one included (counted
 * as the splices after the span would have left it).
 */
export function spliceEach(
  doc: TextDocument,
  spans: ReadonlyArray<{ start: number; end: number; replacement: string }>,
): TextDocument {
  const n = spans.length;
  if (n === 0) return doc;
  const text = doc.text;
  const lf = LF_ONLY.has(doc);
  // Each span's first and last line (newlines before its start and before its end), counted forward.
  const startLines = new Array<number>(n);
  const endLines = new Array<number>(n);
  let line = 0;
  let nl = text.indexOf("\n");
  let prevEnd = 0;
  for (let k = 0; k < n; k++) {
    const { start, end } = spans[k] as { start: number; end: number };
    if (start < prevEnd || end < start || end > text.length)
      throw new RangeError("spliceEach: spans must be in order, disjoint and inside the text");
    prevEnd = end;
    for (; nl !== -1 && nl < start; nl = text.indexOf("\n", nl + 1)) line++;
    startLines[k] = line;
    for (; nl !== -1 && nl < end; nl = text.indexOf("\n", nl + 1)) line++;
    endLines[k] = line;
  }
  const added = spans.map((s) => countNewlines(s.replacement));
  // The terminator of each span's new line breaks, decided last span first as the splices would be.
  const inner = new Array<string>(n).fill("\n");
  if (!lf) {
    let crlf = 0;
    let lfs = 0;
    for (const eol of doc.eols) {
      if (eol === "\r\n") crlf++;
      else if (eol === "\n") lfs++;
    }
    for (let k = n - 1; k >= 0; k--) {
      // dominantEol of the document the splices after this span have left.
      const dominant = crlf > lfs ? "\r\n" : "\n";
      let first: string | undefined;
      let uniform = true;
      for (let i = startLines[k] as number; i < (endLines[k] as number); i++) {
        const eol = doc.eols[i] as string;
        if (eol === "") continue;
        if (first === undefined) first = eol;
        else if (eol !== first) uniform = false;
        if (eol === "\r\n") crlf--;
        else if (eol === "\n") lfs--;
      }
      const eol = first !== undefined && uniform ? first : dominant;
      inner[k] = eol;
      if (eol === "\r\n") crlf += added[k] as number;
      else lfs += added[k] as number;
    }
  }
  const pieces: string[] = [];
  const eols: string[] = [];
  let at = 0;
  let kept = 0;
  for (let k = 0; k < n; k++) {
    const span = spans[k] as { start: number; end: number; replacement: string };
    pieces.push(text.slice(at, span.start), span.replacement);
    at = span.end;
    for (let i = kept; i < (startLines[k] as number); i++) eols.push(doc.eols[i] as string);
    for (let i = 0; i < (added[k] as number); i++) eols.push(inner[k] as string);
    kept = endLines[k] as number;
  }
  pieces.push(text.slice(at));
  for (let i = kept; i < doc.eols.length; i++) eols.push(doc.eols[i] as string);
  const after = { bom: doc.bom, text: pieces.join(""), eols };
  return lf ? lfOnly(after) : after;
}

/**
 * Puts the final newline back the way the original had it: an edit that happens to touch the end of
 * the file must not add or drop the last line break as a side effect.
 */
export function keepFinalNewline(before: TextDocument, after: TextDocument): TextDocument {
  if (after.text === "" || before.text === "") return after;
  const had = hasFinalNewline(before);
  const has = hasFinalNewline(after);
  if (had === has) return after;
  if (had) {
    const eol = before.eols[before.eols.length - 2] ?? "\n";
    const eols = [...after.eols];
    eols[eols.length - 1] = eol;
    eols.push("");
    const restored = { ...after, text: `${after.text}\n`, eols };
    return LF_ONLY.has(after) && eol === "\n" ? lfOnly(restored) : restored;
  }
  const eols = after.eols.slice(0, -1);
  eols[eols.length - 1] = "";
  const dropped = { ...after, text: after.text.slice(0, -1), eols };
  return LF_ONLY.has(after) ? lfOnly(dropped) : dropped;
}

export function countNewlines(s: string): number {
  let n = 0;
  for (let i = s.indexOf("\n"); i !== -1; i = s.indexOf("\n", i + 1)) n++;
  return n;
}

/** Model-sent text with its line breaks normalised to LF. */
export function toLf(s: string): string {
  return s.replace(/\r\n/g, "\n");
}
