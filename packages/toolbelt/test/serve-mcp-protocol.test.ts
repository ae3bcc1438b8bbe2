// The protocol edges of `toolbelt serve --mcp` (issue 35), each driven end to end over stdio against
// the built CLI: with the MCP SDK's Client where it can send the message, with raw JSON-RPC lines
// where it cannot (a handshake sent without waiting, requests before it, malformed params).
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  CallToolResultSchema,
  ElicitRequestSchema,
  type JSONRPCMessage,
  ListRootsRequestSchema,
  type LoggingMessageNotification,
  LoggingMessageNotificationSchema,
  McpError,
  type Progress,
} from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lacks } from "../../../test-support/capability.js";
import { findTypescriptLanguageServer } from "../../lsp/src/servers.js";
import { assertBuilt } from "./cli-harness.js";
import { RawMcp, until } from "./mcp-raw.js";
import { BIN, makeRoot } from "./serve-fixture.js";

beforeAll(assertBuilt);

type TextContent = Array<{ type: string; text?: string }>;
type Log = LoggingMessageNotification["params"];

let root: string;
beforeAll(async () => {
  root = await makeRoot();
});
afterAll(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

async function connect(
  options: {
    /** Another root than the shared one. */
    root?: string;
    args?: string[];
    capabilities?: ConstructorParameters<typeof Client>[1];
    before?: (client: Client) => void;
    /** Sees every message from the server as it arrives, before the client handles it. */
    wire?: (message: JSONRPCMessage) => void;
  } = {},
): Promise<Client> {
  const client = new Client({ name: "protocol-test", version: "1.0.0" }, options.capabilities ?? {});
  options.before?.(client);
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, "serve", "--mcp", "--trust", "--root", options.root ?? root, ...(options.args ?? [])],
    stderr: "pipe",
  });
  await client.connect(transport);
  const { wire } = options;
  const deliver = transport.onmessage;
  if (wire && deliver)
    transport.onmessage = (message) => {
      wire(message);
      deliver(message);
    };
  return client;
}

/**
 * The progress a call was sent, read off the wire: the SDK's Client runs notification handlers a
 * microtask late but a response at once, so progress sent just before a quick answer never reaches
 * `onprogress` (a token is still needed, so the call passes one).
 */
function progressOnWire(messages: JSONRPCMessage[]): Progress[] {
  return messages.flatMap((m) =>
    "method" in m && m.method === "notifications/progress" ? [m.params as unknown as Progress] : [],
  );
}

/** The McpError a call was refused with (the test fails if it resolved). */
async function refusal(promise: Promise<unknown>): Promise<McpError> {
  const outcome = await promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  if (!("error" in outcome))
    throw new Error(`expected a JSON-RPC error, got ${JSON.stringify(outcome.value)}`);
  expect(outcome.error).toBeInstanceOf(McpError);
  return outcome.error as McpError;
}

describe("the handshake", () => {
  it("builds the session from the initialize request's capabilities, with initialized sent at once", async () => {
    const mcp = new RawMcp(["--trust", "--root", root]);
    try {
      // Both lines in one write, without waiting for the initialize answer.
      await mcp.write(
        `${JSON.stringify({
          jsonrpc: "2.0",
          id: 0,
          method: "initialize",
          params: {
            protocolVersion: "2025-06-18",
            capabilities: { elicitation: { form: {} } },
            clientInfo: { name: "hasty", version: "1" },
          },
        })}\n${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`,
      );
      const listed = await mcp.request(1, "tools/list");
      const names = ((listed.result?.tools ?? []) as Array<{ name: string }>).map((t) => t.name);
      // ask_user_question is bound only for a client that declared elicitation.
      expect(names).toContain("ask_user_question");
    } finally {
      await mcp.stop();
    }
  }, 60_000);

  it("refuses requests before initialize with a JSON-RPC error, then serves after it", async () => {
    const mcp = new RawMcp(["--trust", "--root", root]);
    try {
      const early = await mcp.request(1, "tools/list");
      expect(early.result).toBeUndefined();
      expect(early.error?.code).toBe(-32600);
      expect(early.error?.message).toMatch(/initialize/);
      const call = await mcp.request(2, "tools/call", { name: "read_file", arguments: { path: "a.txt" } });
      expect(call.error?.code).toBe(-32600);
      // ping is allowed before the handshake.
      expect((await mcp.request(3, "ping")).result).toEqual({});
      await mcp.initialize();
      const listed = await mcp.request(4, "tools/list");
      expect(listed.error).toBeUndefined();
      expect(((listed.result?.tools ?? []) as unknown[]).length).toBeGreaterThan(0);
    } finally {
      await mcp.stop();
    }
  }, 60_000);
});

describe("error classes", () => {
  it("answers an unknown tool with -32602 naming it, a deferred one saying to call tool_search", async () => {
    const client = await connect();
    try {
      const unknown = await refusal(client.callTool({ name: "no_such_tool", arguments: {} }));
      expect(unknown.code).toBe(-32602);
      expect(unknown.message).toContain("no_such_tool");
      const deferred = await refusal(client.callTool({ name: "echo_deferred", arguments: { text: "x" } }));
      expect(deferred.code).toBe(-32602);
      expect(deferred.message).toContain("echo_deferred");
      expect(deferred.message).toContain('tool_search with "select:echo_deferred"');
      // A tool's own failure stays a result, with its stable code.
      const missing = await client.callTool({ name: "read_file", arguments: { path: "nope.txt" } });
      expect(missing.isError).toBe(true);
      expect(missing.structuredContent).toMatchObject({ kind: "error", code: "ENOENT" });
      const badInput = await client.callTool({ name: "read_file", arguments: { path: 42 } });
      expect(badInput.isError).toBe(true);
      expect(badInput.structuredContent).toMatchObject({ kind: "error", code: "EINVAL_INPUT" });
    } finally {
      await client.close();
    }
  }, 60_000);

  it("answers malformed params with -32602 and one line naming the field", async () => {
    const mcp = new RawMcp(["--trust", "--root", root]);
    try {
      await mcp.initialize();
      // Deliberately malformed: arguments must be an object.
      const call = await mcp.request(1, "tools/call", { name: "read_file", arguments: "README.md" });
      expect(call.error?.code).toBe(-32602);
      expect(call.error?.message).toContain("arguments");
      expect(call.error?.message).not.toContain("\n");
      const nameless = await mcp.request(2, "tools/call", { arguments: {} });
      expect(nameless.error?.code).toBe(-32602);
      expect(nameless.error?.message).toContain("name");
      expect(nameless.error?.message).not.toContain("\n");
      const level = await mcp.request(3, "logging/setLevel", { level: "bogus" });
      expect(level.error?.code).toBe(-32602);
      expect(level.error?.message).toContain("level");
      expect(level.error?.message).toContain("debug");
      expect(level.error?.message).not.toContain("\n");
      expect(mcp.running).toBe(true);
    } finally {
      await mcp.stop();
    }
  }, 60_000);
});

describe("logging", () => {
  it("sends tool calls at info and failures at warning, respecting logging/setLevel; payloads only at debug", async () => {
    const logs: Log[] = [];
    const client = await connect({
      before: (c) =>
        c.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
          logs.push(n.params);
        }),
    });
    const text = (log: Log) => JSON.stringify(log.data);
    try {
      await client.setLoggingLevel("info");
      await client.callTool({ name: "read_file", arguments: { path: "a.txt" } });
      const info = await until(
        () => logs.find((l) => l.level === "info" && text(l).includes("read_file")),
        "an info message about read_file",
      );
      expect(info.logger).toBe("toolbelt");
      // No copy of the result below debug.
      expect(logs.map(text).join("\n")).not.toContain("world");

      await client.callTool({ name: "read_file", arguments: { path: "missing.txt" } });
      const warning = await until(
        () => logs.find((l) => l.level === "warning" && text(l).includes("ENOENT")),
        "a warning about the failed call",
      );
      expect(text(warning)).toContain("read_file");

      await client.setLoggingLevel("error");
      logs.length = 0;
      await client.callTool({ name: "read_file", arguments: { path: "missing.txt" } });
      await client.callTool({ name: "read_file", arguments: { path: "a.txt" } });
      // The answers came after any message the calls sent: nothing below error went out.
      expect(logs).toEqual([]);

      await client.setLoggingLevel("debug");
      await client.callTool({ name: "list_dir", arguments: { path: "." } });
      const full = await until(
        () => logs.find((l) => l.level === "debug" && (l.data as { type?: string }).type === "tool_result"),
        "the tool_result event at debug",
      );
      // The whole result: the listing's entries.
      expect(text(full)).toContain("a.txt");
      expect(text(full)).toContain("plugin.mjs");
    } finally {
      await client.close();
    }
  }, 60_000);

  it("tells of approvals (asked: notice, denied: warning) and of settings an untrusted project lost (warning)", async () => {
    const untrusted = await fs.realpath(
      await fs.mkdtemp(path.join(path.dirname(root), "toolbelt-untrusted-")),
    );
    await fs.mkdir(path.join(untrusted, "configs"));
    await fs.writeFile(
      path.join(untrusted, "configs/app.json"),
      JSON.stringify({ tools: { shell: { mode: "allow" } } }),
    );
    const logs: Log[] = [];
    const client = new Client(
      { name: "protocol-test", version: "1.0.0" },
      { capabilities: { elicitation: { form: {} } } },
    );
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
      logs.push(n.params);
    });
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: "decline" }));
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [BIN, "serve", "--mcp", "--root", untrusted],
        stderr: "pipe",
      }),
    );
    const text = (log: Log) => JSON.stringify(log.data);
    try {
      // Sent while the session starts, at the default level (warning).
      const ignored = await until(
        () => logs.find((l) => l.level === "warning" && text(l).includes("tools.shell.mode")),
        "the config notice",
      );
      expect(text(ignored)).toMatch(/trust/);
      await client.setLoggingLevel("info");
      const denied = await client.callTool({ name: "shell", arguments: { command: "true" } });
      expect(denied.structuredContent).toMatchObject({ code: "EDENIED" });
      expect(logs.some((l) => l.level === "notice" && text(l).includes("approval"))).toBe(true);
      expect(logs.some((l) => l.level === "warning" && text(l).includes("denied"))).toBe(true);
    } finally {
      await client.close();
      await fs.rm(untrusted, { recursive: true, force: true });
    }
  }, 60_000);
});

describe("progress", () => {
  it("sends notifications/progress with a call's shell output while it runs, when the call asks", async () => {
    const client = await connect({ args: ["--allow", "shell"] });
    try {
      const seen: Progress[] = [];
      const result = await client.request(
        {
          method: "tools/call",
          params: {
            name: "shell",
            // The command waits for its own output to be seen as progress before it ends.
            arguments: { command: "echo first-line; sleep 1; echo second-line" },
          },
        },
        CallToolResultSchema,
        { onprogress: (p) => seen.push(p) },
      );
      expect(result.isError).toBe(false);
      expect(seen.length).toBeGreaterThan(0);
      expect(seen.map((p) => p.message).join("\n")).toContain("first-line");
      for (let i = 1; i < seen.length; i++)
        expect((seen[i] as Progress).progress).toBeGreaterThan((seen[i - 1] as Progress).progress);
    } finally {
      await client.close();
    }
  }, 60_000);

  it.each(["ripgrep", "js"])(
    "sends what a search found so far as progress, a line a person can read (%s)",
    async (engine) => {
      const tree = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "toolbelt-progress-")));
      const FILES = 3000;
      try {
        await fs.mkdir(path.join(tree, "configs"));
        await fs.writeFile(
          path.join(tree, "configs/app.json"),
          JSON.stringify({ tools: { search: { engine } } }),
        );
        for (let d = 0; d < 30; d++) {
          await fs.mkdir(path.join(tree, `d${d}`));
          for (let f = 0; f < FILES / 30; f++)
            await fs.writeFile(path.join(tree, `d${d}`, `f${f}.txt`), "needle one\nhay\nneedle two\n");
        }
        const wire: JSONRPCMessage[] = [];
        const client = await connect({ root: tree, wire: (m) => wire.push(m) });
        try {
          const result = await client.request(
            { method: "tools/call", params: { name: "search_files", arguments: { query: "needle" } } },
            CallToolResultSchema,
            { onprogress: () => {} },
          );
          const seen = progressOnWire(wire);
          expect(result.isError, JSON.stringify(result.structuredContent)).toBe(false);
          expect(result.structuredContent).toMatchObject({ kind: "search_results", engine, capped: true });
          expect(seen.length).toBeGreaterThan(0);
          let files = 0;
          for (const [i, p] of seen.entries()) {
            if (i > 0) expect(p.progress).toBeGreaterThan((seen[i - 1] as Progress).progress);
            const said = /^([\d,]+) matching lines? in ([\d,]+) files? so far$/.exec(p.message ?? "");
            expect(said, p.message).not.toBeNull();
            const [lines, inFiles] = [
              Number(said?.[1]?.replaceAll(",", "")),
              Number(said?.[2]?.replaceAll(",", "")),
            ];
            // Every file holds two matching lines; the totals only grow, and never past the tree.
            expect(lines).toBe(2 * inFiles);
            expect(inFiles).toBeGreaterThanOrEqual(files);
            expect(inFiles).toBeLessThanOrEqual(FILES);
            files = inFiles;
          }
        } finally {
          await client.close();
        }
      } finally {
        await fs.rm(tree, { recursive: true, force: true });
      }
    },
    60_000,
  );

  it.skipIf(
    lacks(
      "typescript-language-server",
      !findTypescriptLanguageServer() && "typescript-language-server is not installed",
    ),
  )(
    "tells a call waiting for its language server to start as progress",
    async () => {
      const project = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "toolbelt-lsp-progress-")));
      try {
        await fs.writeFile(
          path.join(project, "tsconfig.json"),
          JSON.stringify({ compilerOptions: { strict: true, noEmit: true, types: [] }, include: ["src"] }),
        );
        await fs.mkdir(path.join(project, "src"));
        await fs.writeFile(path.join(project, "src/main.ts"), "export const n: number = 1;\n");
        const logs: Log[] = [];
        const wire: JSONRPCMessage[] = [];
        const client = await connect({
          root: project,
          before: (c) =>
            c.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
              logs.push(n.params);
            }),
          wire: (m) => wire.push(m),
        });
        try {
          await client.setLoggingLevel("info");
          wire.length = 0;
          const result = await client.request(
            { method: "tools/call", params: { name: "lsp_diagnostics", arguments: { path: "src/main.ts" } } },
            CallToolResultSchema,
            { onprogress: () => {} },
          );
          const seen = progressOnWire(wire);
          expect(result.isError, JSON.stringify(result.structuredContent)).toBe(false);
          expect(seen.map((p) => p.message)).toEqual([
            "starting language server typescript",
            "language server typescript is ready",
          ]);
          // The log says it too, once, at info.
          const started = logs.filter((l) =>
            /language server typescript/.test(String((l.data as { message?: unknown }).message)),
          );
          expect(started.map((l) => [l.level, (l.data as { message: string }).message])).toEqual([
            ["info", "language server typescript is ready"],
          ]);
          // The server is running now: the next call waits for nothing, and says nothing.
          wire.length = 0;
          await client.request(
            { method: "tools/call", params: { name: "lsp_diagnostics", arguments: { path: "src/main.ts" } } },
            CallToolResultSchema,
            { onprogress: () => {} },
          );
          expect(progressOnWire(wire)).toEqual([]);
        } finally {
          await client.close();
        }
      } finally {
        await fs.rm(project, { recursive: true, force: true });
      }
    },
    120_000,
  );

  it("tells a call waiting for approval as progress", async () => {
    const seen: Progress[] = [];
    let progressBeforeAsking = 0;
    const client = await connect({
      capabilities: { capabilities: { elicitation: { form: {} } } },
      before: (c) =>
        c.setRequestHandler(ElicitRequestSchema, async () => {
          progressBeforeAsking = seen.length;
          return { action: "accept", content: { allow: true } };
        }),
    });
    try {
      await client.request(
        { method: "tools/call", params: { name: "touch_marker", arguments: { name: "p1.txt" } } },
        CallToolResultSchema,
        { onprogress: (p) => seen.push(p) },
      );
      expect(progressBeforeAsking).toBeGreaterThan(0);
      expect(seen[0]?.message).toMatch(/approval/);
    } finally {
      await client.close();
    }
  }, 60_000);
});

describe("null for an optional field", () => {
  it("publishes every optional field as nullable and takes null as not given", async () => {
    const client = await connect();
    try {
      const { tools } = await client.listTools();
      const readFile = tools.find((t) => t.name === "read_file");
      const properties = (readFile?.inputSchema.properties ?? {}) as Record<string, unknown>;
      const offset = properties.offset;
      expect(JSON.stringify(offset)).toContain('"null"');
      for (const tool of tools) {
        const schema = tool.inputSchema as { properties?: Record<string, unknown>; required?: string[] };
        for (const [name, property] of Object.entries(schema.properties ?? {})) {
          if (schema.required?.includes(name)) continue;
          expect(JSON.stringify(property), `${tool.name}.${name}`).toContain('"null"');
        }
      }
      const read = await client.callTool({ name: "read_file", arguments: { path: "a.txt", offset: null } });
      expect(read.isError).toBe(false);
      expect(read.structuredContent).toMatchObject({ kind: "file_content" });
      // A required field is not optional: null there is refused.
      const nullPath = await client.callTool({ name: "read_file", arguments: { path: null } });
      expect(nullPath.structuredContent).toMatchObject({ code: "EINVAL_INPUT" });
    } finally {
      await client.close();
    }
  }, 60_000);
});

describe("isError for the shell", () => {
  it("is true for a timeout, a command that could not start and (by default) a non-zero exit", async () => {
    const client = await connect({ args: ["--allow", "shell"] });
    try {
      const ok = await client.callTool({ name: "shell", arguments: { command: "true" } });
      expect(ok.isError).toBe(false);
      const timedOut = await client.callTool({
        name: "shell",
        arguments: { command: "sleep 30", timeout: 0.5 },
      });
      expect(timedOut.structuredContent).toMatchObject({ kind: "shell_result", timed_out: true });
      expect(timedOut.isError).toBe(true);
      const notFound = await client.callTool({
        name: "shell",
        arguments: { command: "no-such-command-toolbelt-test" },
      });
      expect(notFound.structuredContent).toMatchObject({ kind: "shell_result", exit_code: 127 });
      expect(notFound.isError).toBe(true);
      const failed = await client.callTool({ name: "shell", arguments: { command: "exit 3" } });
      expect(failed.structuredContent).toMatchObject({ kind: "shell_result", exit_code: 3 });
      expect(failed.isError).toBe(true);
      expect((failed.content as TextContent)[0]?.text).toContain("3");
    } finally {
      await client.close();
    }
  }, 60_000);

  it("with --no-fail-on-command-error, a non-zero exit is a result, a timeout still an error", async () => {
    const client = await connect({ args: ["--allow", "shell", "--no-fail-on-command-error"] });
    try {
      const failed = await client.callTool({ name: "shell", arguments: { command: "exit 3" } });
      expect(failed.structuredContent).toMatchObject({ kind: "shell_result", exit_code: 3 });
      expect(failed.isError).toBe(false);
      const notFound = await client.callTool({
        name: "shell",
        arguments: { command: "no-such-command-toolbelt-test" },
      });
      expect(notFound.isError).toBe(true);
      const timedOut = await client.callTool({
        name: "shell",
        arguments: { command: "sleep 30", timeout: 0.5 },
      });
      expect(timedOut.isError).toBe(true);
    } finally {
      await client.close();
    }
  }, 60_000);
});

describe("roots", () => {
  const rootsClient = async (roots: () => string[]) =>
    connect({
      capabilities: { capabilities: { roots: { listChanged: true } } },
      before: (c) =>
        c.setRequestHandler(ListRootsRequestSchema, async () => ({
          roots: roots().map((dir) => ({ uri: pathToFileURL(dir).href, name: path.basename(dir) })),
        })),
    });

  it("serves a root inside the client's roots", async () => {
    const client = await rootsClient(() => [path.dirname(root)]);
    try {
      const read = await client.callTool({ name: "read_file", arguments: { path: "a.txt" } });
      expect(read.isError).toBe(false);
    } finally {
      await client.close();
    }
  }, 60_000);

  it("refuses calls while the served root is outside the client's roots, and follows roots/list_changed", async () => {
    let roots = [path.join(root, "sub")];
    const client = await rootsClient(() => roots);
    try {
      const refused = await client.callTool({ name: "read_file", arguments: { path: "a.txt" } });
      expect(refused.isError).toBe(true);
      expect(refused.structuredContent).toMatchObject({ kind: "error", code: "EDENIED" });
      const message = (refused.content as TextContent)[0]?.text ?? "";
      expect(message).toContain(root);
      expect(message).toContain("roots");
      roots = [root];
      // The notification arrives before the next call: the roots are asked again for it.
      await client.sendRootsListChanged();
      const read = await client.callTool({ name: "read_file", arguments: { path: "a.txt" } });
      expect(read.isError).toBe(false);
    } finally {
      await client.close();
    }
  }, 60_000);
});
