import { z } from "zod";

/**
 * The new problems one write introduced into the file it wrote, as a language server saw them: the
 * field every writing tool's result carries when an afterWrite hook (the lsp family's) reports them.
 * Defined in core so the edit and files families declare and render it without knowing the lsp family.
 */

export const WRITE_DIAGNOSTIC_SEVERITIES = ["error", "warning", "info", "hint"] as const;

export const newDiagnosticSchema = z.object({
  line: z.number().int().describe("1-based, in the file as written"),
  column: z.number().int(),
  end_line: z.number().int(),
  end_column: z.number().int(),
  severity: z.enum(WRITE_DIAGNOSTIC_SEVERITIES),
  code: z.union([z.string(), z.number()]).optional(),
  source: z.string().optional(),
  message: z.string(),
  text: z.string().optional().describe("the line's text (trimmed, cut when long)"),
});

export const writeDiagnosticsSchema = z.object({
  status: z
    .enum(["ok", "timed_out", "no_server", "unavailable"])
    .describe(
      '`ok`: the server answered for the text before and after the write; `timed_out`: it did not answer in time (unknown, not "no new problems"); `no_server`: a language server serves files like this one but none runs (the write started none; see `tools.edit.diagnostics`); `unavailable`: the server failed (see `message`)',
    ),
  server: z.string().optional(),
  severity: z.enum(["errors", "all"]).describe("which severities are compared (`tools.edit.diagnostics`)"),
  timeout_ms: z.number().int().describe("the bounded wait (`tools.edit.diagnostics_timeout_ms`)"),
  new: z.array(newDiagnosticSchema).describe("problems the write introduced, at most `cap` of them"),
  new_count: z.number().int().describe("how many new problems there are in all"),
  cap: z.number().int(),
  total: z.number().int().describe("problems of the compared severities in the file after the write"),
  baseline: z
    .boolean()
    .describe(
      "false when the file's content before the write was not known: every problem then counts as new",
    ),
  message: z.string().optional().describe("why the status is not `ok`"),
});

export type NewDiagnostic = z.output<typeof newDiagnosticSchema>;
export type WriteDiagnostics = z.output<typeof writeDiagnosticsSchema>;

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/**
 * The `# Diagnostics:` header value for one file's report, or undefined when there is nothing to
 * say (no server runs for the file: the write was not checked, and saying so on every write of a
 * README would be noise; the structured field still says `no_server`).
 */
export function writeDiagnosticsHeader(d: WriteDiagnostics): string | undefined {
  const word = d.severity === "errors" ? "error" : "problem";
  const by = d.server ? ` (${d.server})` : "";
  switch (d.status) {
    case "no_server":
      return undefined;
    case "timed_out":
      return `timed out after ${d.timeout_ms} ms${by}: new ${word}s unknown, not "none"${d.message ? ` (${d.message})` : ""}`;
    case "unavailable":
      return `unavailable${by}: ${d.message ?? "the language server failed"}`;
    case "ok": {
      const head = d.new_count === 0 ? `no new ${word}s` : `${plural(d.new_count, `new ${word}`)}`;
      const base = d.baseline ? "" : "; no earlier state to compare with, every one counts as new";
      return `${head}${by}${d.new_count > d.new.length ? ` (showing ${d.new.length})` : ""}${base}`;
    }
  }
}

/** The lines listing a report's new problems under the file's path, with each line's text. */
export function writeDiagnosticsLines(path: string, d: WriteDiagnostics): string[] {
  if (d.new.length === 0) return [];
  const lines = [`New ${d.severity === "errors" ? "errors" : "problems"} in ${path}:`];
  for (const n of d.new) {
    const code = n.code === undefined ? "" : ` ${n.code}`;
    const source = n.source ? ` (${n.source})` : "";
    lines.push(
      `  ${n.line}:${n.column} ${n.severity}${code}${source}: ${n.message.replace(/\s*\n\s*/g, " ⏎ ")}`,
    );
    if (n.text !== undefined) lines.push(`      ${n.text}`);
  }
  if (d.new_count > d.new.length) lines.push(`  … ${d.new_count - d.new.length} more not shown`);
  return lines;
}
