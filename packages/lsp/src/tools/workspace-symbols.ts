import path from "node:path";
import { countWithCap, defineTool, ToolbeltError, z } from "@toolbelt/core";
import type { SymbolInformation } from "vscode-languageserver-protocol";
import { byPlace, LineReader, placeSchema, toPlace } from "../format.js";
import { type Backend, type LspFamilyOptions, managerOf } from "../manager.js";
import { walkProject } from "../walk.js";
import { capOf, limitField, WORKSPACE_FILE_CAP } from "./limit.js";
import { renderPlaces } from "./places.js";
import { kindName } from "./symbol-kinds.js";

const workspaceSymbol = placeSchema.extend({
  name: z.string(),
  symbol_kind: z.string(),
  container: z.string().optional(),
});

const workspaceSymbolsPayload = z.object({
  kind: z.literal("lsp_workspace_symbols"),
  query: z.string(),
  server: z.string(),
  count: z.number().int(),
  cap: z.number().int(),
  capped: z.boolean(),
  symbols: z.array(workspaceSymbol),
});

type WorkspaceSymbol = z.output<typeof workspaceSymbol>;

export function workspaceSymbolsTool(opts: LspFamilyOptions) {
  return defineTool({
    name: "lsp_workspace_symbols",
    family: "lsp",
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
    output: workspaceSymbolsPayload,
    async execute(input, ctx) {
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
      const lines = new LineReader(ctx);
      for (const backend of backends.values()) {
        if (!backend.supports("workspace/symbol")) continue;
        await backend.syncOpen();
        const result = await backend.request<Array<
          | SymbolInformation
          | { name: string; kind: number; location: { uri: string; range?: unknown }; containerName?: string }
        > | null>("workspace/symbol", { query: input.query }, { signal: ctx.signal });
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
