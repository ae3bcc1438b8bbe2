import type { ShellStatus } from "./background-shell.js";
import type { SandboxStatus } from "./sandbox.js";
import type { SandboxDenial } from "./sandbox-denials.js";

/** A foreground command that ran to its end (or to its timeout). */
export type ShellResult = {
  kind: "shell_result";
  command: string;
  /** Root-relative working directory. */
  cwd: string;
  /** stdout and stderr merged in the order they were written; head and tail when elided. */
  stdout: string;
  /** null when a signal ended the command. */
  exit_code: number | null;
  signal?: string;
  duration_ms: number;
  /** The timeout ended the process group. */
  timed_out?: boolean;
  /** The limit that ended it, in seconds (with `timed_out`). */
  timeout_seconds?: number;
  /** Bytes the command wrote in all. */
  output_bytes: number;
  /** Bytes dropped from the middle of `stdout`. */
  elided_bytes?: number;
  /** Processes still running after the command exited, which were then ended. */
  leftover_processes?: number;
  tty: boolean;
  sandbox: SandboxStatus;
  /** Why the sandbox is unavailable, in best-effort mode. */
  sandbox_reason?: string;
  /**
   * Protected paths (configs/app.json, .mcp.json, .toolbelt/, .git/hooks/, .git/config, a nested
   * repository's `.git`, a `HEAD`) the command created, changed or removed: a read-only bind cannot
   * cover a file that does not exist yet.
   */
  protected_changed?: string[];
  /**
   * Paths the output says could not be written that the sandbox refuses (outside the writable paths,
   * or protected and read-only), read from EACCES/EPERM/"Permission denied"/"Read-only file system".
   */
  sandbox_denied?: SandboxDenial[];
  /** A denial the output reports whose path could not be told apart: what the sandbox lets it write. */
  sandbox_note?: string;
  /**
   * The limits the command ran into: `memory` (a process was killed for going over
   * agent.shell_max_memory_mib), `file_size` (a file reached agent.shell_max_file_mib).
   */
  limits_hit?: Array<"memory" | "file_size">;
  /** What was hit, the limit and the setting that raises it. */
  limit_note?: string;
};

/** A command started with run_in_background. */
export type ShellStarted = {
  kind: "shell_started";
  shell_id: string;
  command: string;
  cwd: string;
  pid: number;
  status: ShellStatus;
  tty: boolean;
  sandbox: SandboxStatus;
  sandbox_reason?: string;
  /** Finished sessions dropped to make room. */
  evicted?: string[];
  /** Idle sessions ended to make room. */
  reaped?: string[];
};

/** shell_session read / write / kill. */
export type ShellSessionView = {
  kind: "shell_session";
  operation: "read" | "write" | "kill";
  shell_id: string;
  command: string;
  status: ShellStatus;
  exit_code: number | null;
  signal?: string;
  /** The output from `from_cursor` to `cursor` (narrowed to matching lines with a filter). */
  output: string;
  /** Where the next read continues. */
  cursor: number;
  /** Where this read started. */
  from_cursor: number;
  /** Output dropped from the bounded log before it was read. */
  missed_characters?: number;
  /** Output after `cursor` that did not fit in this reply. */
  remaining_characters?: number;
  filter?: string;
  matched_lines?: number;
  total_lines?: number;
  tty: boolean;
  sandbox: SandboxStatus;
  /** Protected paths changed since the background command started (checked once it has exited). */
  protected_changed?: string[];
  /** Set when this output shows a connection that network off refused (agent.shell_network: off). */
  sandbox_note?: string;
};

export type ShellSessionSummary = {
  shell_id: string;
  command: string;
  status: ShellStatus;
  exit_code: number | null;
  pid: number;
  tty: boolean;
  unread_characters: number;
  started_at: string;
  idle_ms: number;
};

/** shell_session list. */
export type ShellSessionList = {
  kind: "shell_sessions";
  cap: number;
  sessions: ShellSessionSummary[];
};
