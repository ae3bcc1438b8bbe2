import { z } from "@toolbelt/core";

// The shell tools' results: one zod source for their types, `session.call()`'s result types and the
// MCP outputSchema. Enumerations are spelled out here; the code that produces them is typed by them.
const shellStatus = z.enum(["running", "exited", "killed"]);
const sandboxStatus = z.enum(["landlock", "unavailable", "off"]);

/** Connections the allow list's proxy refused (agent.shell_network: { allow }). */
const networkRefused = z
  .array(z.object({ host: z.string(), port: z.number().int(), why: z.string() }))
  .optional()
  .describe(
    "connections the proxy of agent.shell_network.allow refused, each host:port once (at most 20), with why",
  );

/** Where the whole output of a command longer than a result shows was saved (see output-saver.ts). */
const savedOutputFields = {
  output_file: z
    .string()
    .optional()
    .describe(
      "absolute path of a file holding the whole output (escape codes stripped), outside the root: read_file and search_files read it in this session; removed when the session closes",
    ),
  output_file_bytes: z.number().int().optional().describe("bytes in `output_file` so far"),
  output_file_note: z
    .string()
    .optional()
    .describe("why `output_file` holds less than the whole output, or why none could be saved"),
};

/** A foreground command that ran to its end (or to its timeout). */
export const shellResultPayload = z.object({
  kind: z.literal("shell_result"),
  command: z.string(),
  cwd: z.string().describe("root-relative working directory"),
  stdout: z
    .string()
    .describe("stdout and stderr merged in the order they were written; head and tail when elided"),
  exit_code: z.number().int().nullable().describe("null when a signal ended the command"),
  signal: z.string().optional(),
  duration_ms: z.number(),
  timed_out: z.boolean().optional().describe("the timeout ended the process group"),
  timeout_seconds: z.number().optional().describe("the limit that ended it, in seconds (with `timed_out`)"),
  output_bytes: z.number().int().describe("bytes the command wrote in all"),
  elided_bytes: z.number().int().optional().describe("bytes dropped from the middle of `stdout`"),
  ...savedOutputFields,
  leftover_processes: z
    .number()
    .int()
    .optional()
    .describe("processes still running after the command exited, which were then ended"),
  tty: z.boolean(),
  sandbox: sandboxStatus,
  sandbox_reason: z.string().optional().describe("why the sandbox is unavailable, in best-effort mode"),
  protected_changed: z
    .array(z.string())
    .optional()
    .describe(
      "protected paths (configs/app.json, .mcp.json, .toolbelt/, .git/hooks/, .git/config, a nested repository's `.git`, a `HEAD`) the command created, changed or removed: a read-only bind cannot cover a file that does not exist yet",
    ),
  sandbox_denied: z
    .array(
      z.object({
        path: z.string().describe("the path as the output named it"),
        why: z.enum(["outside_writable", "outside_readable", "protected_read_only"]),
      }),
    )
    .optional()
    .describe("paths the output says could not be written that the sandbox refuses"),
  sandbox_note: z
    .string()
    .optional()
    .describe(
      "a denial the output reports whose path could not be told apart: what the sandbox lets it write",
    ),
  limits_hit: z
    .array(z.enum(["memory", "file_size"]))
    .optional()
    .describe(
      "the limits the command ran into: `memory` (a process was killed for going over agent.shell_max_memory_mib), `file_size` (a file reached agent.shell_max_file_mib)",
    ),
  limit_note: z.string().optional().describe("what was hit, the limit and the setting that raises it"),
  network_refused: networkRefused,
});

/** A command started with run_in_background. */
export const shellStartedPayload = z.object({
  kind: z.literal("shell_started"),
  shell_id: z.string(),
  command: z.string(),
  cwd: z.string(),
  pid: z.number().int(),
  status: shellStatus,
  tty: z.boolean(),
  sandbox: sandboxStatus,
  sandbox_reason: z.string().optional(),
  evicted: z.array(z.string()).optional().describe("finished sessions dropped to make room"),
  reaped: z.array(z.string()).optional().describe("idle sessions ended to make room"),
});

/** shell_session read / write / kill. */
export const shellSessionPayload = z.object({
  kind: z.literal("shell_session"),
  operation: z.enum(["read", "write", "kill"]),
  shell_id: z.string(),
  command: z.string(),
  status: shellStatus,
  exit_code: z.number().int().nullable(),
  signal: z.string().optional(),
  output: z
    .string()
    .describe("the output from `from_cursor` to `cursor` (narrowed to matching lines with a filter)"),
  cursor: z.number().int().describe("where the next read continues"),
  from_cursor: z.number().int().describe("where this read started"),
  missed_characters: z
    .number()
    .int()
    .optional()
    .describe("output dropped from the bounded log before it was read"),
  remaining_characters: z
    .number()
    .int()
    .optional()
    .describe("output after `cursor` that did not fit in this reply"),
  ...savedOutputFields,
  filter: z.string().optional(),
  matched_lines: z.number().int().optional(),
  total_lines: z.number().int().optional(),
  tty: z.boolean(),
  sandbox: sandboxStatus,
  protected_changed: z
    .array(z.string())
    .optional()
    .describe("protected paths changed since the background command started (checked once it has exited)"),
  sandbox_note: z
    .string()
    .optional()
    .describe(
      "set when this output shows a connection that network off refused (agent.shell_network: off), or the allow list's proxy refused a host",
    ),
  network_refused: networkRefused,
});

const shellSessionSummary = z.object({
  shell_id: z.string(),
  command: z.string(),
  status: shellStatus,
  exit_code: z.number().int().nullable(),
  pid: z.number().int(),
  tty: z.boolean(),
  unread_characters: z.number().int(),
  started_at: z.string(),
  idle_ms: z.number(),
});

/** shell_session list. */
export const shellSessionListPayload = z.object({
  kind: z.literal("shell_sessions"),
  cap: z.number().int(),
  sessions: z.array(shellSessionSummary),
});

export type ShellResult = z.output<typeof shellResultPayload>;
export type ShellStarted = z.output<typeof shellStartedPayload>;
export type ShellSessionView = z.output<typeof shellSessionPayload>;
export type ShellSessionSummary = z.output<typeof shellSessionSummary>;
export type ShellSessionList = z.output<typeof shellSessionListPayload>;
