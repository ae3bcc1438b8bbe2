import { normaliseError, ToolbeltError } from "@toolbelt/core";
import { writeLine } from "../output.js";

/** A usage error: exit code 2. */
export class UsageError extends Error {}

export const EXIT_OK = 0;
export const EXIT_TOOL_ERROR = 1;
export const EXIT_USAGE = 2;

/** What a thrown error means for the exit code (and what the caller is told). */
export function exitCodeOf(error: unknown): number {
  if (error instanceof UsageError) {
    process.stderr.write(`toolbelt: ${error.message}\nRun toolbelt --help for usage.\n`);
    return EXIT_USAGE;
  }
  const e = normaliseError(error);
  // Config and plugin problems are the caller's to fix: usage errors, on stderr like a bad flag.
  if (ToolbeltError.isInstance(error) && ["EINVAL_CONFIG", "EPLUGIN"].includes(e.code)) {
    process.stderr.write(`toolbelt: ${e.code}: ${e.message}\n`);
    return EXIT_USAGE;
  }
  writeLine(e.toPayload());
  process.stderr.write(`toolbelt: ${e.code}: ${e.message}\n`);
  return EXIT_TOOL_ERROR;
}
