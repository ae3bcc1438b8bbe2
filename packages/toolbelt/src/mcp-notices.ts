// What `serve --mcp` tells a client about its session beside the answers: log messages
// (`notifications/message`) at the level each event deserves, and progress lines
// (`notifications/progress`) for the call an event belongs to. Pure: the server decides where each goes.
import { type EventOf, escapeText, type ToolbeltEvent } from "@toolbelt/core";

/** MCP's log levels, least severe first (RFC 5424's, as the specification orders them). */
export const LOG_LEVELS = [
  "debug",
  "info",
  "notice",
  "warning",
  "error",
  "critical",
  "alert",
  "emergency",
] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * Until a client sets a level, it hears what needs attention (settings refused, denials, failures),
 * not a line per call.
 */
export const DEFAULT_LOG_LEVEL: LogLevel = "warning";

export function atLeast(level: LogLevel, minimum: LogLevel): boolean {
  return LOG_LEVELS.indexOf(level) >= LOG_LEVELS.indexOf(minimum);
}

export type LogNotice = {
  level: LogLevel;
  /** One line for a person; the other fields name what it is about, never a copy of a payload. */
  data: { message: string; [field: string]: unknown };
};

const MESSAGE_CHARS = 300;
const PROGRESS_CHARS = 200;

/** One line, control characters made visible, cut to `max` characters (the cut said with `…`). */
function line(text: string, max = MESSAGE_CHARS): string {
  const one = escapeText(text.replace(/\s*\n\s*/g, " ⏎ "), { reversible: false });
  return one.length > max ? `${one.slice(0, max)}…` : one;
}

/** `n thing(s)`, the number grouped by thousands. */
function count(n: number, thing: string): string {
  return `${n.toLocaleString("en-US")} ${thing}${n === 1 ? "" : "s"}`;
}

/** A language server's start in words: starting, ready, or why it failed. */
function serverState(event: EventOf<"lsp_server">): string {
  if (event.state === "starting") return `starting language server ${event.server}`;
  if (event.state === "ready") return `language server ${event.server} is ready`;
  return `language server ${event.server} failed to start: ${event.error ?? "no reason given"}`;
}

/**
 * Reads a session's events into log notices. It remembers which tool each pending approval is for,
 * so a denial names the tool (the `approval_resolved` event carries only the request id).
 */
export class SessionNotices {
  readonly #approvals = new Map<string, string>();

  /** The notice for an event, or undefined for events only `debug` shows (as the full event). */
  of(event: ToolbeltEvent): LogNotice | undefined {
    switch (event.type) {
      case "tool_call":
        return {
          level: "info",
          data: { message: `${event.tool} called`, tool: event.tool, call_id: event.call_id },
        };
      case "tool_result": {
        const result = event.result as { kind?: unknown; code?: unknown; message?: unknown };
        if (result.kind === "error") {
          const code = String(result.code);
          return {
            level: "warning",
            data: {
              message: line(`${event.tool} failed: ${code} ${String(result.message ?? "")}`),
              tool: event.tool,
              call_id: event.call_id,
              code,
            },
          };
        }
        return {
          level: "info",
          data: {
            message: `${event.tool} done in ${event.duration_ms} ms (${String(result.kind)})`,
            tool: event.tool,
            call_id: event.call_id,
          },
        };
      }
      case "approval_requested":
        this.#approvals.set(event.request_id, event.tool);
        return {
          level: "notice",
          data: {
            message: line(`${event.tool} waits for approval: ${event.summary}`),
            tool: event.tool,
            request_id: event.request_id,
          },
        };
      case "approval_resolved": {
        const tool = this.#approvals.get(event.request_id) ?? "a call";
        this.#approvals.delete(event.request_id);
        return {
          level: event.approved ? "info" : "warning",
          data: {
            message: line(`${tool} was ${event.approved ? "approved" : "denied"} by ${event.by}`),
            tool,
            request_id: event.request_id,
            approved: event.approved,
          },
        };
      }
      case "config_ignored":
        return {
          level: "warning",
          data: {
            message: line(
              `ignored ${event.ignored.length} project setting${event.ignored.length === 1 ? "" : "s"} (${event.reason}): ${event.ignored
                .map((i) => `${i.key} (${i.source}): ${i.why}`)
                .join("; ")}`,
              2000,
            ),
            ignored: event.ignored.map((i) => i.key),
          },
        };
      case "lsp_server":
        if (event.state === "starting") return undefined;
        return {
          level: event.state === "ready" ? "info" : "warning",
          data: { message: line(serverState(event)), server: event.server, root: event.root },
        };
      case "project_switched":
        return {
          level: "info",
          data: { message: line(`switched to project ${event.key}: ${event.to}`), key: event.key },
        };
      case "tools_bound":
        return {
          level: "info",
          data: {
            message: line(
              `${event.bound.length} tools bound, ${event.deferred.length} deferred (${event.reason})`,
            ),
          },
        };
      default:
        return undefined;
    }
  }
}

/**
 * What a running call's progress says for an event, or undefined when the event is not that call's
 * progress: its command's output (the last line of each batch), what its search found so far, the
 * language server it waits for, or what else it is waiting for.
 */
export function progressOf(event: ToolbeltEvent, callId: string): string | undefined {
  switch (event.type) {
    case "shell_output": {
      if (event.shell_id !== callId) return undefined;
      const last = event.data
        .split(/\r?\n|\r/)
        .map((l) => l.trim())
        .filter(Boolean)
        .at(-1);
      return last === undefined ? undefined : line(last, PROGRESS_CHARS);
    }
    case "search_progress":
      if (event.call_id !== callId) return undefined;
      return `${count(event.matches, "matching line")} in ${count(event.files, "file")} so far`;
    case "lsp_server":
      // Sent in the call that needed the server (a server another call started is not this one's).
      return line(serverState(event), PROGRESS_CHARS);
    case "approval_requested":
      return line(`waiting for approval: ${event.summary}`, PROGRESS_CHARS);
    case "question":
      return "waiting for an answer to a question";
    default:
      return undefined;
  }
}
