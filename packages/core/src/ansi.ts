/**
 * Terminal noise removal for output read by a model: ANSI escape sequences, stray control
 * characters and carriage-return redraws (progress bars). Shared by shell output and notebook
 * outputs (a traceback's colours, a progress bar's redraws).
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
