import { defineTool, ToolbeltError, z } from "@toolbelt/core";
import { testLinesSafely } from "@toolbelt/core/internal";
import { collapseCarriageReturns } from "./ansi.js";
import type { BackgroundShell } from "./background-shell.js";
import { savedOutputFields } from "./output-saver.js";
import {
  type ShellSessionList,
  type ShellSessionView,
  shellSessionListPayload,
  shellSessionPayload,
} from "./payloads.js";
import { renderShellSessionList, renderShellSessionView } from "./result-text.js";
import { noteNetwork } from "./sandbox-denials.js";
import { ShellState } from "./shell-state.js";

export const MAX_WAIT_MS = 30_000;
const DEFAULT_READ_WAIT_MS = 1000;
const DEFAULT_WRITE_WAIT_MS = 2000;
/** After a kill: time for the last output of the dying group to come in. */
const KILL_DRAIN_MS = 200;

export const shellSessionInput = z.object({
  operation: z
    .enum(["read", "write", "kill", "list"])
    .describe(
      "read: new output since a cursor; write: send input and read the reply; kill: end the process group; list: all sessions.",
    ),
  shell_id: z
    .string()
    .optional()
    .describe("The session, as returned by shell with run_in_background (not needed for list)."),
  input: z.string().optional().describe("write: the text to send to the command's stdin."),
  newline: z.boolean().default(true).describe("write: append Enter after input."),
  cursor: z
    .number()
    .int()
    .nonnegative()
    .optional()
    .describe(
      "Read from this output offset (from an earlier reply's cursor); default: where the last read stopped.",
    ),
  filter: z
    .string()
    .optional()
    .describe(
      "A regex (or /regex/flags): show only matching lines (read and write then wait for a matching line). It narrows what is shown and nothing else: the cursor moves exactly as without it, and unmatched lines stay readable from an earlier cursor.",
    ),
  wait_ms: z
    .number()
    .int()
    .min(0)
    .max(MAX_WAIT_MS)
    .optional()
    .describe(
      `How long to wait for output (for read: until new output, or a line matching filter, arrives; for write: for the reply to settle). At most ${MAX_WAIT_MS}.`,
    ),
});

export type ShellSessionInput = z.output<typeof shellSessionInput>;

// mewbo's spec: a read without a cursor returns everything still retained, so a filtered read can
// never hide lines from the next unfiltered one.
const mewboInput = shellSessionInput.extend({
  cursor: z
    .number()
    .int()
    .nonnegative()
    .optional()
    .describe(
      "read: from this output offset (from an earlier reply's cursor); default: all output still retained. write/kill: where the reply starts (default: where the last read stopped).",
    ),
});

function compileFilter(filter: string): RegExp {
  const literal = /^\/(.*)\/([dgimsuvy]*)$/s.exec(filter);
  try {
    // g and y make test() stateful; a line filter never needs them.
    return literal
      ? new RegExp(literal[1] as string, (literal[2] as string).replace(/[gy]/g, ""))
      : new RegExp(filter);
  } catch (error) {
    throw new ToolbeltError(
      "EINVAL_INPUT",
      `filter is not a valid regular expression: ${(error as Error).message}`,
      {
        details: { field: "filter" },
      },
    );
  }
}

/** Complete lines of the output between two offsets, each in full even if it began before `from`. */
function linesBetween(shell: BackgroundShell, from: number, to: number): string[] {
  const text = collapseCarriageReturns(shell.log.slice(shell.log.lineStart(from), to));
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  return lines;
}

/**
 * A readiness check for waits with a filter: is there a line matching `re` in the reply window
 * (`maxChars` from where the read starts), or is that window full so the read must deliver it
 * anyway? Each call scans only what arrived since the previous one (plus the line in progress),
 * so a flood during a long wait costs linear time.
 */
function lineMatcher(shell: BackgroundShell, filter: Filter, maxChars: number): (since: number) => boolean {
  let scanned: number | undefined;
  return (since) => {
    if (filter.failed) return true;
    const begin = Math.max(since, shell.log.start);
    const windowEnd = Math.min(shell.log.end, begin + maxChars);
    if (shell.log.end - begin >= maxChars) return true;
    const lines = linesBetween(shell, Math.max(scanned ?? begin, begin), windowEnd);
    scanned = windowEnd;
    try {
      return matchLines(filter, lines).length > 0;
    } catch (error) {
      // Over budget: end the wait now; the reply is the error.
      filter.failed = error;
      return true;
    }
  };
}

/**
 * A filter and, once it has run out of its regex budget, that error: a pattern that backtracks
 * catastrophically is given one budget per call, not one per check.
 */
type Filter = { source: string; re: RegExp; failed?: unknown };

/** The lines the filter keeps, matched off the main thread under REGEX_BUDGET_MS. */
function matchLines(filter: Filter, lines: string[]): string[] {
  if (filter.failed) throw filter.failed;
  const keep = testLinesSafely(filter.re, lines, { what: "filter" });
  return lines.filter((_line, i) => keep[i]);
}

function view(
  shell: BackgroundShell,
  operation: ShellSessionView["operation"],
  from: number,
  maxChars: number,
  filter: Filter | undefined,
): ShellSessionView {
  const log = shell.log;
  const begin = Math.min(Math.max(from, log.start), log.end);
  const missed = from < log.start ? log.start - from : 0;
  const end = Math.min(log.end, begin + maxChars);
  // Filtered before the cursor moves: a filter over its budget leaves the output unread.
  const lines = filter && begin < end ? linesBetween(shell, begin, end) : [];
  const matched = filter ? matchLines(filter, lines) : [];
  shell.readCursor = end;
  shell.lastActivity = Date.now();
  const result: ShellSessionView = {
    kind: "shell_session",
    operation,
    shell_id: shell.id,
    command: shell.command,
    status: shell.status,
    exit_code: shell.exitCode,
    output: "",
    cursor: end,
    from_cursor: from,
    tty: shell.tty,
    sandbox: shell.sandbox,
  };
  if (shell.signal) result.signal = shell.signal;
  if (shell.protectedChanged.length) result.protected_changed = shell.protectedChanged;
  if (missed > 0) result.missed_characters = missed;
  if (log.end > end) result.remaining_characters = log.end - end;
  if (shell.saver) Object.assign(result, savedOutputFields(shell.saver));
  if (filter) {
    result.output = matched.join("\n");
    result.filter = filter.source;
    result.matched_lines = matched.length;
    result.total_lines = lines.length;
  } else {
    result.output = collapseCarriageReturns(log.slice(begin, end));
  }
  // The same note a foreground command gets: a refused connection is network off, not a bug.
  noteNetwork(result, shell.network, result.output, shell.proxy?.refused());
  return result;
}

export const shellSessionTool = defineTool({
  name: "shell_session",
  family: "shell",
  access: "execute",
  description: [
    "Works with commands started by shell with run_in_background: read their output incrementally from a cursor,",
    "write to their stdin (the reply is read back in the same call), kill them (the whole process group), or list them.",
    "Output dropped from the bounded buffer before it was read is reported as missed_characters.",
  ].join(" "),
  input: shellSessionInput,
  output: z.discriminatedUnion("kind", [shellSessionPayload, shellSessionListPayload]),
  profiles: { mewbo: { name: "shell_session_tool", input: mewboInput } },
  execute: async (input, ctx): Promise<ShellSessionView | ShellSessionList> => {
    const state = ShellState.of(ctx.session);
    if (input.operation === "list") {
      const now = Date.now();
      return {
        kind: "shell_sessions",
        cap: state.cap,
        sessions: state.list().map((s) => ({
          shell_id: s.id,
          command: s.command,
          status: s.status,
          exit_code: s.exitCode,
          pid: s.pid,
          tty: s.tty,
          unread_characters: Math.max(0, s.log.end - s.readCursor),
          started_at: new Date(s.startedAt).toISOString(),
          idle_ms: now - s.lastActivity,
        })),
      };
    }
    if (!input.shell_id) {
      throw new ToolbeltError("EINVAL_INPUT", `shell_id is required for ${input.operation}`, {
        details: { field: "shell_id" },
      });
    }
    const shell = state.get(input.shell_id);
    const filter: Filter | undefined =
      input.filter === undefined ? undefined : { source: input.filter, re: compileFilter(input.filter) };
    const fromStart = ctx.profile === "mewbo" && input.operation === "read";
    const from = input.cursor ?? (fromStart ? shell.log.start : shell.readCursor);
    const maxChars = ctx.limits.shellOutputMaxChars;
    const ready = filter ? lineMatcher(shell, filter, maxChars) : undefined;

    if (input.operation === "kill") {
      await shell.kill();
      await shell.waitForOutput(shell.log.end, KILL_DRAIN_MS, { ready: () => false });
      return view(shell, "kill", from, maxChars, filter);
    }

    if (input.operation === "write") {
      if (input.input === undefined) {
        throw new ToolbeltError("EINVAL_INPUT", "input is required for write", {
          details: { field: "input" },
        });
      }
      if (!shell.writable) {
        throw new ToolbeltError(
          "EUNAVAILABLE",
          `${shell.id} is ${shell.status}${shell.exitCode === null ? "" : ` (exit code ${shell.exitCode})`}; its input is closed, nothing was written`,
          { details: { shell_id: shell.id, status: shell.status } },
        );
      }
      const before = shell.log.end;
      // A terminal's Enter is a carriage return; a pipe wants a newline.
      shell.write(input.input + (input.newline ? (shell.tty ? "\r" : "\n") : ""));
      // With a filter, the reply is complete when a matching line arrives (a terminal echoes the
      // input first, which must not count as the reply).
      await shell.waitForOutput(before, input.wait_ms ?? DEFAULT_WRITE_WAIT_MS, {
        ...(ready ? { ready } : {}),
        windowChars: maxChars,
      });
      return view(shell, "write", from, maxChars, filter);
    }

    if (!(shell.log.end > from && (!ready || ready(from)))) {
      await shell.waitForOutput(from, input.wait_ms ?? DEFAULT_READ_WAIT_MS, {
        ...(ready ? { ready } : {}),
        windowChars: maxChars,
      });
    }
    return view(shell, "read", from, maxChars, filter);
  },
  render: (payload: ShellSessionView | ShellSessionList) =>
    payload.kind === "shell_sessions" ? renderShellSessionList(payload) : renderShellSessionView(payload),
});
