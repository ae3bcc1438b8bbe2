import { countWithCap, defineTool, renderText, ToolbeltError, z } from "@toolbelt/core";
import type { DocumentSymbol, SymbolInformation } from "vscode-languageserver-protocol";
import { type LspFamilyOptions, managerOf, requireSupport } from "../manager.js";
import { targetFields } from "../target.js";
import { toUri } from "../uri.js";
import { capOf, limitField } from "./limit.js";
import { kindName } from "./symbol-kinds.js";

const outlineSymbol = z.object({
  name: z.string(),
  kind: z.string(),
  line: z.number().int(),
  end_line: z.number().int(),
  depth: z.number().int(),
  detail: z.string().optional(),
});

const documentSymbolsPayload = z.object({
  kind: z.literal("lsp_document_symbols"),
  path: z.string(),
  server: z.string(),
  count: z.number().int(),
  cap: z.number().int(),
  capped: z.boolean(),
  symbols: z.array(outlineSymbol),
});

type OutlineSymbol = z.output<typeof outlineSymbol>;

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

export function documentSymbolsTool(opts: LspFamilyOptions) {
  return defineTool({
    name: "lsp_document_symbols",
    family: "lsp",
    access: "read",
    deferrable: true,
    description:
      "The outline of a file: classes, functions, methods, variables, nested, with their line ranges.",
    input: z.object({ path: targetFields.path, limit: limitField }),
    output: documentSymbolsPayload,
    paths: (input) => [input.path],
    async execute(input, ctx) {
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
        { signal: ctx.signal },
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
