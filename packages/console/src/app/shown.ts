// The text the console draws for strings a file, a command or the model chose. It is core's escape
// (imported through text-format, the one core module the page bundles), so bidi overrides,
// zero-width characters and newlines cannot reorder, hide or split what a person reads.
import { escapeName, escapePath, escapeText, visibleText } from "@toolbelt/core";

/** A line (match text, a note, a question): control and invisible characters escaped, tabs kept. */
export const shownLine = (text: string): string => escapeText(text, { keep: "\t", reversible: false });

/** A command or approval summary: escaped, and long space runs counted (`␠×480`). */
export const shownCommand = (text: string): string => visibleText(text, { reversible: false }).text;

/** A file name as listings print it. */
export const shownName = (name: string): string => escapeName(name);

/** A directory path as listings print it. */
export const shownDir = (dir: string): string => escapePath(dir);

/** Pretty JSON (an approval's input) with the characters JSON leaves raw (bidi, zero-width) escaped. */
export const shownJson = (value: unknown): string =>
  escapeText(JSON.stringify(value, null, 2), { keep: "\n", reversible: false });
