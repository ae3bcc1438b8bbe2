import {
  type HeaderValue,
  renderText,
  type WriteDiagnostics,
  writeDiagnosticsHeader,
  writeDiagnosticsLines,
} from "@toolbelt/core";
import type { EditResult } from "./apply.js";

const STALE_NOTE =
  "yes — the file changed on disk since this session last read it; the edit was applied to the current content (check the diff)";

/** The model-facing text of an edit: headers saying what matched and how, then the unified diff and hook notes. */
export function renderEdit(payload: EditResult): string {
  const headers: Array<[string, HeaderValue]> = [["Kind", payload.kind]];
  const files = payload.files;
  if (files.length === 1) {
    const file = files[0];
    if (file) {
      headers.push(["Path", file.path]);
      if (file.created) headers.push(["Created", "yes"]);
      headers.push(["Strategy", file.strategies.join(", ")]);
      headers.push(["Replacements", file.replacements]);
      headers.push(["Lines", `+${file.added} -${file.removed}`]);
      if (file.eol === "crlf" || file.eol === "mixed") headers.push(["Line-Endings", `${file.eol} (kept)`]);
      if (file.bom) headers.push(["BOM", "kept"]);
      if (file.changed_on_disk) headers.push(["Changed-On-Disk", STALE_NOTE]);
    }
  } else {
    headers.push(["Files", files.length]);
    headers.push(["Paths", files.map((f) => f.path).join(", ")]);
    headers.push(["Strategy", [...new Set(files.flatMap((f) => f.strategies))].join(", ")]);
    headers.push(["Replacements", files.reduce((n, f) => n + f.replacements, 0)]);
    const stale = files.filter((f) => f.changed_on_disk).map((f) => f.path);
    if (stale.length) headers.push(["Changed-On-Disk", `${stale.join(", ")} — ${STALE_NOTE.slice(6)}`]);
  }
  const checked = files.flatMap((f) => {
    const header = f.diagnostics && writeDiagnosticsHeader(f.diagnostics);
    return header
      ? [{ path: f.path, header, lines: writeDiagnosticsLines(f.path, f.diagnostics as WriteDiagnostics) }]
      : [];
  });
  if (checked.length === 1 && files.length === 1) headers.push(["Diagnostics", checked[0]?.header]);
  else if (checked.length)
    headers.push(["Diagnostics", checked.map((c) => `${c.path}: ${c.header}`).join("; ")]);
  if (payload.notes.length) headers.push(["Notes", payload.notes.length]);
  const listed = checked.map((c) => c.lines.join("\n"));
  const body = [payload.diff.trimEnd(), ...listed, ...payload.notes].filter(Boolean).join("\n\n");
  return renderText(headers, body);
}
