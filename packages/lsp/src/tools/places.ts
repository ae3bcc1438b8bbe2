import {
  countWithCap,
  defineTool,
  type HeaderValue,
  renderText,
  renderTree,
  type TreeEntry,
  z,
} from "@toolbelt/core";
import { byPlace, LineReader, locationsOf, type Place, placeSchema, toPlace } from "../format.js";
import { type LspFamilyOptions, requireSupport } from "../manager.js";
import { resolveTarget, targetFields, targetLabel } from "../target.js";
import { toUri } from "../uri.js";
import { capOf, limitField } from "./limit.js";

type PlacesKind = "lsp_definition" | "lsp_references" | "lsp_implementation";

/** What lsp_definition, lsp_references and lsp_implementation return (each its own kind). */
export function placesPayload<K extends PlacesKind>(kind: K) {
  return z.object({
    kind: z.literal(kind),
    target: z.string(),
    server: z.string(),
    count: z.number().int(),
    cap: z.number().int(),
    capped: z.boolean(),
    locations: z.array(placeSchema),
  });
}

/** Places as a tree of files with `line: text` under each; places outside the root listed after. */
export function renderPlaces(headers: Array<[string, HeaderValue]>, places: Place[], empty: string): string {
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

export function placesTool<K extends PlacesKind>(
  opts: LspFamilyOptions,
  kind: K,
  method: string,
  description: string,
) {
  return defineTool({
    name: kind,
    family: "lsp",
    access: "read",
    deferrable: true,
    description,
    input: z.object({ ...targetFields, limit: limitField }),
    output: placesPayload(kind),
    paths: (input) => [input.path],
    async execute(input, ctx) {
      const target = await resolveTarget(input, ctx, opts);
      requireSupport(target.backend, method);
      const params: Record<string, unknown> = {
        textDocument: { uri: toUri(target.abs) },
        position: target.position,
      };
      if (method === "textDocument/references") params.context = { includeDeclaration: true };
      const result = await target.backend.request(method, params, { signal: ctx.signal });
      const lines = new LineReader(ctx, target.backend);
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
