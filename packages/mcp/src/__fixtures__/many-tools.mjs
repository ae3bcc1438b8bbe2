// A real MCP server (stdio, the SDK's Server) whose tool list an attack test chooses:
// MANY_TOOLS_NAMES (a JSON array of names), or MANY_TOOLS_COUNT tools named t0, t1, ...;
// MANY_TOOLS_DESCRIPTION_CHARS pads every description to that size; MANY_TOOLS_SCHEMA_KEYS gives every
// schema that many properties. Every tool answers with its own name.
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const names = process.env.MANY_TOOLS_NAMES
  ? JSON.parse(process.env.MANY_TOOLS_NAMES)
  : Array.from({ length: Number(process.env.MANY_TOOLS_COUNT ?? 3) }, (_, i) => `t${i}`);
const descriptionChars = Number(process.env.MANY_TOOLS_DESCRIPTION_CHARS ?? 0);
const schemaKeys = Number(process.env.MANY_TOOLS_SCHEMA_KEYS ?? 0);
const properties = {};
for (let i = 0; i < schemaKeys; i++) properties[`p${i}`] = { type: "string", description: `property ${i}` };

const tools = names.map((name) => ({
  name,
  description: descriptionChars > 0 ? `tool ${name} `.padEnd(descriptionChars, "d") : `tool ${name}`,
  inputSchema: { type: "object", properties },
  annotations: { readOnlyHint: true },
}));

const server = new Server({ name: "many", version: "1.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, (request) => ({
  content: [{ type: "text", text: `called ${request.params.name}` }],
}));
await server.connect(new StdioServerTransport());
