// A small real MCP server (stdio, the SDK's Server) for tests: text, images, structured content,
// isError, a tool that crashes the process, and a tool that adds a tool (notifications/tools/list_changed).
// TOY_MODE=hang never answers initialize; TOY_MODE=exit dies at once; TOY_PID_FILE records the pid.
// TOY_MODE=http serves streamable HTTP (stateless) on a free port, printed as "listening <port>", and
// refuses requests without "Authorization: Bearer $TOY_TOKEN".
// Tool "order" asks the user for input (elicitation/create) and reports what came back; TOY_FORM=bad
// sends a form with a nested object (which no client may show).
import { writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

if (process.env.TOY_PID_FILE) writeFileSync(process.env.TOY_PID_FILE, String(process.pid));
if (process.env.TOY_MODE === "exit") {
  process.stderr.write("toy: cannot open the database\n");
  process.exit(3);
}
if (process.env.TOY_MODE === "hang") {
  setInterval(() => {}, 1000);
} else {
  const object = (properties, required = []) => ({ type: "object", properties, required });
  const tools = [
    {
      name: "echo",
      description: "Echo a message back, upper-cased on request.",
      inputSchema: object(
        { message: { type: "string", description: "what to echo" }, upper: { type: "boolean" } },
        ["message"],
      ),
      annotations: { readOnlyHint: true },
    },
    {
      name: "pixel",
      description: "Return a one-pixel PNG image.",
      inputSchema: object({}),
      annotations: { readOnlyHint: true },
    },
    {
      name: "weather",
      description: "Structured weather for a city.",
      inputSchema: object({ city: { type: "string" } }, ["city"]),
      outputSchema: object({ city: { type: "string" }, celsius: { type: "number" } }, ["city", "celsius"]),
      annotations: { readOnlyHint: true },
    },
    {
      name: "fail",
      description: "Always reports a tool error.",
      inputSchema: object({}),
      annotations: { readOnlyHint: true },
    },
    {
      name: "crash",
      description: "Exits the server process in the middle of the call.",
      inputSchema: object({}),
      annotations: { readOnlyHint: true },
    },
    {
      name: "add_tool",
      description: "Adds a tool named by the input and announces the new list.",
      inputSchema: object({ name: { type: "string" } }, ["name"]),
    },
    {
      name: "order",
      description: "Asks the user for an order (elicitation) and reports the answer.",
      inputSchema: object({}),
      annotations: { readOnlyHint: true },
    },
    {
      name: "stall",
      description: "Never answers.",
      inputSchema: object({}),
      annotations: { readOnlyHint: true },
    },
    {
      name: "env",
      description: "Read an environment variable of the server process.",
      inputSchema: object({ name: { type: "string" } }, ["name"]),
      annotations: { readOnlyHint: true },
    },
  ];
  const makeServer = () => {
  const server = new Server({ name: "toy", version: "1.2.3" }, { capabilities: { tools: { listChanged: true } } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const args = request.params.arguments ?? {};
    switch (request.params.name) {
      case "echo": {
        const text = String(args.message);
        return { content: [{ type: "text", text: args.upper ? text.toUpperCase() : text }] };
      }
      case "pixel":
        return {
          content: [
            { type: "text", text: "one pixel" },
            {
              type: "image",
              mimeType: "image/png",
              data: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
            },
          ],
        };
      case "weather": {
        const structured = { city: String(args.city), celsius: 21.5 };
        return { content: [{ type: "text", text: JSON.stringify(structured) }], structuredContent: structured };
      }
      case "fail":
        return { content: [{ type: "text", text: "the toy refused: quota exceeded" }], isError: true };
      case "crash":
        process.stderr.write("toy: segfault in handler\n");
        setTimeout(() => process.exit(7), 10);
        return new Promise(() => {});
      case "add_tool":
        tools.push({
          name: String(args.name),
          description: `A tool added at run time (${String(args.name)}).`,
          inputSchema: object({}),
          annotations: { readOnlyHint: true },
        });
        await server.sendToolListChanged();
        return { content: [{ type: "text", text: `added ${String(args.name)}` }] };
      case "order": {
        if (!server.getClientCapabilities()?.elicitation)
          return { content: [{ type: "text", text: "no elicitation: the client cannot ask" }], isError: true };
        const requestedSchema =
          process.env.TOY_FORM === "bad"
            ? object({ address: { type: "object", properties: { street: { type: "string" } } } })
            : object(
                {
                  item: { type: "string", title: "Item", enum: ["tea", "coffee"], default: "tea" },
                  cups: { type: "integer", description: "How many", minimum: 1, maximum: 9, default: 2 },
                  note: { type: "string", description: "A note for the kitchen" },
                  email: { type: "string", format: "email" },
                  sugar: { type: "boolean", default: false },
                },
                ["item", "cups"],
              );
        const answer = await server.elicitInput({ message: "What would you like?", requestedSchema });
        return { content: [{ type: "text", text: `order: ${JSON.stringify(answer)}` }] };
      }
      case "stall":
        return new Promise(() => {});
      case "env":
        return { content: [{ type: "text", text: process.env[String(args.name)] ?? "(unset)" }] };
      default:
        if (tools.some((t) => t.name === request.params.name))
          return { content: [{ type: "text", text: `ran ${request.params.name}` }] };
        throw new Error(`unknown tool ${request.params.name}`);
    }
  });
  return server;
  };
  if (process.env.TOY_MODE === "http") {
    const http = createServer(async (req, res) => {
      if (req.headers.authorization !== `Bearer ${process.env.TOY_TOKEN}`) {
        res.writeHead(401).end("unauthorized");
        return;
      }
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on("close", () => transport.close());
      await makeServer().connect(transport);
      await transport.handleRequest(req, res);
    });
    http.listen(0, "127.0.0.1", () => process.stdout.write(`listening ${http.address().port}\n`));
  } else {
    await makeServer().connect(new StdioServerTransport());
  }
}
