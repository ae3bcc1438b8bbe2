import { normaliseError } from "@toolbelt/core";
import { readFileInRoot } from "@toolbelt/core/internal";

export const INSTRUCTION_FILES = ["AGENTS.md", "CLAUDE.md"] as const;
export const MAX_INSTRUCTION_CHARS = 40_000;
/**
 * Bytes of an instruction file read at most: 40,000 characters of any UTF-8 text fit in them (a
 * character is at most 4 bytes), so a file is cut only where it has more than that.
 */
export const MAX_INSTRUCTION_BYTES = MAX_INSTRUCTION_CHARS * 4;

export type Instructions = {
  file: string;
  content: string;
  /**
   * The file's length in characters; when `bytes` is set the file was larger than
   * MAX_INSTRUCTION_BYTES and this counts only the characters of the part that was read.
   */
  chars: number;
  truncated: boolean;
  /** The file's size in bytes, given when it was too large to read whole. */
  bytes?: number;
};

/** A project file that was there but not read, and why (for the model: it may ask the user). */
export type SkippedFile = { file: string; reason: string };

/**
 * The project's AGENTS.md, else its CLAUDE.md, read as core reads any checkout file: only if its
 * real path stays inside `root` (a symlink leaving the project is never followed), only a regular
 * file (a FIFO cannot hang the call), at most MAX_INSTRUCTION_BYTES. A file that is there but was
 * refused is listed in `skipped`, and the next one is tried.
 */
export function readInstructions(root: string): { instructions?: Instructions; skipped: SkippedFile[] } {
  const skipped: SkippedFile[] = [];
  for (const name of INSTRUCTION_FILES) {
    let read: ReturnType<typeof readFileInRoot>;
    try {
      read = readFileInRoot(root, name, { maxBytes: MAX_INSTRUCTION_BYTES });
    } catch (error) {
      const refusal = normaliseError(error);
      if (refusal.code !== "ENOENT") skipped.push({ file: name, reason: refusal.message });
      continue;
    }
    const text = read.bytes.toString("utf8");
    const truncated = read.truncated || text.length > MAX_INSTRUCTION_CHARS;
    return {
      instructions: {
        file: name,
        content: truncated ? text.slice(0, MAX_INSTRUCTION_CHARS) : text,
        chars: text.length,
        truncated,
        ...(read.truncated ? { bytes: read.size } : {}),
      },
      skipped,
    };
  }
  return { skipped };
}

/** The project's AGENTS.md, else its CLAUDE.md; undefined when it has neither (see readInstructions). */
export function loadInstructions(root: string): Instructions | undefined {
  return readInstructions(root).instructions;
}
