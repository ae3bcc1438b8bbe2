import { type HeaderValue, renderText } from "@toolbelt/core";
import type { ShellResult, ShellSessionList, ShellSessionView, ShellStarted } from "./payloads.js";
import type { SandboxDenial } from "./sandbox-denials.js";

/** A header value on one line: commands may span lines. */
function oneLine(text: string, max = 200): string {
  const flat = text.replace(/\r?\n/g, " ⏎ ");
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}

function sandboxHeader(sandbox: string, reason: string | undefined): string {
  return reason ? `${sandbox} (${reason})` : sandbox;
}

/** Where the whole output is, for the `Output-File` header. */
function outputFileHeader(p: {
  output_file?: string | undefined;
  output_file_bytes?: number | undefined;
  output_file_note?: string | undefined;
}): string | undefined {
  if (!p.output_file) return p.output_file_note;
  const what = p.output_file_note
    ? `${p.output_file_bytes ?? 0} bytes; ${p.output_file_note}`
    : `${p.output_file_bytes ?? 0} bytes, the whole output`;
  return `${p.output_file} (${what}; read it with read_file or search it with search_files)`;
}

function denialText(d: SandboxDenial): string {
  if (d.why === "outside_readable")
    return `the sandbox denied access to ${d.path}: outside the paths commands may read or write`;
  return d.why === "protected_read_only"
    ? `the sandbox denied writing ${d.path}: a protected path, read-only to commands`
    : `the sandbox denied writing ${d.path}: outside its writable paths`;
}

export function renderShellResult(p: ShellResult): string {
  const headers: Array<[string, HeaderValue]> = [
    ["Exit-Code", p.exit_code ?? undefined],
    ["Signal", p.signal],
    [
      "Timed-Out",
      p.timed_out
        ? `yes, after the ${p.timeout_seconds ?? "given"} s limit (the \`timeout\` input); the command's process group was ended`
        : undefined,
    ],
    ["Duration-Ms", p.duration_ms],
    ["Cwd", p.cwd],
    ["Tty", p.tty ? "yes" : undefined],
    ["Sandbox", sandboxHeader(p.sandbox, p.sandbox_reason)],
    [
      "Output",
      p.elided_bytes
        ? `${p.output_bytes} bytes (middle ${p.elided_bytes} bytes elided; head and tail shown)`
        : undefined,
    ],
    ["Output-File", outputFileHeader(p)],
    [
      "Protected-Changed",
      p.protected_changed?.length
        ? `${p.protected_changed.join(", ")} (files that decide policy or run code were created or changed)`
        : undefined,
    ],
    ["Sandbox-Denied", p.sandbox_denied?.length ? p.sandbox_denied.map(denialText).join("; ") : undefined],
    ["Sandbox-Note", p.sandbox_note],
    ["Limits-Hit", p.limits_hit?.length ? `${p.limits_hit.join(", ")}: ${p.limit_note ?? ""}` : undefined],
    [
      "Leftover-Processes",
      p.leftover_processes
        ? `${p.leftover_processes} still running after the command exited were ended (start servers with run_in_background)`
        : undefined,
    ],
  ];
  return renderText(headers, p.stdout === "" ? "(no output)" : p.stdout);
}

export function renderShellStarted(p: ShellStarted): string {
  return renderText(
    [
      ["Shell-Id", p.shell_id],
      ["Status", p.status],
      ["Pid", p.pid],
      ["Cwd", p.cwd],
      ["Tty", p.tty ? "yes" : undefined],
      ["Sandbox", sandboxHeader(p.sandbox, p.sandbox_reason)],
      ["Evicted", p.evicted?.length ? p.evicted.join(", ") : undefined],
      ["Reaped", p.reaped?.length ? p.reaped.join(", ") : undefined],
      ["Command", oneLine(p.command)],
    ],
    `Started in the background. Read its output with shell_session {"operation":"read","shell_id":"${p.shell_id}"}.`,
  );
}

export function renderShellSessionView(p: ShellSessionView): string {
  const headers: Array<[string, HeaderValue]> = [
    ["Shell-Id", p.shell_id],
    ["Status", p.status],
    ["Exit-Code", p.exit_code ?? undefined],
    ["Signal", p.signal],
    ["Cursor", p.cursor],
    ["Missed-Characters", p.missed_characters],
    ["Remaining-Characters", p.remaining_characters],
    ["Output-File", outputFileHeader(p)],
    [
      "Filter",
      p.filter === undefined
        ? undefined
        : `${oneLine(p.filter)} (${p.matched_lines} of ${p.total_lines} lines)`,
    ],
    [
      "Protected-Changed",
      p.protected_changed?.length
        ? `${p.protected_changed.join(", ")} (files that decide policy or run code were created or changed)`
        : undefined,
    ],
    ["Sandbox-Note", p.sandbox_note],
    ["Command", oneLine(p.command)],
  ];
  const empty = p.filter === undefined ? "(no new output)" : "(no matching lines)";
  return renderText(headers, p.output === "" ? empty : p.output);
}

export function renderShellSessionList(p: ShellSessionList): string {
  const lines = p.sessions.map(
    (s) =>
      `${s.shell_id}  ${s.status}${s.exit_code === null ? "" : ` (${s.exit_code})`}  pid ${s.pid}  unread ${s.unread_characters}  ${oneLine(s.command, 120)}`,
  );
  return renderText([["Sessions", `${p.sessions.length} (cap ${p.cap})`]], lines.join("\n"));
}
