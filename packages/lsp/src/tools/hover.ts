import { defineTool, renderText, z } from "@toolbelt/core";
import type { Hover, MarkedString, MarkupContent } from "vscode-languageserver-protocol";
import { type LspFamilyOptions, requireSupport } from "../manager.js";
import { resolveTarget, targetFields, targetLabel } from "../target.js";
import { toUri } from "../uri.js";

const hoverPayload = z.object({
  kind: z.literal("lsp_hover"),
  target: z.string(),
  server: z.string(),
  text: z.string(),
});

function hoverText(hover: Hover | null): string {
  if (!hover) return "";
  const one = (c: MarkupContent | MarkedString): string =>
    typeof c === "string" ? c : "kind" in c ? c.value : `\`\`\`${c.language}\n${c.value}\n\`\`\``;
  const contents = hover.contents;
  return (Array.isArray(contents) ? contents.map(one) : [one(contents as MarkupContent | MarkedString)])
    .join("\n\n")
    .trim();
}

export function hoverTool(opts: LspFamilyOptions) {
  return defineTool({
    name: "lsp_hover",
    family: "lsp",
    access: "read",
    deferrable: true,
    description: "The type and documentation of the symbol at a position (or named by symbol path).",
    input: z.object(targetFields),
    output: hoverPayload,
    paths: (input) => [input.path],
    async execute(input, ctx) {
      const target = await resolveTarget(input, ctx, opts);
      requireSupport(target.backend, "textDocument/hover");
      const hover = await target.backend.request<Hover | null>(
        "textDocument/hover",
        { textDocument: { uri: toUri(target.abs) }, position: target.position },
        { signal: ctx.signal },
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
