import { z } from "zod";
import { toolJsonSchema } from "./schema-export.js";
import { renderText } from "./text-format.js";
import { type AnyTool, asAnyTool, defineTool } from "./tool.js";
import type { Binding } from "./tool-bindings.js";

function tokens(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((t) => t.length > 1);
}

function haystack(binding: Binding): { name: string; words: Set<string>; text: string } {
  const schema = toolJsonSchema(binding.tool, binding.variant?.input);
  const args = Object.keys((schema.properties ?? {}) as Record<string, unknown>);
  const description = binding.variant?.description ?? binding.tool.description;
  const text = `${binding.name} ${description} ${args.join(" ")}`.toLowerCase();
  return {
    name: binding.name.toLowerCase(),
    words: new Set(tokens(`${binding.name.replace(/_/g, " ")} ${text}`)),
    text,
  };
}

/**
 * Finds deferred tools: `select:a,b` picks exact names; otherwise keywords score over names,
 * descriptions and argument names, and `+term` makes a term required.
 */
export function searchTools(candidates: Binding[], query: string, limit = 5): Binding[] {
  const q = query.trim();
  const names = selectedNames(q);
  if (names) return names.flatMap((n) => candidates.filter((c) => c.name === n));
  const terms = q.split(/\s+/).filter(Boolean);
  const required = terms
    .filter((t) => t.startsWith("+") && t.length > 1)
    .map((t) => t.slice(1).toLowerCase());
  const optional = terms.filter((t) => !t.startsWith("+")).flatMap(tokens);
  const scored: Array<{ binding: Binding; score: number }> = [];
  for (const binding of candidates) {
    const h = haystack(binding);
    if (!required.every((r) => h.text.includes(r) || h.name.includes(r))) continue;
    let score = required.length * 5;
    for (const term of optional) {
      if (h.name === term) score += 10;
      else if (h.name.includes(term)) score += 5;
      if (h.words.has(term)) score += 2;
      else if (h.text.includes(term)) score += 1;
    }
    if (score > 0) scored.push({ binding, score });
  }
  return scored
    .sort((a, b) => b.score - a.score || a.binding.name.localeCompare(b.binding.name))
    .slice(0, limit)
    .map((s) => s.binding);
}

function selectedNames(query: string): string[] | undefined {
  const q = query.trim();
  if (!q.toLowerCase().startsWith("select:")) return undefined;
  return q
    .slice("select:".length)
    .split(",")
    .map((n) => n.trim())
    .filter(Boolean);
}

function notFound(query: string, found: Binding[]): { not_found?: string[] } {
  const names = selectedNames(query);
  if (!names) return {};
  const missing = names.filter((n) => !found.some((b) => b.name === n));
  return missing.length ? { not_found: missing } : {};
}

const toolSearchOutput = z.object({
  kind: z.literal("tool_search_results"),
  query: z.string(),
  bound: z.array(z.string()).describe("the tools found, bound for the following calls"),
  not_found: z
    .array(z.string())
    .optional()
    .describe("names asked for with `select:` that are not deferrable tools of this session"),
  tools: z.array(
    z.object({
      name: z.string(),
      description: z.string(),
      input_schema: z.record(z.string(), z.unknown()),
    }),
  ),
  remaining_deferred: z.number().int(),
});

/**
 * tool_search: finds deferred tools and binds them for the following calls. It searches only what the
 * session was granted and is exempt from agent.allowed_tools.
 */
export const toolSearch = defineTool({
  name: "tool_search",
  family: "core",
  access: "read",
  description:
    'Find and load deferred tools. Query with "select:name1,name2" for exact names, or keywords (prefix a term with + to require it). Matching tools are bound for your next calls; their full schemas are returned.',
  input: z.object({
    query: z.string().min(1).describe('"select:a,b" or keywords; +term requires a term'),
    max_results: z.number().int().min(1).max(20).optional().describe("at most this many tools (default 5)"),
  }),
  output: toolSearchOutput,
  execute(input, ctx) {
    const found = ctx.session.searchTools(input.query, input.max_results ?? 5);
    ctx.session.discover(found.map((b) => b.name));
    // Every tool returned is bound now (newly or already), so the history records each of them.
    return {
      kind: "tool_search_results",
      query: input.query,
      bound: found.map((b) => b.name),
      ...notFound(input.query, found),
      tools: found.map((b) => ({
        name: b.name,
        description: b.variant?.description ?? b.tool.description,
        input_schema: toolJsonSchema(b.tool, b.variant?.input),
      })),
      remaining_deferred: ctx.session.bind().deferred.length,
    };
  },
  render(payload) {
    const body = payload.tools.length
      ? payload.tools
          .map((t) => `## ${t.name}\n${t.description}\n${JSON.stringify(t.input_schema)}`)
          .join("\n\n")
      : "No deferred tool matched. Try other keywords or select:<exact name>.";
    return renderText(
      [
        ["Kind", payload.kind],
        ["Query", payload.query],
        ["Bound", payload.bound.join(", ") || "(none)"],
        ["Not-Found", payload.not_found?.join(", ")],
        ["Remaining-Deferred", payload.remaining_deferred],
      ],
      body,
    );
  },
});

// Erased as registries hold tools; the typed definition above gives ToolResultMap its result type.
export const toolSearchTool: AnyTool = asAnyTool(toolSearch);

/**
 * Rebuilds the set of tools tool_search bound from a conversation's messages, so discovery survives
 * compaction: it reads tool_search results in structured form or in their `# Bound:` text form.
 */
export function discoveredFromHistory(messages: unknown[]): string[] {
  const found = new Set<string>();
  const visit = (value: unknown, depth: number): void => {
    if (depth > 8 || value === null || value === undefined) return;
    if (typeof value === "string") {
      if (!value.includes("# Kind: tool_search_results")) return;
      const m = /^# Bound: (.*)$/m.exec(value);
      if (m?.[1] && m[1] !== "(none)") for (const n of m[1].split(",")) found.add(n.trim());
      return;
    }
    if (Array.isArray(value)) {
      for (const item of value) visit(item, depth + 1);
      return;
    }
    if (typeof value === "object") {
      const record = value as Record<string, unknown>;
      if (record.kind === "tool_search_results" && Array.isArray(record.bound)) {
        for (const n of record.bound) if (typeof n === "string") found.add(n);
        return;
      }
      for (const v of Object.values(record)) visit(v, depth + 1);
    }
  };
  visit(messages, 0);
  return [...found];
}
