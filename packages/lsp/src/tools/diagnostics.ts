import {
  countWithCap,
  defineTool,
  type HeaderValue,
  renderText,
  renderTree,
  ToolbeltError,
  type ToolContext,
  type TreeEntry,
  z,
} from "@toolbelt/core";
import {
  diagnosticItemSchema,
  diagnosticText,
  displayPath,
  SEVERITIES,
  type Severity,
  toDiagnosticItem,
} from "../format.js";
import { type Backend, type LspFamilyOptions, managerOf } from "../manager.js";
import { walkProject } from "../walk.js";
import { capOf, limitField, WORKSPACE_FILE_CAP } from "./limit.js";

const fileStatus = z.enum(["ok", "timed_out"]);

const fileDiagnostics = z.object({
  path: z.string(),
  version: z.number().int(),
  status: fileStatus,
  diagnostics: z.array(diagnosticItemSchema),
});

export const diagnosticsPayload = z.object({
  kind: z.literal("lsp_diagnostics"),
  scope: z.enum(["file", "workspace"]),
  server: z.string(),
  status: fileStatus.describe(
    '`timed_out` when some file had no answer for its current version in time (not "no problems")',
  ),
  timeout_ms: z.number().int(),
  timed_out_files: z.array(z.string()),
  files_checked: z.number().int(),
  files_capped: z.boolean(),
  file_cap: z.number().int(),
  min_severity: z.enum(SEVERITIES),
  count: z.number().int(),
  errors: z.number().int(),
  warnings: z.number().int(),
  cap: z.number().int(),
  capped: z.boolean(),
  files: z.array(fileDiagnostics),
});

type FileDiagnostics = z.output<typeof fileDiagnostics>;
type DiagnosticsPayload = z.output<typeof diagnosticsPayload>;

export async function collectDiagnostics(
  ctx: ToolContext,
  opts: LspFamilyOptions,
  input: {
    path?: string | undefined;
    severity?: Severity | undefined;
    timeout_ms?: number | undefined;
    limit?: number | undefined;
  },
): Promise<DiagnosticsPayload> {
  const manager = managerOf(ctx.session, opts);
  const timeoutMs = input.timeout_ms ?? manager.options.diagnosticsTimeoutMs;
  const minRank = SEVERITIES.indexOf(input.severity ?? "warning");
  let files: string[];
  let filesCapped = false;
  let scope: "file" | "workspace" = "file";
  if (input.path !== undefined && input.path !== "." && input.path !== "") {
    const resolved = ctx.resolve(input.path);
    if (!resolved.exists)
      throw new ToolbeltError("ENOENT", `no such file: ${resolved.rel}`, { details: { path: resolved.rel } });
    files = [resolved.abs];
  } else {
    scope = "workspace";
    const walked = walkProject(ctx.root, manager.extensions(ctx.root, ctx.config), WORKSPACE_FILE_CAP);
    files = walked.files;
    filesCapped = walked.capped;
  }
  const deadline = Date.now() + timeoutMs;
  const servers = new Set<string>();
  const results: FileDiagnostics[] = [];
  const timedOut: string[] = [];
  for (const abs of files) {
    if (ctx.signal.aborted) throw new ToolbeltError("ECANCELLED", "the call was cancelled");
    const rel = displayPath(ctx, abs).path;
    const remaining = Math.max(0, deadline - Date.now());
    if (remaining === 0) {
      timedOut.push(rel);
      continue;
    }
    let backend: Backend;
    try {
      backend = await manager.backendFor(ctx.root, ctx.config, abs);
    } catch (error) {
      // One file the workspace walk found without a working server must not sink the others.
      if (scope === "file") throw error;
      continue;
    }
    servers.add(backend.label);
    await backend.syncOpen();
    const wasOpen = backend.isOpen(abs);
    const outcome = await backend.diagnostics(abs, { timeoutMs: remaining, signal: ctx.signal });
    // A workspace sweep must not leave hundreds of files open for the server to re-check after every edit.
    if (scope === "workspace" && !wasOpen) backend.release(abs);
    if (outcome.status === "timed_out") {
      timedOut.push(rel);
      results.push({ path: rel, version: outcome.version, status: "timed_out", diagnostics: [] });
      continue;
    }
    const items = outcome.diagnostics
      .map(toDiagnosticItem)
      .filter((d) => SEVERITIES.indexOf(d.severity) <= minRank)
      .sort((a, b) => a.line - b.line || a.column - b.column);
    results.push({ path: rel, version: outcome.version, status: "ok", diagnostics: items });
  }
  const cap = capOf(ctx, input.limit);
  let remaining = cap;
  let count = 0;
  let errors = 0;
  let warnings = 0;
  const shown: FileDiagnostics[] = [];
  for (const file of results) {
    count += file.diagnostics.length;
    errors += file.diagnostics.filter((d) => d.severity === "error").length;
    warnings += file.diagnostics.filter((d) => d.severity === "warning").length;
    if (scope === "workspace" && file.status === "ok" && file.diagnostics.length === 0) continue;
    const kept = file.diagnostics.slice(0, remaining);
    remaining -= kept.length;
    shown.push({ ...file, diagnostics: kept });
  }
  return {
    kind: "lsp_diagnostics",
    scope,
    server: [...servers].join(", ") || "(none)",
    status: timedOut.length ? "timed_out" : "ok",
    timeout_ms: timeoutMs,
    timed_out_files: timedOut,
    files_checked: results.length,
    files_capped: filesCapped,
    file_cap: WORKSPACE_FILE_CAP,
    min_severity: SEVERITIES[minRank] ?? "warning",
    count,
    errors,
    warnings,
    cap,
    capped: count > cap,
    files: shown,
  };
}

export function renderDiagnostics(p: DiagnosticsPayload): string {
  const status =
    p.status === "ok"
      ? "ok"
      : `timed out after ${p.timeout_ms} ms for ${p.timed_out_files.length} file(s): ${p.timed_out_files.slice(0, 10).join(", ")} (no result for their current version; this is not "no problems")`;
  const headers: Array<[string, HeaderValue]> = [
    ["Kind", "lsp_diagnostics"],
    ["Scope", p.scope],
    ["Server", p.server],
    ["Status", status],
    [
      "Files",
      p.scope === "workspace"
        ? countWithCap(p.files_checked, p.file_cap, p.files_capped, "files")
        : undefined,
    ],
    ["Diagnostics", countWithCap(p.count, p.cap, p.capped)],
    ["Errors", p.errors],
    ["Warnings", p.warnings],
    ["Min-Severity", p.min_severity],
  ];
  const entries: TreeEntry[] = p.files
    .filter((f) => f.diagnostics.length > 0)
    .map((f) => ({
      path: f.path,
      matches: f.diagnostics.map((d) => ({ line: d.line, text: diagnosticText(d) })),
    }));
  let body = renderTree(entries);
  if (!body) body = p.status === "ok" ? "No problems." : "No diagnostics arrived in time.";
  return renderText(headers, body);
}

export function diagnosticsTool(opts: LspFamilyOptions) {
  return defineTool({
    name: "lsp_diagnostics",
    family: "lsp",
    access: "read",
    description:
      'Errors and warnings from the language server for one file, or for every source file of the project when path is omitted. Waits a bounded time; says "timed out" rather than reporting stale or missing results as no problems.',
    input: z.object({
      path: z.string().optional().describe('The file; omit (or ".") for the whole workspace.'),
      severity: z.enum(SEVERITIES).optional().describe("Lowest severity to report (default warning)."),
      timeout_ms: z
        .number()
        .int()
        .positive()
        .max(300_000)
        .optional()
        .describe("Bounded wait for the server (default 15000)."),
      limit: limitField,
    }),
    output: diagnosticsPayload,
    paths: (input) => (input.path ? [input.path] : []),
    execute: (input, ctx) => collectDiagnostics(ctx, opts, input),
    render: renderDiagnostics,
  });
}
