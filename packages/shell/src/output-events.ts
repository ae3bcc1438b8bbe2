import { StringDecoder } from "node:string_decoder";
import { AnsiStripper } from "./ansi.js";

/** How often streamed output is sent, and how much of it one interval may carry. */
const INTERVAL_MS = 50;
const MAX_CHARS = 16 * 1024;

/**
 * Coalesces text for `shell_output` events: at most MAX_CHARS per INTERVAL_MS, the rest counted and
 * named in a note. Foreground commands (through OutputEvents) and background sessions share it.
 */
export class EventCoalescer {
  readonly #send: (data: string) => void;
  readonly #droppedNote: (count: number) => string;
  readonly #onFlush: (() => void) | undefined;
  readonly #measure: (text: string) => number;
  #pending = "";
  #dropped = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    send: (data: string) => void,
    droppedNote: (count: number) => string,
    options: { onFlush?: () => void; measure?: (text: string) => number } = {},
  ) {
    this.#send = send;
    this.#droppedNote = droppedNote;
    this.#onFlush = options.onFlush;
    this.#measure = options.measure ?? ((text) => text.length);
  }

  /** Queues text; what does not fit this interval is counted as dropped (characters, unless `measure` says). */
  add(text: string): void {
    if (!text) return;
    this.#arm();
    const room = MAX_CHARS - this.#pending.length;
    if (room > 0) this.#pending += text.slice(0, room);
    if (text.length > room) this.#dropped += this.#measure(text.slice(Math.max(room, 0)));
  }

  /** Counts output that was not even decoded (a flood past this interval's budget). */
  drop(count: number): void {
    this.#arm();
    this.#dropped += count;
  }

  /** Sends what is pending now. */
  flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#onFlush?.();
    if (!this.#pending && !this.#dropped) return;
    const note = this.#dropped ? `\n[… ${this.#droppedNote(this.#dropped)} …]\n` : "";
    const data = this.#pending + note;
    this.#pending = "";
    this.#dropped = 0;
    this.#send(data);
  }

  /** Stops the timer without sending (the session is gone). */
  cancel(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(): void {
    this.#timer ??= setTimeout(() => this.flush(), INTERVAL_MS);
  }
}

/**
 * Turns a foreground command's raw output into coalesced `shell_output` data: decoded, stripped of
 * escapes unless under a pty, at most MAX_CHARS per INTERVAL_MS (a flood says how many bytes it skipped;
 * the result still keeps head and tail). A person watching sees progress instead of silence.
 */
export class OutputEvents {
  readonly #decoder = new StringDecoder("utf8");
  readonly #stripper: AnsiStripper | undefined;
  readonly #events: EventCoalescer;
  /** Raw bytes decoded in this interval. */
  #taken = 0;

  constructor(send: (data: string) => void, options: { tty: boolean; droppedNote: string }) {
    this.#stripper = options.tty ? undefined : new AnsiStripper();
    this.#events = new EventCoalescer(
      send,
      (count) => `${count} bytes not streamed; ${options.droppedNote}`,
      {
        onFlush: () => {
          this.#taken = 0;
        },
        measure: (text) => Buffer.byteLength(text),
      },
    );
  }

  push(chunk: Buffer): void {
    // Past MAX_CHARS bytes in an interval it only counts: a 1 GB flood is not decoded to be dropped.
    if (this.#taken >= MAX_CHARS) {
      this.#events.drop(chunk.length);
      return;
    }
    this.#taken += chunk.length;
    let text = this.#decoder.write(chunk);
    if (this.#stripper) text = this.#stripper.push(text);
    this.#events.add(text);
  }

  /** Sends what is left; nothing is sent after this. */
  end(): void {
    this.#events.add(this.#decoder.end() + (this.#stripper?.flush() ?? ""));
    this.#events.flush();
  }
}
