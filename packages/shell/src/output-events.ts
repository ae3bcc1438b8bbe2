import { StringDecoder } from "node:string_decoder";
import { AnsiStripper } from "./ansi.js";

/** How often streamed output is sent, and how much of it one interval may carry. */
const INTERVAL_MS = 50;
const MAX_CHARS = 16 * 1024;

/**
 * Turns a foreground command's raw output into coalesced `shell_output` data: decoded, stripped of
 * escapes unless under a pty, at most MAX_CHARS per INTERVAL_MS (a flood says how many bytes it skipped;
 * the result still keeps head and tail). A person watching sees progress instead of silence.
 */
export class OutputEvents {
  readonly #decoder = new StringDecoder("utf8");
  readonly #stripper: AnsiStripper | undefined;
  readonly #send: (data: string) => void;
  readonly #note: string;
  #pending = "";
  #dropped = 0;
  /** Raw bytes decoded in this interval. */
  #taken = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(send: (data: string) => void, options: { tty: boolean; droppedNote: string }) {
    this.#send = send;
    this.#stripper = options.tty ? undefined : new AnsiStripper();
    this.#note = options.droppedNote;
  }

  push(chunk: Buffer): void {
    this.#timer ??= setTimeout(() => this.#flush(), INTERVAL_MS);
    // Past MAX_CHARS bytes in an interval it only counts: a 1 GB flood is not decoded to be dropped.
    if (this.#taken >= MAX_CHARS) {
      this.#dropped += chunk.length;
      return;
    }
    this.#taken += chunk.length;
    let text = this.#decoder.write(chunk);
    if (this.#stripper) text = this.#stripper.push(text);
    const room = MAX_CHARS - this.#pending.length;
    this.#pending += text.slice(0, room);
    if (text.length > room) this.#dropped += Buffer.byteLength(text.slice(room));
  }

  /** Sends what is left; nothing is sent after this. */
  end(): void {
    const rest = this.#decoder.end() + (this.#stripper?.flush() ?? "");
    if (rest) this.#pending += rest.slice(0, Math.max(0, MAX_CHARS - this.#pending.length));
    this.#flush();
  }

  #flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#taken = 0;
    if (!this.#pending && !this.#dropped) return;
    const note = this.#dropped ? `\n[… ${this.#dropped} bytes not streamed; ${this.#note} …]\n` : "";
    const data = this.#pending + note;
    this.#pending = "";
    this.#dropped = 0;
    this.#send(data);
  }
}
