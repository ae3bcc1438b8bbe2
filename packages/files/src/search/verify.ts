import { isAscii } from "node:buffer";
import { closeSync, fstatSync, lstatSync, readSync } from "node:fs";
import path from "node:path";
import { sniffBom } from "../text-decode.js";
import { cutLine, type FileMatches, type LineMatch, MATCH_LINE_MAX_CHARS } from "./results.js";

/**
 * Where ripgrep runs unconfined (no Landlock wrapper: another OS, an old kernel, a container without
 * it, a dynamic rg, `agent.shell_sandbox: "off"`, a session without the shell family), it follows a
 * name it is handed and opens directories by path as its own user: a name swapped for a symlink
 * between its stat and its open makes it read outside the root. So every line an answer is about to
 * show is read again here through core's checked open (no symlink followed on the way or at the end,
 * the descriptor's own path checked, only regular files read) and kept only if it is, now, the text of
 * that line of that file of the root, decoded as ripgrep decodes it. What this does not cover: what
 * is not shown (the `capped` flag and the allowlist's `skipped` count may still count files reached
 * through a swapped link).
 */

/** Opens a root file for reading, checked at the open (session.openFileSync); throws when refused. */
export type CheckedOpen = (abs: string) => number;

export type Verified = {
  files: FileMatches[];
  /** Lines dropped: not (or no longer) the text of that line of that file. */
  changed: number;
};

/**
 * A shown line is at most this many bytes of the file: ripgrep's JSON message for a longer one passes
 * the 8 MiB the engine drops at (UTF-16 takes at most two bytes per UTF-8 byte of the message).
 */
export const VERIFY_LINE_MAX_BYTES = 17 * 1024 * 1024;
const CHUNK = 256 * 1024;

/** Read buffer shared by every verification (each runs synchronously to its end). */
const scratch = Buffer.allocUnsafe(CHUNK);

/**
 * Whether the descriptor (a regular file inside the root: the checked open guarantees the root) is
 * the file named `abs` itself, not another root file a symlink at the name led the open to: the
 * name's own entry (not followed) is a regular file with the descriptor's inode. A name swapped in
 * between fails the comparison, so the lines are dropped, never kept.
 */
function isThatFile(fd: number, abs: string): boolean {
  const opened = fstatSync(fd);
  if (!opened.isFile()) return false;
  const named = lstatSync(abs, { throwIfNoEntry: false });
  return named?.isFile() === true && named.ino === opened.ino && named.dev === opened.dev;
}

/**
 * The lines `wanted` (ascending, 1-based) of the open file as ripgrep prints them: a UTF-8 BOM is
 * dropped and UTF-16 with a BOM transcoded; lines end at LF, and a CR before that LF is not part of
 * the line (a CR ending the file without LF is); invalid UTF-8 becomes U+FFFD. Reads only up to the
 * last wanted line. A wanted line past VERIFY_LINE_MAX_BYTES, or past the end, is undefined.
 */
export function readLines(fd: number, wanted: readonly number[]): Map<number, string | undefined> {
  const out = new Map<number, string | undefined>();
  if (wanted.length === 0) return out;
  const last = wanted[wanted.length - 1] as number;
  const want = new Set(wanted);
  const chunk = Buffer.allocUnsafe(CHUNK);
  let position = 0;
  const read = (): Buffer => {
    const n = readSync(fd, chunk, 0, CHUNK, position);
    position += n;
    return chunk.subarray(0, n);
  };
  let buf = read();
  // A BOM is at most 3 bytes; a first read shorter than that is the whole file.
  const bom = sniffBom(buf);
  buf = buf.subarray(bom.length);
  let line = 1;
  if (bom.encoding === "utf-16le" || bom.encoding === "utf-16be") {
    const decoder = new TextDecoder(bom.encoding, { fatal: false });
    let pending = "";
    let over = false;
    const finish = (text: string, ended: boolean) => {
      if (want.has(line))
        out.set(line, over ? undefined : ended && text.endsWith("\r") ? text.slice(0, -1) : text);
      line++;
      pending = "";
      over = false;
    };
    const take = (text: string) => {
      let from = 0;
      while (line <= last) {
        const nl = text.indexOf("\n", from);
        if (nl === -1) {
          if (want.has(line) && !over) {
            pending += text.slice(from);
            if (pending.length * 2 > VERIFY_LINE_MAX_BYTES) {
              over = true;
              pending = "";
            }
          }
          return;
        }
        finish(want.has(line) && !over ? pending + text.slice(from, nl) : "", true);
        from = nl + 1;
      }
    };
    while (buf.length > 0 && line <= last) {
      take(decoder.decode(buf, { stream: true }));
      buf = read();
    }
    if (line <= last) {
      take(decoder.decode());
      if (line <= last && (pending !== "" || over)) finish(pending, false);
    }
    return out;
  }
  // UTF-8 (a UTF-8 BOM already skipped): bytes up to each LF; wanted lines decoded, others skipped.
  let parts: Buffer[] = [];
  let bytes = 0;
  let over = false;
  const finish = (ended: boolean) => {
    if (want.has(line)) {
      if (over) out.set(line, undefined);
      else {
        let whole = parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
        if (ended && whole.length > 0 && whole[whole.length - 1] === 0x0d)
          whole = whole.subarray(0, whole.length - 1);
        out.set(line, whole.toString("utf8"));
      }
    }
    line++;
    parts = [];
    bytes = 0;
    over = false;
  };
  let seen = false;
  while (buf.length > 0 && line <= last) {
    seen = true;
    let from = 0;
    while (line <= last) {
      const nl = buf.indexOf(0x0a, from);
      if (nl !== -1 && parts.length === 0) {
        // The whole line is in this chunk (most lines): decoded from it, no copy.
        if (want.has(line))
          out.set(line, buf.toString("utf8", from, nl > from && buf[nl - 1] === 0x0d ? nl - 1 : nl));
        line++;
        from = nl + 1;
        continue;
      }
      const end = nl === -1 ? buf.length : nl;
      if (want.has(line) && !over) {
        bytes += end - from;
        if (bytes > VERIFY_LINE_MAX_BYTES) {
          over = true;
          parts = [];
        } else if (end > from || parts.length === 0) {
          // A copy: the chunk is reused by the next read.
          parts.push(Buffer.from(buf.subarray(from, end)));
        }
      }
      if (nl === -1) break;
      finish(true);
      from = nl + 1;
    }
    buf = read();
  }
  // The last line of a file that does not end in LF (not an empty line after a final LF).
  if (seen && line <= last && (bytes > 0 || over)) finish(false);
  return out;
}

/**
 * Keeps, of each file's shown lines, those whose text is the text of that line of that root file now
 * (cut as the answer cuts it), read through `open`. A file that cannot be opened so (a symlink on the
 * way or at the end, gone, not a regular file) loses all its lines.
 */
export function verifyShown(files: readonly FileMatches[], root: string, open: CheckedOpen): Verified {
  const kept: FileMatches[] = [];
  let changed = 0;
  for (const file of files) {
    const matches = verifyFile(file, root, open);
    changed += file.matches.length - matches.length;
    if (matches.length)
      kept.push(matches.length === file.matches.length ? file : { path: file.path, matches });
  }
  return { files: kept, changed };
}

function verifyFile(file: FileMatches, root: string, open: CheckedOpen): LineMatch[] {
  const abs = path.join(root, file.path);
  // ripgrep's names are relative and below the root; anything else is not a root file.
  if (path.isAbsolute(file.path) || (abs !== root && !abs.startsWith(root.endsWith("/") ? root : `${root}/`)))
    return [];
  let fd: number;
  try {
    fd = open(abs);
  } catch {
    return [];
  }
  try {
    if (!isThatFile(fd, abs)) return [];
    const inOrder = file.matches.every((m, i, all) => i === 0 || (all[i - 1] as LineMatch).line < m.line);
    return keepShown(fd, inOrder ? file.matches : [...file.matches].sort((a, b) => a.line - b.line));
  } catch {
    return [];
  } finally {
    closeSync(fd);
  }
}

/** Whether a shown text is what the answer shows for the file's line `text`. */
function shows(shown: string, text: string | undefined): boolean {
  return text !== undefined && cutLine(text) === shown;
}

/**
 * The matches (ascending lines) whose text is the text of their line of the open file. UTF-8 (most
 * files) is compared while reading, without building the lines: an ASCII chunk is decoded once and
 * each wanted line compared in place. UTF-16 goes through readLines.
 */
function keepShown(fd: number, matches: readonly LineMatch[]): LineMatch[] {
  const kept: LineMatch[] = [];
  if (matches.length === 0) return kept;
  let position = 0;
  const read = (): Buffer => {
    const n = readSync(fd, scratch, 0, CHUNK, position);
    position += n;
    return scratch.subarray(0, n);
  };
  let buf = read();
  const bom = sniffBom(buf);
  if (bom.encoding === "utf-16le" || bom.encoding === "utf-16be") {
    const lines = readLines(
      fd,
      matches.map((m) => m.line),
    );
    return matches.filter((m) => shows(m.text, lines.get(m.line)));
  }
  buf = buf.subarray(bom.length);
  let i = 0;
  let line = 1;
  // A wanted line that does not end in the chunk it starts in: its bytes so far.
  let parts: Buffer[] = [];
  let bytes = 0;
  let over = false;
  let spanning = false;
  const judge = (text: string | undefined) => {
    const m = matches[i++] as LineMatch;
    if (shows(m.text, text)) kept.push(m);
  };
  const finishSpanning = (ended: boolean) => {
    let text: string | undefined;
    if (!over) {
      let whole = Buffer.concat(parts);
      if (ended && whole.length > 0 && whole[whole.length - 1] === 0x0d)
        whole = whole.subarray(0, whole.length - 1);
      text = whole.toString("utf8");
    }
    judge(text);
    parts = [];
    bytes = 0;
    over = false;
    spanning = false;
  };
  while (buf.length > 0 && i < matches.length) {
    const ascii = isAscii(buf);
    // Latin-1 maps each byte to one character: string offsets are byte offsets, and the string's
    // indexOf (a builtin) finds line ends several times faster than Buffer#indexOf per line.
    const chunkText = buf.toString("latin1");
    let from = 0;
    while (i < matches.length) {
      const want = (matches[i] as LineMatch).line === line;
      const nl = chunkText.indexOf("\n", from);
      if (nl !== -1 && !spanning) {
        // The whole line is in this chunk (most lines).
        if (want) {
          const end = nl > from && buf[nl - 1] === 0x0d ? nl - 1 : nl;
          const shown = (matches[i] as LineMatch).text;
          if (ascii && end - from <= MATCH_LINE_MAX_CHARS) {
            const m = matches[i++] as LineMatch;
            // (A substring and === beat startsWith at an offset by 2x here.)
            if (end - from === shown.length && chunkText.substring(from, end) === shown) kept.push(m);
          } else judge(buf.toString("utf8", from, end));
        }
        line++;
        from = nl + 1;
        continue;
      }
      const end = nl === -1 ? buf.length : nl;
      if (want && !over) {
        spanning = true;
        bytes += end - from;
        if (bytes > VERIFY_LINE_MAX_BYTES) {
          over = true;
          parts = [];
        } else parts.push(Buffer.from(buf.subarray(from, end)));
      }
      if (nl === -1) break;
      if (want) finishSpanning(true);
      line++;
      from = nl + 1;
    }
    buf = read();
  }
  // The last line of a file that does not end in LF.
  if (spanning && i < matches.length) finishSpanning(false);
  return kept;
}
