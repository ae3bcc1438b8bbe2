import { StringDecoder } from "node:string_decoder";

export interface CapturedOutput {
  /** The text kept: all of it, or the head and the tail around a line that states what was elided. */
  text: string;
  totalBytes: number;
  /** Bytes dropped from the middle (0 when nothing was). */
  elidedBytes: number;
}

/**
 * Keeps the first and the last bytes of a stream of any size in bounded memory: the head fills up
 * once, the tail is a queue of chunks trimmed from the front. A 1 GB flood costs `limit` bytes
 * plus one chunk.
 */
export class HeadTailCapture {
  readonly #headLimit: number;
  readonly #tailLimit: number;
  readonly #head: Buffer[] = [];
  #headBytes = 0;
  readonly #tail: Buffer[] = [];
  #tailBytes = 0;
  #total = 0;

  constructor(limitBytes: number) {
    this.#headLimit = Math.ceil(limitBytes / 2);
    this.#tailLimit = Math.max(0, limitBytes - this.#headLimit);
  }

  get totalBytes(): number {
    return this.#total;
  }

  push(chunk: Buffer): void {
    this.#total += chunk.length;
    if (this.#headBytes < this.#headLimit) {
      const take = Math.min(chunk.length, this.#headLimit - this.#headBytes);
      this.#head.push(take === chunk.length ? chunk : chunk.subarray(0, take));
      this.#headBytes += take;
      if (take === chunk.length) return;
      chunk = chunk.subarray(take);
    }
    if (this.#tailLimit === 0) return;
    this.#tail.push(chunk);
    this.#tailBytes += chunk.length;
    // Drop whole chunks from the front while the rest still covers the tail.
    while (this.#tail.length > 1 && this.#tailBytes - (this.#tail[0] as Buffer).length >= this.#tailLimit) {
      this.#tailBytes -= (this.#tail.shift() as Buffer).length;
    }
  }

  /**
   * The captured text; `clean` runs on each kept part (ANSI stripping, carriage returns).
   * When the middle was dropped the cut is moved to a line boundary if one is near.
   */
  finish(clean: (text: string) => string = (t) => t): CapturedOutput {
    const head = Buffer.concat(this.#head);
    let tail = Buffer.concat(this.#tail);
    if (tail.length > this.#tailLimit) tail = tail.subarray(tail.length - this.#tailLimit);
    const elided = this.#total - head.length - tail.length;
    if (elided === 0) {
      return { text: clean(decodeAll(Buffer.concat([head, tail]))), totalBytes: this.#total, elidedBytes: 0 };
    }
    let headCut = head.length;
    const lastNewline = head.lastIndexOf(0x0a);
    if (lastNewline >= 0 && lastNewline >= head.length * 0.75) headCut = lastNewline + 1;
    let tailCut = 0;
    const firstNewline = tail.indexOf(0x0a);
    if (firstNewline >= 0 && firstNewline < tail.length * 0.25) tailCut = firstNewline + 1;
    const elidedBytes = elided + (head.length - headCut) + tailCut;
    const headText = clean(decodeHead(head.subarray(0, headCut)));
    const tailText = clean(decodeTail(tail.subarray(tailCut)));
    const marker = `[… ${elidedBytes} bytes of output elided (${this.#total} bytes in all; the first and last ${headCut + tail.length - tailCut} are shown) …]`;
    const text = `${headText}${headText.endsWith("\n") || headText === "" ? "" : "\n"}${marker}\n${tailText}`;
    return { text, totalBytes: this.#total, elidedBytes };
  }
}

function decodeAll(bytes: Buffer): string {
  return bytes.toString("utf8");
}

/** Decodes a head cut, dropping a character split by the cut instead of showing U+FFFD. */
function decodeHead(bytes: Buffer): string {
  return new StringDecoder("utf8").write(bytes);
}

/** Decodes a tail cut, skipping the continuation bytes of a character that started before it. */
function decodeTail(bytes: Buffer): string {
  let start = 0;
  while (start < bytes.length && start < 4 && ((bytes[start] as number) & 0xc0) === 0x80) start++;
  return bytes.subarray(start).toString("utf8");
}
