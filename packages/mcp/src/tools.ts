import { createHash } from "node:crypto";
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import {
  type Access,
  type AnyTool,
  asAnyTool,
  defineTool,
  type ErrorPayload,
  errorPayload,
  type JsonSchema,
  type Limits,
  renderText,
  type ToolAnnotations,
  z,
} from "@toolbelt/core";
import type { McpConnection } from "./connection.js";
import type { Elicited } from "./elicitation.js";

const mcpContent = z.discriminatedUnion("type", [
  z.object({ type: z.literal("text"), text: z.string() }),
  z.object({
    type: z.enum(["image", "audio"]),
    mime_type: z.string(),
    bytes: z.number().int(),
    data: z.string().optional(),
    omitted: z.string().optional(),
  }),
  z.object({
    type: z.literal("resource_link"),
    uri: z.string(),
    name: z.string().optional(),
    mime_type: z.string().optional(),
    description: z.string().optional(),
  }),
  z.object({
    type: z.literal("resource"),
    uri: z.string(),
    mime_type: z.string().optional(),
    text: z.string().optional(),
    blob_bytes: z.number().int().optional(),
  }),
]);

const elicitationNote = z.object({
  message: z.string().describe("what the server asked"),
  action: z.enum(["accept", "decline", "cancel"]),
  by: z
    .enum(["client", "policy"])
    .describe("`client`: a person or the client answered; `policy`: toolbelt did"),
  reason: z.string().optional().describe("why it was declined or cancelled"),
});

/** What a tool of an MCP server returns in the session (an `isError` result becomes an error payload). */
export const mcpResultPayload = z.object({
  kind: z.literal("mcp_result"),
  server: z.string().describe("the server's name as configured"),
  tool: z.string().describe("the tool's name on the server"),
  content: z.array(mcpContent),
  structured: z.unknown().optional().describe("the server's structuredContent, verbatim"),
  truncated: z
    .object({ chars: z.number().int(), cap: z.number().int() })
    .optional()
    .describe("text beyond the cap was cut; says how much there was"),
  elicitations: z
    .array(elicitationNote)
    .optional()
    .describe("what the server asked the user during the call (elicitation) and what it got"),
});

export type McpContent = z.output<typeof mcpContent>;
export type McpResultPayload = z.output<typeof mcpResultPayload>;

const TOOL_NAME_MAX = 64;
const PREFIX = "mcp__";

/**
 * What one MCP server may bring into a session; mcp_status states these and what each one cut.
 * A server is code the user chose to run, but its tool list still lands in every model request.
 */
export const MCP_LIMITS = {
  /** Tools registered per server; the rest of its list is left out (in the server's order). */
  tools_per_server: 128,
  /** A tool name longer than this on the server is refused (the MCP spec says at most 128). */
  name_chars: 128,
  /** A description is cut to this many characters. */
  description_chars: 4096,
  /** A tool whose input schema is bigger than this as JSON is refused. */
  schema_bytes: 64 * 1024,
} as const;

// How many notes one server's status lists by name before it only counts.
const NOTES_SHOWN = 20;

function sanitise(part: string): string {
  return part.replace(/[^a-zA-Z0-9_-]/g, "_");
}

/**
 * The name a server tool is bound under: `mcp__<server>__<tool>`, with characters a provider would
 * refuse replaced by `_`. Over 64 characters it is cut and ends in a short hash, so it stays unique.
 */
export function toolNameFor(server: string, tool: string): string {
  const name = `${PREFIX}${sanitise(server)}__${sanitise(tool)}`;
  if (name.length <= TOOL_NAME_MAX) return name;
  const hash = createHash("sha256").update(`${server}\0${tool}`).digest("hex").slice(0, 8);
  return `${name.slice(0, TOOL_NAME_MAX - 9)}_${hash}`;
}

/**
 * The zod schema that validates calls: built from the server's JSON Schema when zod can read it,
 * else any object (the server validates anyway). Models always see the server's schema verbatim.
 */
export function validatorFor(schema: JsonSchema): z.ZodType {
  try {
    const zod = z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]);
    zod.safeParse({});
    return zod;
  } catch {
    return z.record(z.string(), z.unknown());
  }
}

/** The server's input schema as bound: an object schema without the `$schema` dialect marker. */
export function boundSchemaOf(tool: Tool): JsonSchema {
  const { $schema: _dialect, ...schema } = tool.inputSchema as JsonSchema;
  return schema.type === "object" ? schema : { ...schema, type: "object" };
}

/**
 * readOnlyHint → read (runs without asking, like read_file); anything else → execute (asks, like the
 * shell), because an MCP tool may reach anything the server process can. The hint is the server's
 * word, and the server is code the project chose to run, so trusting it grants nothing new.
 */
export function accessFor(tool: Tool): Access {
  return tool.annotations?.readOnlyHint === true ? "read" : "execute";
}

/** The server's hints as bound (title included); keys the server left out stay out. */
export function annotationsOf(tool: Tool): ToolAnnotations {
  const a = tool.annotations ?? {};
  const out: ToolAnnotations = {};
  const title = a.title ?? tool.title;
  if (typeof title === "string" && title) out.title = title.slice(0, 200);
  for (const key of ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"] as const) {
    if (typeof a[key] === "boolean") out[key] = a[key];
  }
  return out;
}

function describe(server: string, tool: Tool): string {
  let text = tool.description?.trim() || tool.annotations?.title || tool.title || `${tool.name}`;
  if (text.length > MCP_LIMITS.description_chars)
    text = `${text.slice(0, MCP_LIMITS.description_chars)}… (cut at ${MCP_LIMITS.description_chars} characters)`;
  return `${text} (MCP server ${server}, tool ${tool.name})`;
}

function base64Bytes(data: string): number {
  const padding = data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0;
  return Math.max(0, Math.floor((data.length * 3) / 4) - padding);
}

/** Maps a CallToolResult to a payload: isError becomes an error payload naming the server and tool. */
export function payloadOf(
  server: string,
  tool: string,
  result: CallToolResult,
  limits: Pick<Limits, "shellOutputMaxChars" | "fileReadMaxImageBytes">,
  elicited: Elicited[] = [],
): McpResultPayload | ErrorPayload {
  const content: McpContent[] = [];
  let chars = 0;
  let total = 0;
  const cap = limits.shellOutputMaxChars;
  const takeText = (text: string): string => {
    total += text.length;
    const room = Math.max(0, cap - chars);
    const kept = text.length > room ? text.slice(0, room) : text;
    chars += kept.length;
    return kept;
  };
  for (const item of result.content ?? []) {
    switch (item.type) {
      case "text":
        content.push({ type: "text", text: takeText(item.text) });
        break;
      case "image":
      case "audio": {
        const bytes = base64Bytes(item.data);
        const media: McpContent = { type: item.type, mime_type: item.mimeType, bytes };
        if (bytes <= limits.fileReadMaxImageBytes) media.data = item.data;
        else media.omitted = `larger than fileReadMaxImageBytes (${limits.fileReadMaxImageBytes})`;
        content.push(media);
        break;
      }
      case "resource_link":
        content.push({
          type: "resource_link",
          uri: item.uri,
          name: item.name,
          ...(item.mimeType ? { mime_type: item.mimeType } : {}),
          ...(item.description ? { description: item.description } : {}),
        });
        break;
      case "resource": {
        const r = item.resource;
        const entry: McpContent = { type: "resource", uri: r.uri };
        if (r.mimeType) entry.mime_type = r.mimeType;
        if ("text" in r && typeof r.text === "string") entry.text = takeText(r.text);
        if ("blob" in r && typeof r.blob === "string") entry.blob_bytes = base64Bytes(r.blob);
        content.push(entry);
        break;
      }
    }
  }
  if (result.isError === true) {
    const message = content
      .map((c) => (c.type === "text" ? c.text : c.type === "resource" ? (c.text ?? c.uri) : ""))
      .filter(Boolean)
      .join("\n");
    const asked = elicited.length ? `\n${elicitationLines(elicited).join("\n")}` : "";
    return errorPayload("ETOOL_FAILED", `${message || `${tool} failed on MCP server "${server}"`}${asked}`, {
      server,
      server_tool: tool,
      ...(elicited.length ? { elicitations: elicited } : {}),
    });
  }
  const payload: McpResultPayload = { kind: "mcp_result", server, tool, content };
  if (result.structuredContent !== undefined) payload.structured = result.structuredContent;
  if (total > chars) payload.truncated = { chars: total, cap };
  if (elicited.length) payload.elicitations = elicited;
  return payload;
}

/** One line per question the server asked during a call: what it asked and what it got. */
function elicitationLines(elicited: Elicited[]): string[] {
  return elicited.map((e) => {
    const who = e.by === "policy" ? "toolbelt" : "the client";
    const what = e.action === "accept" ? "accepted" : e.action === "decline" ? "declined" : "cancelled";
    return `[the server asked: ${JSON.stringify(e.message)}; ${who} ${what}${e.reason ? `: ${e.reason}` : ""}]`;
  });
}

/** Text first, media and resources as one-line notes; structured content when nothing else was said. */
export function renderResult(payload: McpResultPayload): string {
  const lines = payload.content.map((c) => {
    switch (c.type) {
      case "text":
        return c.text;
      case "image":
      case "audio":
        return `[${c.type} ${c.mime_type}, ${c.bytes} bytes${c.omitted ? `, omitted: ${c.omitted}` : ""}]`;
      case "resource_link":
        return `[resource link ${c.uri}${c.name ? ` (${c.name})` : ""}]`;
      case "resource":
        return c.text !== undefined
          ? `[resource ${c.uri}]\n${c.text}`
          : `[resource ${c.uri}${c.blob_bytes !== undefined ? `, ${c.blob_bytes} bytes` : ""}]`;
    }
    return "";
  });
  let body = lines.filter((l) => l !== "").join("\n");
  if (!body && payload.structured !== undefined) body = JSON.stringify(payload.structured, null, 2);
  if (payload.elicitations?.length)
    body = [...elicitationLines(payload.elicitations), body].filter(Boolean).join("\n");
  return renderText(
    [
      ["Kind", payload.kind],
      ["Server", payload.server],
      ["Tool", payload.tool],
      ["Content", payload.content.length],
      [
        "Truncated",
        payload.truncated
          ? `${payload.truncated.chars} chars (capped at ${payload.truncated.cap} chars)`
          : undefined,
      ],
    ],
    body,
  );
}

/** One server tool as a deferrable session tool named mcp__<server>__<tool>. */
export function toSessionTool(
  connection: McpConnection,
  tool: Tool,
  name = toolNameFor(connection.name, tool.name),
): AnyTool {
  const server = connection.name;
  const jsonSchema = boundSchemaOf(tool);
  return asAnyTool(
    defineTool({
      name,
      family: "mcp",
      access: accessFor(tool),
      deferrable: true,
      description: describe(server, tool),
      input: validatorFor(jsonSchema),
      jsonSchema,
      annotations: annotationsOf(tool),
      output: mcpResultPayload,
      async execute(input, ctx): Promise<McpResultPayload | ErrorPayload> {
        const { result, elicited } = await connection.callTool(
          tool.name,
          (input ?? {}) as Record<string, unknown>,
          ctx.signal,
        );
        return payloadOf(server, tool.name, result, ctx.limits, elicited);
      },
      render: (payload: McpResultPayload) => renderResult(payload),
    }),
  );
}

/** The tools of one server as the session gets them, and what was refused, cut or renamed on the way. */
export type ServerToolPlan = {
  tools: AnyTool[];
  /** How many tools the server listed. */
  listed: number;
  notes: string[];
};

type Candidate = { connection: McpConnection; tool: Tool; name: string };

/**
 * The session tools of every server at once. Naming all servers together makes a collision
 * (`a` + tool `b__c` and `a__b` + tool `c` are both mcp__a__b__c) come out the same whatever order
 * the servers started in: the tool of the server whose name sorts first (then the tool name) keeps
 * the name, each other one gets a suffix hashed from its server and tool, and its status says so.
 */
export function planTools(connections: readonly McpConnection[]): Map<McpConnection, ServerToolPlan> {
  const plans = new Map<McpConnection, ServerToolPlan>();
  const candidates: Candidate[] = [];
  for (const connection of connections) {
    const plan: ServerToolPlan = { tools: [], listed: connection.listed, notes: [] };
    plans.set(connection, plan);
    const refused: string[] = [];
    let kept = 0;
    let over = 0;
    let cut = 0;
    for (const tool of connection.tools) {
      const problem = refusal(tool);
      if (problem) {
        refused.push(problem);
        continue;
      }
      if (kept >= MCP_LIMITS.tools_per_server) {
        over++;
        continue;
      }
      kept++;
      if ((tool.description?.trim().length ?? 0) > MCP_LIMITS.description_chars) cut++;
      candidates.push({ connection, tool, name: toolNameFor(connection.name, tool.name) });
    }
    // Tools the client did not even keep from the listing count as over the cap too.
    over += Math.max(0, connection.listed - connection.tools.length);
    if (over > 0)
      plan.notes.push(
        `listed ${connection.listed} tools: only the first ${MCP_LIMITS.tools_per_server} are registered (at most ${MCP_LIMITS.tools_per_server} tools per server)`,
      );
    if (cut > 0)
      plan.notes.push(
        `${cut} tool description${cut === 1 ? "" : "s"} cut to ${MCP_LIMITS.description_chars} characters (description cut)`,
      );
    for (const problem of refused.slice(0, NOTES_SHOWN)) plan.notes.push(problem);
    if (refused.length > NOTES_SHOWN)
      plan.notes.push(`… and ${refused.length - NOTES_SHOWN} more tools refused`);
  }

  const byName = new Map<string, Candidate[]>();
  for (const c of candidates) byName.set(c.name, [...(byName.get(c.name) ?? []), c]);
  const taken = new Set(byName.keys());
  const renamed = new Map<McpConnection, string[]>();
  for (const group of byName.values()) {
    group.sort((x, y) => compare(x.connection.name, y.connection.name) || compare(x.tool.name, y.tool.name));
    const [first, ...rest] = group;
    if (!first) continue;
    for (const c of rest) {
      c.name = suffixed(c, taken);
      taken.add(c.name);
      const holder =
        first.connection === c.connection
          ? `this server's tool ${JSON.stringify(first.tool.name)}`
          : `server ${JSON.stringify(first.connection.name)}'s tool ${JSON.stringify(first.tool.name)}`;
      const notes = renamed.get(c.connection) ?? [];
      notes.push(`${c.tool.name} is bound as ${c.name}: ${first.name} is taken by ${holder}`);
      renamed.set(c.connection, notes);
    }
  }
  for (const [connection, notes] of renamed) {
    const plan = plans.get(connection);
    plan?.notes.push(...notes.slice(0, NOTES_SHOWN));
    if (notes.length > NOTES_SHOWN) plan?.notes.push(`… and ${notes.length - NOTES_SHOWN} more renamed`);
  }

  for (const c of candidates) {
    const plan = plans.get(c.connection);
    try {
      plan?.tools.push(toSessionTool(c.connection, c.tool, c.name));
    } catch (error) {
      plan?.notes.push(`${c.tool.name} refused: ${(error as Error).message.slice(0, 200)}`);
    }
  }
  return plans;
}

/** Why a listed tool is not registered at all, or undefined when it may be. */
function refusal(tool: Tool): string | undefined {
  const name: unknown = tool.name;
  if (typeof name !== "string" || name === "") return "a tool with an empty name was refused";
  if (name.length > MCP_LIMITS.name_chars)
    return `a tool name of ${name.length} characters was refused (${JSON.stringify(name.slice(0, 40))}…): over ${MCP_LIMITS.name_chars} characters`;
  let size: number;
  try {
    size = JSON.stringify(tool.inputSchema ?? {}).length;
  } catch {
    size = Number.POSITIVE_INFINITY;
  }
  if (size > MCP_LIMITS.schema_bytes)
    return `${name} refused: its input schema is ${Number.isFinite(size) ? `${size} bytes` : "not serialisable"}, over ${MCP_LIMITS.schema_bytes} bytes`;
  return undefined;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A colliding name made unique with a hash of its server and tool, stable across runs. */
function suffixed(c: Candidate, taken: Set<string>): string {
  for (let salt = 0; ; salt++) {
    const hash = createHash("sha256")
      .update(`${salt}\0${c.connection.name}\0${c.tool.name}`)
      .digest("hex")
      .slice(0, 8);
    const name = `${c.name.slice(0, TOOL_NAME_MAX - 9)}_${hash}`;
    if (!taken.has(name)) return name;
  }
}
