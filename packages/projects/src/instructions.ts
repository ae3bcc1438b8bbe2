import { readFileSync } from "node:fs";
import path from "node:path";

export const INSTRUCTION_FILES = ["AGENTS.md", "CLAUDE.md"] as const;
export const MAX_INSTRUCTION_CHARS = 40_000;

export type Instructions = { file: string; content: string; chars: number; truncated: boolean };

/** The project's AGENTS.md, else its CLAUDE.md; undefined when it has neither. */
export function loadInstructions(root: string): Instructions | undefined {
  for (const name of INSTRUCTION_FILES) {
    let text: string;
    try {
      text = readFileSync(path.join(root, name), "utf8");
    } catch {
      continue;
    }
    const truncated = text.length > MAX_INSTRUCTION_CHARS;
    return {
      file: name,
      content: truncated ? text.slice(0, MAX_INSTRUCTION_CHARS) : text,
      chars: text.length,
      truncated,
    };
  }
  return undefined;
}
