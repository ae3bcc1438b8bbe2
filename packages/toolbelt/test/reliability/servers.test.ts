import { existsSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema, LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { readSse } from "@toolbelt/bridge";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, BIN, cli, REPO } from "../cli-harness.js";
import { RawMcp, until } from "../mcp-raw.js";
import { type HttpProcess, startHttp } from "../serve-fixture.js";

// Attacks on the servers (serve --mcp, serve --http) and on the MCP client, each end to end through
// the built CLI with real processes: an MCP client speaking raw JSON-RPC lines, real HTTP requests,
// and real stdio MCP servers (packages/mcp/src/__fixtures__/many-tools.mjs) whose tool lists are hostile.
// MCP servers and plugins come from a --config file outside the project: a user-given config is
// trusted, so these tests hold whether or not the project itself is trusted.

const MANY = path.join(REPO, "packages/mcp/src/__fixtures__/many-tools.mjs");
const dirs: string[] = [];
const tempDir = (prefix: string) => {
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), prefix)));
  dirs.push(dir);
  return dir;
};
beforeAll(() => assertBuilt());
afterAll(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const PLUGIN = (core: string, zod: string) => `
import { definePlugin, defineTool } from ${JSON.stringify(core)};
import { z } from ${JSON.stringify(zod)};
export default definePlugin({
  name: "servers-fixture",
  tools: [
    defineTool({
      name: "touch_marker", family: "fixture", access: "execute", deferrable: false,
      description: "Write a marker file (execute access, so the default policy asks first).",
      input: z.object({ name: z.string() }),
      async execute(input, ctx) {
        const target = ctx.resolve(input.name);
        await ctx.writeFile(target.abs, "marker\\n");
        return { kind: "touched", path: target.rel };
      },
    }),
  ],
});
`;

/** A project root, and outside it a user config (the fixture plugin plus `extra`). */
function project(extra: Record<string, unknown> = {}): { root: string; config: string } {
  const root = tempDir("tb-servers-root-");
  writeFileSync(path.join(root, "a.txt"), "hello\n");
  const outside = tempDir("tb-servers-config-");
  const core = pathToFileURL(path.join(REPO, "packages/core/dist/index.js")).href;
  const zod = pathToFileURL(path.join(REPO, "node_modules/zod/index.js")).href;
  const plugin = path.join(outside, "plugin.mjs");
  writeFileSync(plugin, PLUGIN(core, zod));
  const config = path.join(outside, "config.json");
  writeFileSync(config, JSON.stringify({ plugins: [plugin], ...extra }));
  return { root, config };
}

describe("serve --mcp: hostile JSON-RPC input", () => {
  it("answers a 20 MiB line with an error naming the bound, then answers tools/list, still running", async () => {
    const { root } = project();
    const mcp = new RawMcp(["--root", root]);
    try {
      await mcp.initialize();
      const big = "a".repeat(20 * 1024 * 1024);
      await mcp.write(
        `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"${big}"}}}\n`,
      );
      await mcp.send({ id: 2, method: "tools/list" });
      const refused = await mcp.reply((m) => m.id === 1, "the answer to the oversized line");
      expect(refused.error?.code).toBe(-32600);
      expect(refused.error?.message).toContain("over the 16 MiB limit");
      const listed = await mcp.reply((m) => m.id === 2, "the tools/list answer");
      const tools = (listed.result?.tools ?? []) as Array<{ name: string }>;
      expect(tools.map((t) => t.name)).toContain("read_file");
      expect(mcp.running).toBe(true);
      expect(mcp.stderr).toContain("skipped");
    } finally {
      await mcp.stop();
    }
  }, 60_000);

  it("answers a malformed line with -32700 and id null, a non-JSON-RPC or too-deep one with -32600", async () => {
    const { root } = project();
    const mcp = new RawMcp(["--root", root]);
    try {
      await mcp.initialize();
      await mcp.write('{"jsonrpc":"2.0","id":5,"method":"tools/list"\n');
      const parseError = await mcp.reply((m) => m.error?.code === -32700, "a -32700 reply");
      expect(parseError.id).toBeNull();
      await mcp.write('{"jsonrpc":"2.0","id":6,"method":42}\n');
      const invalid = await mcp.reply((m) => m.error?.code === -32600, "a -32600 reply");
      expect(invalid.id).toBe(6);
      // Deep enough to overflow the stack of schema validation: refused before it is parsed.
      const deep = `${"[".repeat(100_000)}${"]".repeat(100_000)}`;
      await mcp.write(
        `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"read_file","arguments":{"path":${deep}}}}\n`,
      );
      const tooDeep = await mcp.reply((m) => m.id === 8, "the answer to the deep message");
      expect(tooDeep.error).toMatchObject({
        code: -32600,
        message: expect.stringContaining("deeper than 128"),
      });
      await mcp.send({ id: 7, method: "tools/list" });
      expect((await mcp.reply((m) => m.id === 7, "tools/list after the bad lines")).result).toBeDefined();
      expect(mcp.running).toBe(true);
    } finally {
      await mcp.stop();
    }
  }, 60_000);
});

describe("serve --mcp: a cancelled call's approval", () => {
  it("denies the approval at once (cancelling its elicitation) when the client cancels the tools/call", async () => {
    const { root, config } = project();
    const client = new Client(
      { name: "servers-test", version: "1" },
      { capabilities: { elicitation: { form: {} } } },
    );
    let asked = false;
    // A person who never answers: only withdrawing the approval ends the wait.
    client.setRequestHandler(
      ElicitRequestSchema,
      (_request, extra) =>
        new Promise((resolve) => {
          asked = true;
          extra.signal.addEventListener("abort", () => resolve({ action: "cancel" }));
        }),
    );
    const events: Array<{ type?: string; approved?: boolean; by?: string }> = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
      events.push(n.params.data as { type?: string });
    });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [BIN, "serve", "--mcp", "--root", root, "--config", config],
        stderr: "pipe",
      }),
    );
    try {
      await client.setLoggingLevel("debug");
      const caller = new AbortController();
      const call = client
        .callTool({ name: "touch_marker", arguments: { name: "m.txt" } }, undefined, {
          signal: caller.signal,
        })
        .catch((error: unknown) => error);
      await until(() => asked || undefined, "the elicitation");
      caller.abort();
      await call;
      const resolved = await until(
        () => events.find((e) => e.type === "approval_resolved"),
        "approval_resolved",
      );
      expect(resolved.approved).toBe(false);
      expect(resolved.by).toContain("abort");
      expect(existsSync(path.join(root, "m.txt"))).toBe(false);
    } finally {
      await client.close();
    }
  }, 60_000);
});

type Event = {
  type: string;
  seq: number;
  call_id?: string;
  tool?: string;
  request_id?: string;
  approved?: boolean;
  by?: string;
  input?: { name?: string };
  result?: { kind?: string; code?: string };
};

describe("serve --http: malformed input, disconnects and other attachments", () => {
  let server: HttpProcess;
  let sid: string;
  let root: string;
  const streams: AbortController[] = [];
  const api = async (method: string, route: string, body?: unknown, signal?: AbortSignal) => {
    const response = await fetch(`${server.url}${route}`, {
      method,
      headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      ...(signal ? { signal } : {}),
    });
    const text = await response.text();
    return {
      status: response.status,
      body: (text ? JSON.parse(text) : undefined) as Record<string, unknown> & {
        error?: { code: string; message: string };
      },
    };
  };
  const events = (query = ""): Event[] => {
    const controller = new AbortController();
    streams.push(controller);
    const seen: Event[] = [];
    void (async () => {
      const response = await fetch(
        `${server.url}/api/sessions/${sid}/events?token=${server.token}&since=-1${query}`,
        { signal: controller.signal },
      );
      if (!response.body) return;
      for await (const message of readSse(response.body)) seen.push(JSON.parse(message.data) as Event);
    })().catch(() => {});
    return seen;
  };

  beforeAll(async () => {
    const made = project();
    root = made.root;
    server = await startHttp(root, ["--config", made.config]);
    sid = ((await api("GET", "/api/sessions")).body as unknown as Array<{ id: string }>)[0]?.id ?? "";
  }, 60_000);
  afterAll(async () => {
    for (const s of streams) s.abort();
    await server?.stop();
  });

  it("answers a malformed percent-encoding anywhere in the path, and a too-deep body, with 400", async () => {
    for (const [method, route] of [
      ["GET", "/api/sessions/%E0%A4%A/tools"],
      ["DELETE", "/api/sessions/%E0%A4%A"],
      ["POST", `/api/sessions/${sid}/calls/%E0%A4%A/cancel`],
      ["POST", `/api/sessions/${sid}/approvals/%E0%A4%A`],
      ["PUT", `/api/sessions/${sid}/attach/%E0%A4%A`],
    ] as const) {
      const answer = await api(method, route, method === "GET" || method === "DELETE" ? undefined : {});
      expect({ route, status: answer.status, code: answer.body.error?.code }).toEqual({
        route,
        status: 400,
        code: "EINVAL_INPUT",
      });
    }
    // A body nested deep enough to overflow schema validation's stack is refused at the door.
    const deep = `${"[".repeat(100_000)}${"]".repeat(100_000)}`;
    const response = await fetch(`${server.url}/api/sessions/${sid}/calls`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
      body: `{"tool":"read_file","input":{"path":${deep}}}`,
    });
    expect(response.status).toBe(400);
    expect(await response.text()).toContain("deeper than 128 levels");
    // Still serving.
    expect((await api("GET", `/api/sessions/${sid}/tools`)).status).toBe(200);
  });

  it("denies the approval of a caller that hung up, emits the resolution and answers the call EDENIED", async () => {
    const seen = events();
    const caller = new AbortController();
    void api(
      "POST",
      `/api/sessions/${sid}/calls`,
      { tool: "touch_marker", input: { name: "gone.txt" } },
      caller.signal,
    ).catch(() => {});
    const requested = await until(
      () => seen.find((e) => e.type === "approval_requested" && e.tool === "touch_marker"),
      "the approval request",
    );
    caller.abort();
    const resolved = await until(
      () => seen.find((e) => e.type === "approval_resolved" && e.request_id === requested.request_id),
      "the approval to be resolved",
    );
    expect(resolved.approved).toBe(false);
    expect(resolved.by).toContain("disconnected");
    const result = await until(
      () => seen.find((e) => e.type === "tool_result" && e.tool === "touch_marker"),
      "the call's result",
    );
    expect(result.result).toMatchObject({ kind: "error", code: "EDENIED" });
    expect((await api("GET", `/api/sessions/${sid}/pending`)).body.approvals).toEqual([]);
    expect(existsSync(path.join(root, "gone.txt"))).toBe(false);
  }, 60_000);

  it("never takes a granted approval (CallOptions.approval) from an HTTP caller: the call still waits for a person", async () => {
    const seen = events();
    const call = api("POST", `/api/sessions/${sid}/calls`, {
      tool: "touch_marker",
      input: { name: "self-approved.txt" },
      // What a caller might try: the SDK's granted approval, in the body and beside the input.
      approval: { by: "attacker" },
      options: { approval: { by: "attacker" } },
    });
    const requested = await until(
      () => seen.find((e) => e.type === "approval_requested" && e.input?.name === "self-approved.txt"),
      "the approval request",
    );
    expect(existsSync(path.join(root, "self-approved.txt"))).toBe(false);
    // Nobody answered yet: the call is pending, not approved by the body's "attacker".
    expect(seen.some((e) => e.type === "approval_resolved" && e.request_id === requested.request_id)).toBe(
      false,
    );
    const pending = (await api("GET", `/api/sessions/${sid}/pending`)).body.approvals as Array<{
      request_id: string;
    }>;
    expect(pending.map((a) => a.request_id)).toContain(requested.request_id);
    await api("POST", `/api/sessions/${sid}/approvals/${requested.request_id}`, { approved: false });
    const answer = await call;
    expect((answer.body.result as { code?: string }).code).toBe("EDENIED");
    const resolved = await until(
      () => seen.find((e) => e.type === "approval_resolved" && e.request_id === requested.request_id),
      "the approval to be resolved",
    );
    expect(resolved.approved).toBe(false);
    expect(resolved.by).not.toBe("attacker");
    expect(existsSync(path.join(root, "self-approved.txt"))).toBe(false);
  }, 60_000);

  it("takes client-results only from the attachment that was asked", async () => {
    const spec = (name: string) => ({
      name,
      description: `${name}: answered by the client`,
      input_schema: { type: "object", properties: {} },
      deferrable: false,
    });
    const a = await api("POST", `/api/sessions/${sid}/attach`, { client: "a", tools: [spec("ask_a")] });
    const b = await api("POST", `/api/sessions/${sid}/attach`, { client: "b", tools: [spec("ask_b")] });
    const idA = a.body.attachment_id as string;
    const idB = b.body.attachment_id as string;
    const seen = events(`&attachment=${idA}`);
    events(`&attachment=${idB}`);
    await until(async () => {
      const names = (
        (await api("GET", `/api/sessions/${sid}/tools`)).body.tools as Array<{ name: string }>
      ).map((t) => t.name);
      return names.includes("ask_a") && names.includes("ask_b");
    }, "both attachments' tools");
    const call = api("POST", `/api/sessions/${sid}/calls`, { tool: "ask_a", input: {} });
    const asked = await until(
      () => seen.find((e) => e.type === "client_tool_call" && e.tool === "ask_a"),
      "the client tool call",
    );
    const stolen = await api("POST", `/api/sessions/${sid}/client-results`, {
      attachment_id: idB,
      call_id: asked.call_id,
      result: { kind: "forged" },
    });
    expect(stolen.status).toBe(403);
    expect(stolen.body.error?.code).toBe("EDENIED");
    const anonymous = await api("POST", `/api/sessions/${sid}/client-results`, {
      call_id: asked.call_id,
      result: { kind: "forged" },
    });
    expect(anonymous.status).toBe(400);
    const answered = await api("POST", `/api/sessions/${sid}/client-results`, {
      attachment_id: idA,
      call_id: asked.call_id,
      result: { kind: "answer", from: "a" },
    });
    expect(answered.status).toBe(200);
    expect((await call).body.result).toEqual({ kind: "answer", from: "a" });
  }, 60_000);
});

type StatusRow = {
  server: string;
  state: string;
  tools: number;
  listed?: number;
  notes?: string[];
};

/** mcp_status and the bound tool names of a session whose user config names `servers`. */
async function mcpSession(servers: Record<string, { env: Record<string, string> }>) {
  const mcpServers: Record<string, unknown> = {};
  for (const [name, { env }] of Object.entries(servers))
    mcpServers[name] = { command: process.execPath, args: [MANY], env };
  const { root, config } = project({ mcpServers, agent: { tool_search: "off" } });
  const status = await cli(["exec", "--root", root, "--config", config], {
    input: `${JSON.stringify({ id: "s", tool: "mcp_status", input: {} })}\n`,
    timeoutMs: 60_000,
  });
  const line = status.stdout.split("\n").find((l) => l.includes('"mcp_status"'));
  const payload = JSON.parse(line ?? "{}") as {
    result: { servers: StatusRow[]; limits: Record<string, number> };
  };
  const listing = await cli(["tools", "--root", root, "--config", config], { timeoutMs: 60_000 });
  const tools = (JSON.parse(listing.stdout) as { tools: Array<{ name: string; description: string }> }).tools;
  return { root, config, status: payload.result, tools, stderr: status.stderr };
}

describe("the MCP client: hostile server tool lists", () => {
  it("gives colliding names a deterministic, stated disambiguation", async () => {
    const { root, config, status, tools } = await mcpSession({
      a: { env: { MANY_TOOLS_NAMES: JSON.stringify(["b__c"]) } },
      a__b: { env: { MANY_TOOLS_NAMES: JSON.stringify(["c"]) } },
    });
    const names = tools.map((t) => t.name).filter((n) => n.startsWith("mcp__a"));
    expect(names).toHaveLength(2);
    // Server names sort "a" < "a__b": a's tool keeps the plain name, a__b's gets a stable suffix.
    expect(names).toContain("mcp__a__b__c");
    const other = names.find((n) => n !== "mcp__a__b__c") ?? "";
    expect(other).toMatch(/^mcp__a__b__c_[0-9a-f]{8}$/);
    const row = status.servers.find((s) => s.server === "a__b");
    expect(row?.notes?.join("\n")).toContain(`c is bound as ${other}`);
    // Each name calls its own server's tool.
    const calls = await cli(["exec", "--root", root, "--config", config], {
      input: `${[
        { id: "1", tool: "mcp__a__b__c", input: {} },
        { id: "2", tool: other, input: {} },
      ]
        .map((l) => JSON.stringify(l))
        .join("\n")}\n`,
      timeoutMs: 60_000,
    });
    expect(calls.stdout).toContain("called b__c");
    expect(calls.stdout).toContain("called c");
  }, 120_000);

  it("registers at most the stated number of tools per server", async () => {
    const { status, tools } = await mcpSession({ many: { env: { MANY_TOOLS_COUNT: "1000" } } });
    const cap = status.limits.tools_per_server ?? 0;
    expect(cap).toBeGreaterThan(0);
    expect(cap).toBeLessThan(1000);
    const row = status.servers.find((s) => s.server === "many");
    expect(row).toMatchObject({ state: "ready", tools: cap, listed: 1000 });
    expect(row?.notes?.join("\n")).toContain(`only the first ${cap}`);
    expect(tools.filter((t) => t.name.startsWith("mcp__many__"))).toHaveLength(cap);
  }, 120_000);

  it("bounds names, descriptions and schemas, and says what it dropped or cut", async () => {
    const long = "x".repeat(300);
    const { status, tools } = await mcpSession({
      odd: { env: { MANY_TOOLS_NAMES: JSON.stringify(["fine", "has space!", long, ""]) } },
      wordy: { env: { MANY_TOOLS_COUNT: "2", MANY_TOOLS_DESCRIPTION_CHARS: String(1024 * 1024) } },
      wide: { env: { MANY_TOOLS_COUNT: "1", MANY_TOOLS_SCHEMA_KEYS: "20000" } },
    });
    const names = tools.map((t) => t.name);
    expect(names).toContain("mcp__odd__fine");
    expect(names).toContain("mcp__odd__has_space_");
    for (const name of names) expect(name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    const odd = status.servers.find((s) => s.server === "odd");
    expect(odd?.tools).toBe(2);
    expect(odd?.notes?.join("\n")).toMatch(/name .*over 128 characters/);
    expect(odd?.notes?.join("\n")).toContain("empty name");

    const wordy = tools.filter((t) => t.name.startsWith("mcp__wordy__"));
    expect(wordy).toHaveLength(2);
    for (const t of wordy)
      expect(t.description.length).toBeLessThanOrEqual((status.limits.description_chars ?? 0) + 200);
    expect(status.servers.find((s) => s.server === "wordy")?.notes?.join("\n")).toContain("description cut");

    const wide = status.servers.find((s) => s.server === "wide");
    expect(wide?.tools).toBe(0);
    expect(wide?.notes?.join("\n")).toContain("input schema");
  }, 120_000);
});
