/**
 * Streaming removal of terminal noise (ANSI escapes split across chunks). The one-shot functions
 * live in core, shared with notebook outputs.
 */
import { stripAnsi } from "@toolbelt/core/internal";

export { collapseCarriageReturns, stripAnsi } from "@toolbelt/core/internal";

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
