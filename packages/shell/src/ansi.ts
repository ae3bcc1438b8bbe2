/**
 * Terminal noise removal for output read by a model: ANSI escape sequences, stray control
 * characters and carriage-return redraws (progress bars).
 */

// CSI (ESC [ or the 8-bit 0x9b) with parameters, intermediates and a final byte; string commands
// (OSC, DCS, SOS, PM, APC) up to their terminator; charset designations; other two-byte escapes.
const ESCAPES =
  /\x1b\[[0-?]*[ -/]*[@-~]|\x9b[0-?]*[ -/]*[@-~]|\x1b[\]PX^_][\s\S]*?(?:\x07|\x1b\\|\x9c)|\x1b[()*+\-./][\s\S]|\x1b[ -/]*[0-~]/g;
// C0 controls other than tab, newline and carriage return, and DEL.
const CONTROLS = /[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]/g;

/** Removes escape sequences and control characters (keeps `\t`, `\n`, `\r`). */
export function stripAnsi(text: string): string {
  if (!/[\x00-\x08\x0b-\x1f\x7f\x9b]/.test(text)) return text;
  return text.replace(ESCAPES, "").replace(CONTROLS, "");
}

/**
 * Applies carriage returns the way a terminal shows them: `\r\n` is a newline, and text after a
 * lone `\r` replaces what came before it on that line (a progress bar keeps only its last state).
 */
export function collapseCarriageReturns(text: string): string {
  if (!text.includes("\r")) return text;
  return text
    .replace(/\r+\n/g, "\n")
    .split("\n")
    .map((line) => {
      if (!line.includes("\r")) return line;
      const parts = line.split("\r").filter((part) => part !== "");
      return parts.at(-1) ?? "";
    })
    .join("\n");
}

// An escape that may still be incomplete at the end of a chunk is held back up to this length;
// anything longer is not a real sequence and is passed through to be stripped as garbage.
const MAX_PENDING = 512;

/**
 * Streaming form of stripAnsi for output that arrives in chunks: an escape sequence or a `\r\n`
 * split across two chunks is held back until the next chunk completes it.
 */
export class AnsiStripper {
  #pending = "";

  push(chunk: string): string {
    let text = this.#pending + chunk;
    this.#pending = "";
    const hold = heldBackFrom(text);
    if (hold < text.length) {
      this.#pending = text.slice(hold);
      text = text.slice(0, hold);
    }
    return stripAnsi(text);
  }

  /** The held-back remainder, at the end of the stream. */
  flush(): string {
    const rest = this.#pending;
    this.#pending = "";
    return stripAnsi(rest);
  }
}

function heldBackFrom(text: string): number {
  const start = Math.max(text.lastIndexOf("\x1b"), text.lastIndexOf("\x9b"));
  if (start >= 0 && text.length - start <= MAX_PENDING && !escapeComplete(text.slice(start))) return start;
  // Keep a trailing carriage return with the newline that may follow it.
  if (text.endsWith("\r")) return text.length - 1;
  return text.length;
}

/** Whether `tail`, which starts with an escape introducer, already holds the whole sequence. */
function escapeComplete(tail: string): boolean {
  if (tail.startsWith("\x9b")) return /^\x9b[0-?]*[ -/]*[@-~]/.test(tail);
  const kind = tail[1];
  if (kind === undefined) return false;
  if (kind === "[") return /^\x1b\[[0-?]*[ -/]*[@-~]/.test(tail);
  if ("]PX^_".includes(kind)) return /^\x1b[\]PX^_][\s\S]*?(?:\x07|\x1b\\|\x9c)/.test(tail);
  if ("()*+-./".includes(kind)) return tail.length >= 3;
  return /^\x1b[ -/]*[0-~]/.test(tail);
}
