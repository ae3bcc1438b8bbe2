import {
  type AfterWriteInfo,
  type AfterWriteReport,
  type NewDiagnostic,
  type Session,
  ToolbeltError,
  type WriteDiagnostics,
} from "@toolbelt/core";
import type { Diagnostic } from "vscode-languageserver-protocol";
import type { DiagnosticsOutcome } from "./client.js";
import { editDiagnosticsSetting } from "./contrib.js";
import { linesOf, newDiagnostics } from "./diagnostic-diff.js";
import { severityName, toDiagnosticItem } from "./format.js";
import { type Backend, type LspFamilyOptions, managerOf } from "./manager.js";

/** New problems listed in one write's result; the count says how many there are in all. */
export const NEW_DIAGNOSTICS_SHOWN = 20;
const LINE_TEXT_MAX = 200;

/** Waits for `promise` until `deadline`; undefined when the time is up first. */
async function until<T>(promise: Promise<T>, deadline: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), Math.max(0, deadline - Date.now()));
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

function lineText(lines: readonly string[], line: number): string | undefined {
  const text = lines[line]?.trim();
  if (text === undefined) return undefined;
  return text.length > LINE_TEXT_MAX ? `${text.slice(0, LINE_TEXT_MAX)}…` : text;
}

function toNew(d: Diagnostic, lines: readonly string[]): NewDiagnostic {
  const item = toDiagnosticItem(d);
  const text = lineText(lines, d.range.start.line);
  return { ...item, ...(text !== undefined ? { text } : {}) };
}

/**
 * Runs after every write of the session: tells running servers the file changed, then (unless
 * `tools.edit.diagnostics` is "off") compares the server's diagnostics of the file before and after
 * the write and reports the new ones, within one bounded wait.
 *
 * Which server: one already running (or starting) in this session for the file; when the setting
 * is given explicitly, also the file's server started now (a configured one, or the built-in
 * TypeScript server, as the project's trust allows). A write never waits past the bound for a
 * server to start: it says "timed out" and the start goes on for the next write.
 */
export async function reportNewDiagnostics(
  session: Session,
  opts: LspFamilyOptions,
  info: AfterWriteInfo,
): Promise<AfterWriteReport> {
  const manager = managerOf(session, opts);
  const root = session.root;
  const config = session.config;
  await manager.filesChanged(root, [info.abs]);
  const setting = editDiagnosticsSetting(config);
  const severity = setting.mode;
  if (severity === "off") return undefined;
  const report = (fields: Partial<WriteDiagnostics> & Pick<WriteDiagnostics, "status">) => ({
    diagnostics: {
      severity,
      timeout_ms: setting.timeoutMs,
      new: [],
      new_count: 0,
      cap: NEW_DIAGNOSTICS_SHOWN,
      total: 0,
      baseline: true,
      ...fields,
    } satisfies WriteDiagnostics,
  });
  let pending = manager.runningFor(root, config, info.abs);
  if (!pending) {
    // A file no server serves (a README) was not checked and is not said to be: no field at all.
    if (!manager.choose(root, config, info.abs)) return undefined;
    if (!setting.explicit) return report({ status: "no_server" });
    pending = manager.backendFor(root, config, info.abs);
  }
  const deadline = Date.now() + setting.timeoutMs;
  // A start that fails after the bound is reported by the next call that uses the server.
  pending.catch(() => {});
  let backend: Backend | undefined;
  try {
    backend = await until(pending, deadline);
  } catch (error) {
    return report({ status: "unavailable", message: (error as Error).message });
  }
  if (!backend) return report({ status: "timed_out", message: "the language server is still starting" });
  const server = backend.label;
  try {
    const beforeText = textBefore(info, backend, config.limits.fileMaxBytes);
    const wanted = (d: Diagnostic) => severity === "all" || severityName(d.severity) === "error";
    let before: DiagnosticsOutcome | undefined;
    if (beforeText !== undefined && beforeText !== "") {
      before = await backend.diagnostics(info.abs, {
        timeoutMs: Math.max(1, deadline - Date.now()),
        text: beforeText,
      });
      if (before.status === "timed_out")
        return report({ status: "timed_out", server, message: "no answer for the content before the write" });
    }
    // Every open document as the disk has it now: a multi-file write changed the others too.
    await backend.syncOpen();
    const after = await backend.diagnostics(info.abs, { timeoutMs: Math.max(1, deadline - Date.now()) });
    if (after.status === "timed_out") return report({ status: "timed_out", server });
    const afterText = backend.text(info.abs) ?? "";
    const now = after.diagnostics.filter(wanted);
    const fresh =
      beforeText === undefined
        ? now
        : newDiagnostics(
            beforeText,
            afterText,
            before?.status === "ok" ? before.diagnostics.filter(wanted) : [],
            now,
          );
    const lines = linesOf(afterText);
    const sorted = [...fresh].sort(
      (a, b) => a.range.start.line - b.range.start.line || a.range.start.character - b.range.start.character,
    );
    return report({
      status: "ok",
      server,
      new: sorted.slice(0, NEW_DIAGNOSTICS_SHOWN).map((d) => toNew(d, lines)),
      new_count: fresh.length,
      total: now.length,
      baseline: beforeText !== undefined,
    });
  } catch (error) {
    const message = ToolbeltError.isInstance(error) ? error.message : (error as Error).message;
    return report({ status: "unavailable", server, message });
  }
}

/**
 * The file's text before the write: "" for a file the write created, the write path's before-image,
 * else what the server last held for it (undefined when nothing is known: every problem is then new).
 */
function textBefore(info: AfterWriteInfo, backend: Backend, maxBytes: number): string | undefined {
  if (info.created) return "";
  if (info.before && info.before.byteLength <= maxBytes)
    return Buffer.from(info.before.buffer, info.before.byteOffset, info.before.byteLength).toString("utf8");
  return backend.isOpen(info.abs) ? backend.text(info.abs) : undefined;
}
