/**
 * The bounded output of a background command, addressed by absolute character offsets: offset 0
 * is the first character the command ever printed. When the log is full the oldest text is
 * dropped; a reader whose cursor points into dropped text learns how much it missed.
 */
export class OutputLog {
  readonly capacity: number;
  readonly #chunks: string[] = [];
  /** Absolute offset of the first character still kept. */
  #start = 0;
  /** Absolute offset just after the last character ever appended. */
  #end = 0;

  constructor(capacity: number) {
    this.capacity = capacity;
  }

  get start(): number {
    return this.#start;
  }

  get end(): number {
    return this.#end;
  }

  append(text: string): void {
    if (text === "") return;
    this.#end += text.length;
    const last = this.#chunks.length - 1;
    // Small writes (a line at a time) are merged so the chunk list stays short.
    if (last >= 0 && (this.#chunks[last] as string).length < 8192) this.#chunks[last] += text;
    else this.#chunks.push(text);
    let excess = this.#end - this.#start - this.capacity;
    while (excess > 0) {
      const first = this.#chunks[0] as string;
      if (first.length <= excess) {
        this.#chunks.shift();
        this.#start += first.length;
        excess -= first.length;
      } else {
        this.#chunks[0] = first.slice(excess);
        this.#start += excess;
        excess = 0;
      }
    }
  }

  /** The kept text between two absolute offsets (clamped to what is kept). */
  slice(from: number, to: number = this.#end): string {
    from = Math.max(from, this.#start);
    to = Math.min(to, this.#end);
    if (to <= from) return "";
    const parts: string[] = [];
    let offset = this.#start;
    for (const chunk of this.#chunks) {
      const chunkEnd = offset + chunk.length;
      if (chunkEnd > from && offset < to) {
        parts.push(chunk.slice(Math.max(0, from - offset), Math.min(chunk.length, to - offset)));
      }
      if (chunkEnd >= to) break;
      offset = chunkEnd;
    }
    return parts.join("");
  }

  /** The absolute offset where the line holding `position` starts, as far back as the log keeps. */
  lineStart(position: number): number {
    const back = this.slice(Math.max(this.#start, position - 64 * 1024), position);
    const newline = back.lastIndexOf("\n");
    return newline < 0 ? position - back.length : position - back.length + newline + 1;
  }
}
