import path from "node:path";
import {
  countWithCap,
  defineTool,
  type HeaderValue,
  renderText,
  renderTree,
  ToolbeltError,
  type ToolContext,
  type TreeEntry,
} from "@toolbelt/core";
import type {
  CallHierarchyIncomingCall,
  CallHierarchyItem,
  CallHierarchyOutgoingCall,
  DocumentSymbol,
  Hover,
  MarkedString,
  MarkupContent,
  SymbolInformation,
} from "vscode-languageserver-protocol";
import { z } from "zod";
import {
  byPlace,
  type DiagnosticItem,
  diagnosticText,
  displayPath,
  LineReader,
  locationsOf,
  type Place,
  SEVERITIES,
  type Severity,
  toDiagnosticItem,
  toPlace,
} from "./format.js";
import { type Backend, type LspFamilyOptions, managerOf, requireSupport } from "./manager.js";
import { renameTool } from "./rename.js";
import { resolveTarget, targetFields, targetLabel } from "./target.js";
import { toUri } from "./uri.js";
import { walkProject } from "./walk.js";

const FAMILY = "lsp";
/** Files a workspace-wide diagnostics call opens at most. */
export const WORKSPACE_FILE_CAP = 500;

const limitField = z
  .number()
  .int()
  .positive()
  .optional()
  .describe("Most results to return (default: limits.fileSearchMaxMatches).");

function capOf(ctx: ToolContext, limit: number | undefined): number {
  return limit ?? ctx.limits.fileSearchMaxMatches;
}

function signalOpt(ctx: ToolContext): { signal?: AbortSignal } {
  return { signal: ctx.signal };
}

// ---------------------------------------------------------------- places (definition, references, ...)

type PlacesPayload = {
  kind: "lsp_definition" | "lsp_references" | "lsp_implementation";
  target: string;
  server: string;
  count: number;
  cap: number;
  capped: boolean;
  locations: Place[];
};

/** Places as a tree of files with `line: text` under each; places outside the root listed after. */
function renderPlaces(headers: Array<[string, HeaderValue]>, places: Place[], empty: string): string {
  const inside = places.filter((p) => !p.outside_root);
  const outside = places.filter((p) => p.outside_root);
  const entries = new Map<string, TreeEntry>();
  for (const p of inside) {
    const entry = entries.get(p.path) ?? { path: p.path, matches: [] };
    entry.matches?.push({ line: p.line, text: p.text ?? `(col ${p.column})` });
    entries.set(p.path, entry);
  }
  const parts: string[] = [];
  if (entries.size) parts.push(renderTree([...entries.values()]));
  if (outside.length)
    parts.push(["outside the root:", ...outside.map((p) => `  ${p.path}:${p.line}:${p.column}`)].join("\n"));
  return renderText(headers, parts.join("\n") || empty);
}

function placesTool(
  opts: LspFamilyOptions,
  kind: PlacesPayload["kind"],
  method: string,
  description: string,
) {
  return defineTool({
    name: kind,
    family: FAMILY,
    access: "read",
    deferrable: true,
    description,
    input: z.object({ ...targetFields, limit: limitField }),
    paths: (input) => [input.path],
    async execute(input, ctx): Promise<PlacesPayload> {
      const target = await resolveTarget(input, ctx, opts);
      requireSupport(target.backend, method);
      const params: Record<string, unknown> = {
        textDocument: { uri: toUri(target.abs) },
        position: target.position,
      };
      if (method === "textDocument/references") params.context = { includeDeclaration: true };
      const result = await target.backend.request(method, params, signalOpt(ctx));
      const lines = new LineReader(target.backend);
      const all: Place[] = [];
      const seen = new Set<string>();
      for (const loc of locationsOf(result)) {
        const key = `${loc.uri}:${loc.range.start.line}:${loc.range.start.character}`;
        if (seen.has(key)) continue;
        seen.add(key);
        all.push(await toPlace(ctx, loc.uri, loc.range, lines));
      }
      all.sort(byPlace);
      const cap = capOf(ctx, input.limit);
      return {
        kind,
        target: targetLabel(target),
        server: target.backend.label,
        count: all.length,
        cap,
        capped: all.length > cap,
        locations: all.slice(0, cap),
      };
    },
    render: (p) =>
      renderPlaces(
        [
          ["Kind", p.kind],
          ["Target", p.target],
          ["Server", p.server],
          ["Locations", countWithCap(p.count, p.cap, p.capped)],
        ],
        p.locations,
        `No ${p.kind.slice(4)} found.`,
      ),
  });
}

// ---------------------------------------------------------------- diagnostics

type FileDiagnostics = {
  path: string;
  version: number;
  status: "ok" | "timed_out";
  diagnostics: DiagnosticItem[];
};

type DiagnosticsPayload = {
  kind: "lsp_diagnostics";
  scope: "file" | "workspace";
  server: string;
  /** `timed_out` when some file had no answer for its current version in time (not "no problems"). */
  status: "ok" | "timed_out";
  timeout_ms: number;
  timed_out_files: string[];
  files_checked: number;
  files_capped: boolean;
  file_cap: number;
  min_severity: Severity;
  count: number;
  errors: number;
  warnings: number;
  cap: number;
  capped: boolean;
  files: FileDiagnostics[];
};

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
    if (scope === "file")
      manager.lastErrors.set(abs, new Set(items.filter((d) => d.severity === "error").map(errorKeyOf)));
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

export function errorKeyOf(d: DiagnosticItem): string {
  return `${String(d.code ?? "")}|${d.message}`;
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

function diagnosticsTool(opts: LspFamilyOptions) {
  return defineTool({
    name: "lsp_diagnostics",
    family: FAMILY,
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
    paths: (input) => (input.path ? [input.path] : []),
    execute: (input, ctx) => collectDiagnostics(ctx, opts, input),
    render: renderDiagnostics,
  });
}

// ---------------------------------------------------------------- hover

type HoverPayload = { kind: "lsp_hover"; target: string; server: string; text: string };

function hoverText(hover: Hover | null): string {
  if (!hover) return "";
  const one = (c: MarkupContent | MarkedString): string =>
    typeof c === "string" ? c : "kind" in c ? c.value : `\`\`\`${c.language}\n${c.value}\n\`\`\``;
  const contents = hover.contents;
  return (Array.isArray(contents) ? contents.map(one) : [one(contents as MarkupContent | MarkedString)])
    .join("\n\n")
    .trim();
}

function hoverTool(opts: LspFamilyOptions) {
  return defineTool({
    name: "lsp_hover",
    family: FAMILY,
    access: "read",
    deferrable: true,
    description: "The type and documentation of the symbol at a position (or named by symbol path).",
    input: z.object(targetFields),
    paths: (input) => [input.path],
    async execute(input, ctx): Promise<HoverPayload> {
      const target = await resolveTarget(input, ctx, opts);
      requireSupport(target.backend, "textDocument/hover");
      const hover = await target.backend.request<Hover | null>(
        "textDocument/hover",
        { textDocument: { uri: toUri(target.abs) }, position: target.position },
        signalOpt(ctx),
      );
      return {
        kind: "lsp_hover",
        target: targetLabel(target),
        server: target.backend.label,
        text: hoverText(hover),
      };
    },
    render: (p) =>
      renderText(
        [
          ["Kind", p.kind],
          ["Target", p.target],
          ["Server", p.server],
        ],
        p.text || "No hover information here.",
      ),
  });
}

// ---------------------------------------------------------------- symbols

const SYMBOL_KINDS = [
  "",
  "file",
  "module",
  "namespace",
  "package",
  "class",
  "method",
  "property",
  "field",
  "constructor",
  "enum",
  "interface",
  "function",
  "variable",
  "constant",
  "string",
  "number",
  "boolean",
  "array",
  "object",
  "key",
  "null",
  "enum member",
  "struct",
  "event",
  "operator",
  "type parameter",
];

function kindName(kind: number): string {
  return SYMBOL_KINDS[kind] || "symbol";
}

type OutlineSymbol = {
  name: string;
  kind: string;
  line: number;
  end_line: number;
  depth: number;
  detail?: string;
};
type DocumentSymbolsPayload = {
  kind: "lsp_document_symbols";
  path: string;
  server: string;
  count: number;
  cap: number;
  capped: boolean;
  symbols: OutlineSymbol[];
};

function outline(result: Array<DocumentSymbol | SymbolInformation> | null): OutlineSymbol[] {
  const list = result ?? [];
  if (list.length && "location" in (list[0] as object)) {
    return (list as SymbolInformation[])
      .map((s) => ({
        name: s.name,
        kind: kindName(s.kind),
        line: s.location.range.start.line + 1,
        end_line: s.location.range.end.line + 1,
        depth: s.containerName ? 1 : 0,
      }))
      .sort((a, b) => a.line - b.line);
  }
  const out: OutlineSymbol[] = [];
  const walk = (symbols: DocumentSymbol[], depth: number) => {
    for (const s of [...symbols].sort((a, b) => a.range.start.line - b.range.start.line)) {
      const item: OutlineSymbol = {
        name: s.name,
        kind: kindName(s.kind),
        line: s.selectionRange.start.line + 1,
        end_line: s.range.end.line + 1,
        depth,
      };
      if (s.detail) item.detail = s.detail;
      out.push(item);
      if (s.children) walk(s.children, depth + 1);
    }
  };
  walk(list as DocumentSymbol[], 0);
  return out;
}

function documentSymbolsTool(opts: LspFamilyOptions) {
  return defineTool({
    name: "lsp_document_symbols",
    family: FAMILY,
    access: "read",
    deferrable: true,
    description:
      "The outline of a file: classes, functions, methods, variables, nested, with their line ranges.",
    input: z.object({ path: targetFields.path, limit: limitField }),
    paths: (input) => [input.path],
    async execute(input, ctx): Promise<DocumentSymbolsPayload> {
      const resolved = ctx.resolve(input.path);
      if (!resolved.exists)
        throw new ToolbeltError("ENOENT", `no such file: ${resolved.rel}`, {
          details: { path: resolved.rel },
        });
      const backend = await managerOf(ctx.session, opts).backendFor(ctx.root, ctx.config, resolved.abs);
      requireSupport(backend, "textDocument/documentSymbol");
      await backend.syncOpen();
      await backend.sync(resolved.abs);
      const result = await backend.request<Array<DocumentSymbol | SymbolInformation> | null>(
        "textDocument/documentSymbol",
        { textDocument: { uri: toUri(resolved.abs) } },
        signalOpt(ctx),
      );
      const all = outline(result);
      const cap = capOf(ctx, input.limit);
      return {
        kind: "lsp_document_symbols",
        path: resolved.rel,
        server: backend.label,
        count: all.length,
        cap,
        capped: all.length > cap,
        symbols: all.slice(0, cap),
      };
    },
    render: (p) =>
      renderText(
        [
          ["Kind", p.kind],
          ["Path", p.path],
          ["Server", p.server],
          ["Symbols", countWithCap(p.count, p.cap, p.capped)],
        ],
        p.symbols
          .map(
            (s) =>
              `${"  ".repeat(s.depth)}${s.line}: ${s.kind} ${s.name}${s.end_line > s.line ? ` (to ${s.end_line})` : ""}${s.detail ? ` — ${s.detail}` : ""}`,
          )
          .join("\n") || "No symbols.",
      ),
  });
}

type WorkspaceSymbol = Place & { name: string; symbol_kind: string; container?: string };
type WorkspaceSymbolsPayload = {
  kind: "lsp_workspace_symbols";
  query: string;
  server: string;
  count: number;
  cap: number;
  capped: boolean;
  symbols: WorkspaceSymbol[];
};

function workspaceSymbolsTool(opts: LspFamilyOptions) {
  return defineTool({
    name: "lsp_workspace_symbols",
    family: FAMILY,
    access: "read",
    deferrable: true,
    description:
      "Find symbols (classes, functions, types...) by name across the project. Searches with the servers serving the project's files.",
    input: z.object({
      query: z.string().min(1).describe("Name or part of a name."),
      path: z
        .string()
        .optional()
        .describe("A file whose language server to ask (default: servers for the project's source files)."),
      limit: limitField,
    }),
    async execute(input, ctx): Promise<WorkspaceSymbolsPayload> {
      const manager = managerOf(ctx.session, opts);
      let probes: string[];
      if (input.path) probes = [ctx.resolve(input.path).abs];
      else {
        // One file per extension the project has picks each server that serves it.
        const found = walkProject(
          ctx.root,
          manager.extensions(ctx.root, ctx.config),
          WORKSPACE_FILE_CAP,
        ).files;
        const byExt = new Map<string, string>();
        for (const f of found) if (!byExt.has(path.extname(f))) byExt.set(path.extname(f), f);
        probes = [...byExt.values()];
      }
      const backends = new Map<string, Backend>();
      for (const probe of probes) {
        try {
          const backend = await manager.backendFor(ctx.root, ctx.config, probe);
          if (!backends.has(backend.label)) {
            // Servers such as tsserver only know projects of files they have open.
            await backend.sync(probe);
            backends.set(backend.label, backend);
          }
        } catch (error) {
          if (input.path) throw error;
        }
      }
      if (!backends.size)
        throw new ToolbeltError("EUNAVAILABLE", "no language server serves the files of this project");
      const all: WorkspaceSymbol[] = [];
      const lines = new LineReader();
      for (const backend of backends.values()) {
        if (!backend.supports("workspace/symbol")) continue;
        await backend.syncOpen();
        const result = await backend.request<Array<
          | SymbolInformation
          | { name: string; kind: number; location: { uri: string; range?: unknown }; containerName?: string }
        > | null>("workspace/symbol", { query: input.query }, signalOpt(ctx));
        for (const s of result ?? []) {
          const range = (s.location as { range?: SymbolInformation["location"]["range"] }).range ?? {
            start: { line: 0, character: 0 },
            end: { line: 0, character: 0 },
          };
          const place = await toPlace(ctx, s.location.uri, range, lines);
          const item: WorkspaceSymbol = { ...place, name: s.name, symbol_kind: kindName(s.kind) };
          if (s.containerName) item.container = s.containerName;
          all.push(item);
        }
      }
      // Exact names first, then by place.
      all.sort((a, b) => Number(b.name === input.query) - Number(a.name === input.query) || byPlace(a, b));
      const cap = capOf(ctx, input.limit);
      return {
        kind: "lsp_workspace_symbols",
        query: input.query,
        server: [...backends.keys()].join(", "),
        count: all.length,
        cap,
        capped: all.length > cap,
        symbols: all.slice(0, cap),
      };
    },
    render: (p) =>
      renderPlaces(
        [
          ["Kind", p.kind],
          ["Query", p.query],
          ["Server", p.server],
          ["Symbols", countWithCap(p.count, p.cap, p.capped)],
        ],
        p.symbols.map((s) => ({
          ...s,
          text: `${s.symbol_kind} ${s.name}${s.container ? ` (in ${s.container})` : ""}`,
        })),
        "No symbols match.",
      ),
  });
}

// ---------------------------------------------------------------- call hierarchy

type CallEntry = Place & { name: string; symbol_kind: string; call_lines: number[] };
type CallHierarchyPayload = {
  kind: "lsp_call_hierarchy";
  target: string;
  server: string;
  symbol: string;
  direction: "incoming" | "outgoing" | "both";
  incoming?: CallEntry[];
  outgoing?: CallEntry[];
  cap: number;
  incoming_count?: number;
  outgoing_count?: number;
};

function callHierarchyTool(opts: LspFamilyOptions) {
  return defineTool({
    name: "lsp_call_hierarchy",
    family: FAMILY,
    access: "read",
    deferrable: true,
    description:
      "Who calls a function or method (incoming) and what it calls (outgoing), one level deep, with the lines of each call.",
    input: z.object({
      ...targetFields,
      direction: z.enum(["incoming", "outgoing", "both"]).optional().describe("Default both."),
      limit: limitField,
    }),
    paths: (input) => [input.path],
    async execute(input, ctx): Promise<CallHierarchyPayload> {
      const target = await resolveTarget(input, ctx, opts);
      requireSupport(target.backend, "textDocument/prepareCallHierarchy");
      const backend = target.backend;
      const items = await backend.request<CallHierarchyItem[] | null>(
        "textDocument/prepareCallHierarchy",
        { textDocument: { uri: toUri(target.abs) }, position: target.position },
        signalOpt(ctx),
      );
      const item = items?.[0];
      if (!item) throw new ToolbeltError("ENO_MATCH", `no function or method at ${targetLabel(target)}`);
      const direction = input.direction ?? "both";
      const cap = capOf(ctx, input.limit);
      const lines = new LineReader(backend);
      const payload: CallHierarchyPayload = {
        kind: "lsp_call_hierarchy",
        target: targetLabel(target),
        server: backend.label,
        symbol: `${kindName(item.kind)} ${item.name}`,
        direction,
        cap,
      };
      if (direction !== "outgoing") {
        const calls =
          (await backend.request<CallHierarchyIncomingCall[] | null>(
            "callHierarchy/incomingCalls",
            { item },
            signalOpt(ctx),
          )) ?? [];
        const entries: CallEntry[] = [];
        for (const call of calls) {
          const place = await toPlace(ctx, call.from.uri, call.from.selectionRange, lines);
          entries.push({
            ...place,
            name: call.from.name,
            symbol_kind: kindName(call.from.kind),
            call_lines: call.fromRanges.map((r) => r.start.line + 1),
          });
        }
        entries.sort(byPlace);
        payload.incoming_count = entries.length;
        payload.incoming = entries.slice(0, cap);
      }
      if (direction !== "incoming") {
        const calls =
          (await backend.request<CallHierarchyOutgoingCall[] | null>(
            "callHierarchy/outgoingCalls",
            { item },
            signalOpt(ctx),
          )) ?? [];
        const entries: CallEntry[] = [];
        for (const call of calls) {
          const place = await toPlace(ctx, call.to.uri, call.to.selectionRange, lines);
          entries.push({
            ...place,
            name: call.to.name,
            symbol_kind: kindName(call.to.kind),
            call_lines: call.fromRanges.map((r) => r.start.line + 1),
          });
        }
        entries.sort(byPlace);
        payload.outgoing_count = entries.length;
        payload.outgoing = entries.slice(0, cap);
      }
      return payload;
    },
    render: (p) => {
      const section = (
        title: string,
        entries: CallEntry[] | undefined,
        count: number | undefined,
        verb: string,
      ) => {
        if (!entries) return undefined;
        const rows = entries.map((e) => {
          const where = `${e.path}:${e.line}`;
          return `  ${where}: ${e.symbol_kind} ${e.name} — ${verb} line${e.call_lines.length > 1 ? "s" : ""} ${e.call_lines.join(", ")}`;
        });
        return `${title} (${countWithCap(count ?? 0, p.cap, (count ?? 0) > p.cap)}):\n${rows.join("\n") || "  (none)"}`;
      };
      return renderText(
        [
          ["Kind", p.kind],
          ["Target", p.target],
          ["Symbol", p.symbol],
          ["Server", p.server],
          [
            "Incoming",
            p.incoming_count === undefined
              ? undefined
              : countWithCap(p.incoming_count, p.cap, p.incoming_count > p.cap),
          ],
          [
            "Outgoing",
            p.outgoing_count === undefined
              ? undefined
              : countWithCap(p.outgoing_count, p.cap, p.outgoing_count > p.cap),
          ],
        ],
        [
          section("incoming calls", p.incoming, p.incoming_count, "calls at"),
          section("outgoing calls", p.outgoing, p.outgoing_count, "called at"),
        ]
          .filter(Boolean)
          .join("\n"),
      );
    },
  });
}

// ---------------------------------------------------------------- the set

/** The lsp tools, bound to the family options. */
export function createTools(opts: LspFamilyOptions) {
  return [
    diagnosticsTool(opts),
    placesTool(
      opts,
      "lsp_definition",
      "textDocument/definition",
      "Where the symbol at a position (or named by symbol path, e.g. Class/method) is defined, across files.",
    ),
    placesTool(
      opts,
      "lsp_references",
      "textDocument/references",
      "Every reference to the symbol at a position (or named by symbol path), declaration included.",
    ),
    placesTool(
      opts,
      "lsp_implementation",
      "textDocument/implementation",
      "Implementations of an interface, abstract method or type at a position (or named by symbol path).",
    ),
    hoverTool(opts),
    documentSymbolsTool(opts),
    workspaceSymbolsTool(opts),
    callHierarchyTool(opts),
    renameTool(opts),
  ];
}
