import fs from "node:fs/promises";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  type McpError,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt } from "./cli-harness.js";
import { BIN, makeRoot } from "./serve-fixture.js";

// A missing or stale build fails these tests (see assertBuilt), it does not skip them.
beforeAll(assertBuilt);

type TextContent = Array<{ type: string; text?: string }>;

async function connect(
  root: string,
  options: { elicitation?: boolean; command?: string; args?: string[] } = {},
): Promise<Client> {
  const client = new Client(
    { name: "serve-mcp-test", version: "1.0.0" },
    options.elicitation ? { capabilities: { elicitation: { form: {} } } } : {},
  );
  const transport = new StdioClientTransport({
    command: options.command ?? process.execPath,
    args: options.args ?? [BIN, "serve", "--mcp", "--trust", "--root", root],
    stderr: "pipe",
  });
  await client.connect(transport);
  return client;
}

describe("toolbelt serve --mcp (real MCP SDK client over stdio)", () => {
  let root: string;
  beforeAll(async () => {
    root = await makeRoot();
  });
  afterAll(async () => {
    await fs.rm(root, { recursive: true, force: true });
  });

  it("lists bound tools, defers the deferrable ones and answers calls with text + structured content", async () => {
    const client = await connect(root);
    try {
      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name);
      expect(names).toContain("tool_search");
      expect(names).toContain("slow_wait");
      expect(names).not.toContain("echo_deferred");
      // No elicitation: nobody can answer a question, so ask_user_question is not offered.
      expect(names).not.toContain("ask_user_question");
      for (const tool of tools) expect(tool.inputSchema.type).toBe("object");

      const forwarded: Array<{ type?: string; tool?: string }> = [];
      client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
        forwarded.push(n.params.data as { type?: string; tool?: string });
      });
      // Events are forwarded only to a client that asks for debug logs.
      await client.callTool({ name: "slow_wait", arguments: { ms: 1 } });
      expect(forwarded).toEqual([]);
      await client.setLoggingLevel("debug");
      const result = await client.callTool({ name: "slow_wait", arguments: { ms: 1 } });
      expect(result.isError).toBe(false);
      expect(result.structuredContent).toEqual({ kind: "waited", ms: 1 });
      expect((result.content as TextContent)[0]?.text).toContain("# Kind: waited");

      // The session's events come along as log messages.
      expect(forwarded.map((e) => `${e.type}:${e.tool}`)).toEqual(
        expect.arrayContaining(["tool_call:slow_wait", "tool_result:slow_wait"]),
      );
      const bad = await client.callTool({ name: "slow_wait", arguments: { ms: "soon" } });
      expect(bad.isError).toBe(true);
      expect(bad.structuredContent).toMatchObject({ kind: "error", code: "EINVAL_INPUT" });
    } finally {
      await client.close();
    }
  });

  it("sends tools/list_changed after tool_search binds a deferred tool, and lists it next time", async () => {
    const client = await connect(root);
    try {
      let changed = 0;
      const notified = new Promise<void>((resolve) => {
        client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
          changed++;
          resolve();
        });
      });
      // Not bound yet: a protocol error (-32602) that says how to bind it.
      const deferredCall = await client.callTool({ name: "echo_deferred", arguments: { text: "x" } }).then(
        () => undefined,
        (error: unknown) => error as McpError,
      );
      expect(deferredCall?.code).toBe(-32602);
      expect(deferredCall?.message).toContain("tool_search");

      const search = await client.callTool({
        name: "tool_search",
        arguments: { query: "select:echo_deferred" },
      });
      expect(search.structuredContent).toMatchObject({
        kind: "tool_search_results",
        bound: ["echo_deferred"],
      });
      await notified;
      expect(changed).toBe(1);
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toContain("echo_deferred");
      const echo = await client.callTool({ name: "echo_deferred", arguments: { text: "round trip" } });
      expect(echo.structuredContent).toEqual({ kind: "echo", text: "round trip" });
    } finally {
      await client.close();
    }
  });

  it("without elicitation, a call that needs approval is denied with a message saying how to allow it", async () => {
    const client = await connect(root);
    try {
      const result = await client.callTool({ name: "touch_marker", arguments: { name: "m1.txt" } });
      expect(result.isError).toBe(true);
      expect(result.structuredContent).toMatchObject({ kind: "error", code: "EDENIED" });
      expect((result.content as TextContent)[0]?.text).toMatch(/needs approval.*--allow fixture/s);
      await expect(fs.access(path.join(root, "m1.txt"))).rejects.toThrow();
    } finally {
      await client.close();
    }
  });

  it("with elicitation, approvals and ask_user_question round-trip through elicitation/create", async () => {
    const client = await connect(root, { elicitation: true });
    const seen: string[] = [];
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      const params = request.params as {
        message: string;
        requestedSchema?: { properties: Record<string, unknown> };
      };
      seen.push(params.message);
      const props = Object.keys(params.requestedSchema?.properties ?? {});
      if (props.includes("allow")) {
        // Approve the first marker, refuse the second.
        return { action: "accept", content: { allow: params.message.includes("m2.txt") } };
      }
      return { action: "accept", content: { q1: "Postgres", notes: "prod only" } };
    });
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toContain("ask_user_question");

      const approved = await client.callTool({ name: "touch_marker", arguments: { name: "m2.txt" } });
      expect(approved.structuredContent, JSON.stringify(approved.structuredContent)).toMatchObject({
        kind: "touched",
        path: "m2.txt",
      });
      expect(await fs.readFile(path.join(root, "m2.txt"), "utf8")).toBe("marker\n");

      const refused = await client.callTool({ name: "touch_marker", arguments: { name: "m3.txt" } });
      expect(refused.structuredContent).toMatchObject({ kind: "error", code: "EDENIED" });
      await expect(fs.access(path.join(root, "m3.txt"))).rejects.toThrow();

      const asked = await client.callTool({
        name: "ask_user_question",
        arguments: { questions: [{ question: "Which database?", options: ["SQLite", "Postgres"] }] },
      });
      expect(seen.some((m) => m.includes("Which database?"))).toBe(true);
      expect(asked.isError).toBe(false);
      expect(JSON.stringify(asked.structuredContent)).toContain("Postgres");
      expect(JSON.stringify(asked.structuredContent)).toContain("prod only");
    } finally {
      await client.close();
    }
  });

  it("binds the profile's names with --profile", async () => {
    const plain = await connect(root);
    const mewbo = await connect(root, {
      args: [BIN, "serve", "--mcp", "--trust", "--root", root, "--profile", "mewbo"],
    });
    try {
      const names = (await plain.listTools()).tools.map((t) => t.name);
      const profiled = (await mewbo.listTools()).tools.map((t) => t.name);
      expect(names).toContain("list_dir");
      expect(profiled).toContain("aider_list_dir_tool");
      expect(profiled).not.toContain("list_dir");
      const listed = await mewbo.callTool({ name: "aider_list_dir_tool", arguments: { path: "." } });
      expect(listed.isError).toBe(false);
      expect((listed.content as TextContent)[0]?.text).toContain("a.txt");
    } finally {
      await plain.close();
      await mewbo.close();
    }
  });
});
