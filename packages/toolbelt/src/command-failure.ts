import type { Payload } from "@toolbelt/core";

/** What the shell answers for a command it could not run: not found (127) or not executable (126). */
const NOT_STARTED_EXIT_CODES = new Set([126, 127]);

type ShellOutcome = {
  exit_code?: number | null;
  signal?: string;
  timed_out?: boolean;
  timeout_seconds?: number;
};

/**
 * Why a shell result counts as a failed command (non-zero exit, a signal, the timeout), or
 * undefined. CI branches on the CLI's exit code, and `npm test` failing must fail the job.
 */
export function commandFailure(payload: Payload): string | undefined {
  if (payload.kind !== "shell_result") return undefined;
  const p = payload as ShellOutcome;
  if (p.timed_out) return `timed out after ${p.timeout_seconds ?? "its"} s`;
  if (p.signal) return `ended by ${p.signal}`;
  if (p.exit_code !== 0) return `exit code ${p.exit_code}`;
  return undefined;
}

/**
 * Whether a shell result is a command that never did its work: it timed out, or the shell could not
 * start it (126, 127). Unlike a non-zero exit, that is a failure whatever the caller chose.
 */
export function commandDidNotRun(payload: Payload): boolean {
  if (payload.kind !== "shell_result") return false;
  const p = payload as ShellOutcome;
  return p.timed_out === true || (typeof p.exit_code === "number" && NOT_STARTED_EXIT_CODES.has(p.exit_code));
}
