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
} from "@toolbelt/core";
import { z } from "zod";
import type { McpConnection } from "./connection.js";

export type McpContent =
  | { type: "text"; text: string }
  | { type: "image" | "audio"; mime_type: string; bytes: number; data?: string; omitted?: string }
  | { type: "resource_link"; uri: string; name?: string; mime_type?: string; description?: string }
  | { type: "resource"; uri: string; mime_type?: string; text?: string; blob_bytes?: number };

export type McpResultPayload = {
  kind: "mcp_result";
  /** The server's name as configured. */
  server: string;
  /** The tool's name on the server. */
  tool: string;
  content: McpContent[];
  /** The server's structuredContent, verbatim. */
  structured?: unknown;
  /** Text beyond the cap was cut; says how much there was. */
  truncated?: { chars: number; cap: number };
};

const TOOL_NAME_MAX = 64;
const PREFIX = "mcp__";

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
  if (title) out.title = title;
  for (const key of ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"] as const) {
    if (typeof a[key] === "boolean") out[key] = a[key];
  }
  return out;
}

function describe(server: string, tool: Tool): string {
  const text = tool.description?.trim() || tool.annotations?.title || tool.title || `${tool.name}`;
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
    return errorPayload("ETOOL_FAILED", message || `${tool} failed on MCP server "${server}"`, {
      server,
      server_tool: tool,
    });
  }
  const payload: McpResultPayload = { kind: "mcp_result", server, tool, content };
  if (result.structuredContent !== undefined) payload.structured = result.structuredContent;
  if (total > chars) payload.truncated = { chars: total, cap };
  return payload;
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
      async execute(input, ctx): Promise<McpResultPayload | ErrorPayload> {
        const result = await connection.callTool(
          tool.name,
          (input ?? {}) as Record<string, unknown>,
          ctx.signal,
        );
        return payloadOf(server, tool.name, result, ctx.limits);
      },
      render: (payload: McpResultPayload) => renderResult(payload),
    }),
  );
}

/** All tools of a server, with names made unique when sanitising made two equal. */
export function sessionToolsOf(connection: McpConnection): AnyTool[] {
  const seen = new Set<string>();
  const tools: AnyTool[] = [];
  for (const tool of connection.tools) {
    let name = toolNameFor(connection.name, tool.name);
    if (seen.has(name)) {
      const hash = createHash("sha256").update(tool.name).digest("hex").slice(0, 6);
      name = `${name.slice(0, TOOL_NAME_MAX - 7)}_${hash}`;
    }
    seen.add(name);
    try {
      tools.push(toSessionTool(connection, tool, name));
    } catch {
      // A tool whose name cannot be made valid is skipped rather than failing the whole server.
    }
  }
  return tools;
}
