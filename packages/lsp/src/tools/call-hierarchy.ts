import { countWithCap, defineTool, renderText, ToolbeltError, z } from "@toolbelt/core";
import type {
  CallHierarchyIncomingCall,
  CallHierarchyItem,
  CallHierarchyOutgoingCall,
} from "vscode-languageserver-protocol";
import { byPlace, LineReader, placeSchema, toPlace } from "../format.js";
import { type LspFamilyOptions, requireSupport } from "../manager.js";
import { resolveTarget, targetFields, targetLabel } from "../target.js";
import { toUri } from "../uri.js";
import { capOf, limitField } from "./limit.js";
import { kindName } from "./symbol-kinds.js";

const callEntry = placeSchema.extend({
  name: z.string(),
  symbol_kind: z.string(),
  call_lines: z.array(z.number().int()),
});

const callHierarchyPayload = z.object({
  kind: z.literal("lsp_call_hierarchy"),
  target: z.string(),
  server: z.string(),
  symbol: z.string(),
  direction: z.enum(["incoming", "outgoing", "both"]),
  incoming: z.array(callEntry).optional(),
  outgoing: z.array(callEntry).optional(),
  cap: z.number().int(),
  incoming_count: z.number().int().optional(),
  outgoing_count: z.number().int().optional(),
});

type CallEntry = z.output<typeof callEntry>;
type CallHierarchyPayload = z.output<typeof callHierarchyPayload>;

export function callHierarchyTool(opts: LspFamilyOptions) {
  return defineTool({
    name: "lsp_call_hierarchy",
    family: "lsp",
    access: "read",
    deferrable: true,
    description:
      "Who calls a function or method (incoming) and what it calls (outgoing), one level deep, with the lines of each call.",
    input: z.object({
      ...targetFields,
      direction: z.enum(["incoming", "outgoing", "both"]).optional().describe("Default both."),
      limit: limitField,
    }),
    output: callHierarchyPayload,
    paths: (input) => [input.path],
    async execute(input, ctx): Promise<CallHierarchyPayload> {
      const target = await resolveTarget(input, ctx, opts);
      requireSupport(target.backend, "textDocument/prepareCallHierarchy");
      const backend = target.backend;
      const items = await backend.request<CallHierarchyItem[] | null>(
        "textDocument/prepareCallHierarchy",
        { textDocument: { uri: toUri(target.abs) }, position: target.position },
        { signal: ctx.signal },
      );
      const item = items?.[0];
      if (!item) throw new ToolbeltError("ENO_MATCH", `no function or method at ${targetLabel(target)}`);
      const direction = input.direction ?? "both";
      const cap = capOf(ctx, input.limit);
      const lines = new LineReader(ctx, backend);
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
            { signal: ctx.signal },
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
            { signal: ctx.signal },
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
