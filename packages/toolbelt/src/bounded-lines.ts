// The line reader of `toolbelt exec` (JSONL on stdin) and `serve --mcp` (newline-delimited JSON-RPC):
// a line over the byte bound is skipped up to its line break without being held (only its first
// bytes are kept, for the id an answer can name), and a line is decoded as UTF-8 once it is complete.

/** A line (without its line break), or what is known of one over the bound. */
export type BoundedLine = string | { overBytes: number; head: string };

/** How much of a line over the bound is kept: ids sit near the start in practice. */
export const HEAD_BYTES = 4096;

const LF = 0x0a;
const CR = 0x0d;

/**
 * Splits bytes into lines of at most `maxBytes`, a chunk at a time. `\n` and `\r\n` end a line; with
 * `loneCr` a lone `\r` does too (as readline reads it), without it a `\r` before the `\n` is dropped.
 */
export class LineSplitter {
  #held: Buffer[] = [];
  #size = 0;
  #skipped: { bytes: number; head: Buffer } | undefined;
  #afterCr = false;

  constructor(
    readonly maxBytes: number,
    readonly loneCr = false,
  ) {}

  /** The lines `chunk` completes. */
  *push(chunk: Buffer): Generator<BoundedLine> {
    let start = 0;
    // A `\r` ended the last chunk: a `\n` opening this one belongs to that line break.
    if (this.#afterCr && chunk[0] === LF) start = 1;
    this.#afterCr = false;
    // The next line break of each kind at or after `start`, each searched for again only once passed.
    let lf = chunk.indexOf(LF, start);
    let cr = this.loneCr ? chunk.indexOf(CR, start) : -1;
    while (start < chunk.length) {
      if (lf !== -1 && lf < start) lf = chunk.indexOf(LF, start);
      if (cr !== -1 && cr < start) cr = chunk.indexOf(CR, start);
      const end = lf === -1 ? cr : cr === -1 ? lf : Math.min(lf, cr);
      if (end === -1) {
        this.#take(chunk.subarray(start));
        return;
      }
      this.#take(chunk.subarray(start, end));
      yield this.#finish();
      start = end + 1;
      if (chunk[end] === CR) {
        if (start === chunk.length) this.#afterCr = true;
        else if (chunk[start] === LF) start++;
      }
    }
  }

  /** The last line, when the input ended without a line break after it. */
  *end(): Generator<BoundedLine> {
    if (this.#size > 0 || this.#skipped) yield this.#finish();
  }

  #take(piece: Buffer): void {
    if (piece.length === 0) return;
    if (this.#skipped) {
      this.#skipped.bytes += piece.length;
      return;
    }
    if (this.#size + piece.length <= this.maxBytes) {
      this.#held.push(piece);
      this.#size += piece.length;
      return;
    }
    const head = Buffer.concat([...this.#held, piece.subarray(0, HEAD_BYTES)]).subarray(0, HEAD_BYTES);
    // A copy: the head must not keep the whole chunk it came from alive.
    this.#skipped = { bytes: this.#size + piece.length, head: Buffer.from(head) };
    this.#held = [];
    this.#size = 0;
  }

  #finish(): BoundedLine {
    const skipped = this.#skipped;
    let line: BoundedLine;
    if (skipped) line = { overBytes: skipped.bytes, head: skipped.head.toString("utf8") };
    else {
      const [only] = this.#held;
      line = (this.#held.length === 1 && only ? only : Buffer.concat(this.#held, this.#size)).toString(
        "utf8",
      );
      if (!this.loneCr && line.endsWith("\r")) line = line.slice(0, -1);
    }
    this.#held = [];
    this.#size = 0;
    this.#skipped = undefined;
    return line;
  }
}

/** The lines of `input`, one pulled at a time (the input waits while the caller works on a line). */
export async function* boundedLines(
  input: AsyncIterable<Buffer | string>,
  maxBytes: number,
  options: { loneCr?: boolean } = {},
): AsyncGenerator<BoundedLine> {
  const splitter = new LineSplitter(maxBytes, options.loneCr ?? false);
  for await (const chunk of input)
    yield* splitter.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
  yield* splitter.end();
}
