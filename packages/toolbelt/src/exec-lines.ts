// The lines of `toolbelt exec`'s stdin, bounded as serve --mcp bounds its messages: a line over the
// byte bound is skipped up to its newline without being held, and a line nesting deeper than the
// bound is refused before JSON.parse builds it (a 64 MiB line of `[` took 35 s and 2 GB to parse, and
// writing its id back overflowed the stack and ended the session).

import { ENV, readEnv } from "@toolbelt/core/internal";

/** A line of exec's stdin (without its line break), or the size of one over the bound (not kept). */
export type ExecLine = string | { overBytes: number };

/** The default bound on one line: room for a write of `fileWriteMaxBytes` escaped at worst. */
export const DEFAULT_EXEC_LINE_BYTES = 64 * 1024 * 1024;

const LF = 0x0a;
const CR = 0x0d;

/** The byte bound of one line: TOOLBELT_EXEC_MAX_LINE_BYTES, else the larger of 64 MiB and 8× the write limit. */
export function execLineBound(fileWriteMaxBytes: number): number {
  return (
    readEnv(ENV.TOOLBELT_EXEC_MAX_LINE_BYTES) ?? Math.max(DEFAULT_EXEC_LINE_BYTES, 8 * fileWriteMaxBytes)
  );
}

/**
 * Splits `input` into lines as readline does with `crlfDelay: Infinity` (`\n`, `\r\n` and a lone `\r`
 * end a line; a last line without a break counts), at most `maxBytes` held at a time. A line is
 * decoded as UTF-8 once it is complete; one pulled line at a time, so the input waits while a call runs.
 */
export async function* execLines(
  input: AsyncIterable<Buffer | string>,
  maxBytes: number,
): AsyncGenerator<ExecLine> {
  let held: Buffer[] = [];
  let size = 0;
  let skipped: number | undefined;
  let afterCR = false;
  const take = (piece: Buffer) => {
    if (piece.length === 0) return;
    if (skipped !== undefined) skipped += piece.length;
    else if (size + piece.length > maxBytes) {
      skipped = size + piece.length;
      held = [];
      size = 0;
    } else {
      held.push(piece);
      size += piece.length;
    }
  };
  const finish = (): ExecLine => {
    const line: ExecLine =
      skipped !== undefined ? { overBytes: skipped } : Buffer.concat(held, size).toString("utf8");
    held = [];
    size = 0;
    skipped = undefined;
    return line;
  };
  for await (const chunk of input) {
    const data = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    if (data.length === 0) continue;
    let start = 0;
    // A `\r` ended the last chunk: a `\n` opening this one belongs to that line break.
    if (afterCR && data[0] === LF) start = 1;
    afterCR = false;
    let lf = data.indexOf(LF, start);
    let cr = data.indexOf(CR, start);
    while (start < data.length) {
      if (lf !== -1 && lf < start) lf = data.indexOf(LF, start);
      if (cr !== -1 && cr < start) cr = data.indexOf(CR, start);
      const end = lf === -1 ? cr : cr === -1 ? lf : Math.min(lf, cr);
      if (end === -1) {
        take(data.subarray(start));
        break;
      }
      if (size === 0 && skipped === undefined)
        yield end - start > maxBytes ? { overBytes: end - start } : data.toString("utf8", start, end);
      else {
        take(data.subarray(start, end));
        yield finish();
      }
      start = end + 1;
      if (data[end] === CR) {
        if (start === data.length) afterCR = true;
        else if (data[start] === LF) start++;
      }
    }
  }
  if (size > 0 || skipped !== undefined) yield finish();
}

/**
 * Whether a JSON text nests arrays and objects deeper than `limit` (stops at the first level over).
 * Strings are stepped over with indexOf, so a line carrying a large file costs far less than its parse.
 */
export function jsonNestsDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // To the closing quote: the next quote preceded by an even number of backslashes.
      for (;;) {
        const q = text.indexOf('"', i + 1);
        if (q === -1) return false;
        let b = q - 1;
        while (text.charCodeAt(b) === 0x5c) b--;
        i = q;
        if ((q - 1 - b) % 2 === 0) break;
      }
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > limit) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}
