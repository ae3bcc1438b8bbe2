import { StringDecoder } from "node:string_decoder";
import type { SavedOutputFile, SavedOutputs } from "@toolbelt/core";
import { AnsiStripper } from "./ansi.js";

/** Where a command's whole output was saved, as a result reports it. */
export interface SavedOutputInfo {
  /** Absolute path of the file (outside the root; read_file and search_files read it). */
  path: string;
  /** Bytes in it. */
  bytes: number;
  /** Set when the file holds less than the whole output: why. */
  note?: string;
}

/**
 * Keeps the whole output of one command (foreground or background) when it is longer than a result
 * shows: each chunk is decoded and stripped of escape sequences and stray control characters as it
 * arrives (what is saved reads as text), held in memory up to `threshold` characters, and once the
 * output passes that, written to a file of the session's saved output (core's SavedOutputs, which
 * caps it). Output that stays under the threshold is never written anywhere.
 */
export class OutputSaver {
  readonly #outputs: SavedOutputs;
  readonly #label: string;
  readonly #threshold: number;
  readonly #decoder = new StringDecoder("utf8");
  readonly #stripper = new AnsiStripper();
  #held: string[] = [];
  #heldChars = 0;
  #file: SavedOutputFile | undefined;
  /** Nothing is saved: turned off, or no file could be made (`failure` says why). */
  #off = false;
  /** Why no file could be made. */
  #failure: string | undefined;
  #ended = false;
  /** Bytes the command printed so far, and at most how many of them are saved. */
  #printed = 0;
  readonly #max: number;
  /** Why the saved file ends before the output did (the cap on what is saved). */
  #cut: string | undefined;

  constructor(outputs: SavedOutputs, options: { label: string; threshold: number }) {
    this.#outputs = outputs;
    this.#label = options.label;
    this.#threshold = options.threshold;
    this.#max = outputs.maxBytes;
    this.#off = this.#max === 0;
  }

  push(chunk: Buffer): void {
    this.#printed += chunk.length;
    // Past the cap (or with nothing to save into) the rest of a flood costs nothing: the cap is on
    // what the command printed, so a flood of escape codes or NULs is not cleaned byte by byte.
    if (this.#ended || this.#off || this.#cut || (this.#file && !this.#file.open)) return;
    const over = this.#printed - this.#max;
    if (over > 0) {
      this.#cut = `only the first ${this.#max} bytes the command printed were saved (limits.shellOutputSavedMaxBytes)`;
      chunk = chunk.subarray(0, Math.max(0, chunk.length - over));
    }
    this.#take(this.#stripper.push(this.#decoder.write(chunk)));
  }

  /**
   * The output ended. `force`: save what is held even under the threshold (the result left some
   * of the output out). Returns where it is saved, if anywhere.
   */
  finish(force: boolean): SavedOutputInfo | undefined {
    if (!this.#ended) {
      this.#ended = true;
      this.#take(this.#stripper.push(this.#decoder.end()) + this.#stripper.flush());
      if (force && !this.#file && this.#heldChars > 0) this.#open();
      this.#file?.end();
      this.#held = [];
    }
    return this.saved;
  }

  /** Where the output is saved so far (a running background command's grows), if anywhere. */
  get saved(): SavedOutputInfo | undefined {
    if (!this.#file) return undefined;
    const info: SavedOutputInfo = { path: this.#file.path, bytes: this.#file.bytes };
    const note = this.#file.stoppedBecause ?? this.#cut;
    if (note) info.note = note;
    return info;
  }

  /** Why the output had to be saved but could not be. */
  get failure(): string | undefined {
    return this.#failure;
  }

  #take(text: string): void {
    if (text === "") return;
    if (this.#file) {
      this.#file.write(Buffer.from(text, "utf8"));
      return;
    }
    if (this.#off) return;
    this.#held.push(text);
    this.#heldChars += text.length;
    if (this.#heldChars > this.#threshold) this.#open();
  }

  /** Creates the file and writes what is held into it. */
  #open(): void {
    try {
      this.#file = this.#outputs.create(this.#label);
    } catch (error) {
      this.#off = true;
      this.#failure = `the whole output could not be saved: ${(error as Error).message}`;
    }
    if (!this.#file) {
      this.#held = [];
      return;
    }
    for (const text of this.#held) this.#file.write(Buffer.from(text, "utf8"));
    this.#held = [];
  }
}

/** A result's `output_file` fields for what `saver` saved (none when nothing was). */
export function savedOutputFields(saver: OutputSaver): {
  output_file?: string;
  output_file_bytes?: number;
  output_file_note?: string;
} {
  const saved = saver.saved;
  if (saved)
    return {
      output_file: saved.path,
      output_file_bytes: saved.bytes,
      ...(saved.note ? { output_file_note: saved.note } : {}),
    };
  return saver.failure ? { output_file_note: saver.failure } : {};
}
