// Declared output over MCP: every tool `toolbelt serve --mcp` lists carries an outputSchema made from
// its zod `output` (one object schema, as MCP wants), the schema compiles under ajv in strict mode for
// draft-07 (what the MCP SDK client validates with) and 2020-12 (MCP's default dialect), and the
// structuredContent of real calls, success and error, validates against it: in the SDK client itself
// (callTool refuses a result that does not match), under strict ajv, and against the schema with
// every object closed, so a field a tool sends but does not declare fails here too.
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { createToolbelt } from "@toolbelt/toolbelt";
import { Ajv, type ValidateFunction } from "ajv";
import { Ajv2020 } from "ajv/dist/2020.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, cli } from "./cli-harness.js";
import { BIN, REPO } from "./serve-fixture.js";

beforeAll(assertBuilt);

const TOY = path.join(REPO, "packages/mcp/src/__fixtures__/toy-server.mjs");
const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
  "base64",
);

type Schema = Record<string, unknown>;
type ListedTool = { name: string; inputSchema: Schema; outputSchema?: Schema };
type Result = { isError?: boolean; structuredContent?: Record<string, unknown> };

/** The schema with every object that lists its properties closed (the root, which names only `kind`, stays open). */
function closed(schema: unknown, root = true): unknown {
  if (Array.isArray(schema)) return schema.map((s) => closed(s, false));
  if (typeof schema !== "object" || schema === null) return schema;
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema))
    out[key] = key === "properties" ? mapValues(value as Schema) : closed(value, false);
  if (!root && "properties" in out && !("additionalProperties" in out)) out.additionalProperties = false;
  return out;
}
const mapValues = (props: Schema): Schema =>
  Object.fromEntries(Object.entries(props).map(([k, v]) => [k, closed(v, false)]));

/** Strict validators (draft-07 and 2020-12) of a tool's schema as published and with its objects closed. */
function validators(tool: ListedTool): ValidateFunction[] {
  const schema = tool.outputSchema as Schema;
  return [new Ajv({ strict: true, allErrors: true }), new Ajv2020({ strict: true, allErrors: true })].flatMap(
    (ajv) => [ajv.compile(schema), ajv.compile(closed(schema) as Schema)],
  );
}

async function project(editTool: string): Promise<{ root: string; other: string }> {
  const root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "tb-output-")));
  const other = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "tb-output-other-")));
  await fs.writeFile(path.join(other, "AGENTS.md"), "Be brief.\n");
  await fs.mkdir(path.join(root, "src"));
  await fs.mkdir(path.join(root, "configs"));
  await fs.writeFile(path.join(root, "README.md"), "# demo\nTODO: one\n");
  await fs.writeFile(path.join(root, "tiny.png"), PNG);
  await fs.writeFile(
    path.join(root, "src/a.ts"),
    'export function greet(name: string): string {\n  return "hi " + name;\n}\nexport const x = greet("a");\n',
  );
  await fs.writeFile(path.join(root, "tsconfig.json"), JSON.stringify({ compilerOptions: { strict: true } }));
  await fs.writeFile(
    path.join(root, "configs/app.json"),
    JSON.stringify({
      agent: { tool_search: "on", workspace_mode: "auto", edit_tool: editTool },
      checkpoints: { undoTool: true },
      projects: [{ key: "other", path: other }],
    }),
  );
  await fs.writeFile(
    path.join(root, ".mcp.json"),
    JSON.stringify({ mcpServers: { toy: { command: process.execPath, args: [TOY] } } }),
  );
  return { root, other };
}

/** A client that can be asked (elicitation): it approves every call and answers every question. */
async function connect(root: string, extra: string[] = []): Promise<Client> {
  const client = new Client(
    { name: "output-schema-test", version: "1.0.0" },
    { capabilities: { elicitation: { form: {} } } },
  );
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    const props = Object.keys(
      (request.params as { requestedSchema?: { properties: Schema } }).requestedSchema?.properties ?? {},
    );
    return props.includes("allow")
      ? { action: "accept", content: { allow: true } }
      : { action: "accept", content: { q1: "Postgres" } };
  });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [BIN, "serve", "--mcp", "--trust", "--root", root, ...extra],
      stderr: "pipe",
    }),
  );
  return client;
}

/** Calls tools and checks each result against the listed tool's schema; records what each tool answered. */
class Checker {
  readonly answered = new Map<string, Set<string>>();
  #tools = new Map<string, { tool: ListedTool; checks: ValidateFunction[] }>();

  constructor(readonly client: Client) {}

  async list(): Promise<ListedTool[]> {
    const { tools } = await this.client.listTools();
    for (const tool of tools as ListedTool[]) {
      expect(tool.outputSchema, `${tool.name} declares an outputSchema`).toMatchObject({
        type: "object",
        required: ["kind"],
      });
      if (!this.#tools.has(tool.name)) this.#tools.set(tool.name, { tool, checks: validators(tool) });
    }
    return tools as ListedTool[];
  }

  /**
   * One call; `kind` is what it must answer ("error" for a failure, which must carry isError and a code);
   * `isError` what the result must say (a failed shell command is isError with a shell_result).
   */
  async call(
    name: string,
    args: Schema,
    kind: string,
    isError = kind === "error",
  ): Promise<Record<string, unknown>> {
    const known = this.#tools.get(name);
    expect(known, `${name} is listed`).toBeDefined();
    // The SDK client validates structuredContent against the outputSchema it listed and throws if not.
    const result = (await this.client.callTool({ name, arguments: args })) as Result;
    const payload = result.structuredContent ?? {};
    expect(payload.kind, `${name} ${JSON.stringify(args)}: ${JSON.stringify(payload).slice(0, 400)}`).toBe(
      kind,
    );
    expect(result.isError).toBe(isError);
    if (kind === "error") expect(typeof payload.code).toBe("string");
    for (const check of known?.checks ?? []) {
      const valid = check(payload);
      expect(valid, `${name} → ${kind}: ${JSON.stringify(check.errors)}`).toBe(true);
    }
    // The closed schemas have teeth: a field the tool does not declare is refused (errors carry
    // details of their own, so their branch stays open).
    if (kind !== "error") {
      const [, closedDraft7, , closed2020] = known?.checks ?? [];
      for (const check of [closedDraft7, closed2020])
        expect(check?.({ ...payload, undeclared: 1 })).toBe(false);
    }
    const key = name.startsWith("mcp__") ? "mcp__<server>__<tool>" : name;
    const seen = this.answered.get(key) ?? new Set<string>();
    seen.add(kind === "error" ? "error" : "success");
    this.answered.set(key, seen);
    return payload;
  }
}

describe("serve --mcp: every tool's outputSchema and structuredContent (real SDK client over stdio)", () => {
  const roots: string[] = [];
  afterAll(async () => {
    for (const dir of roots) await fs.rm(dir, { recursive: true, force: true });
  });

  it("declares an outputSchema for every tool and answers calls of every tool, success and error, that validate against it", {
    timeout: 180_000,
  }, async () => {
    const { root, other } = await project("edit_file");
    roots.push(root, other);
    const client = await connect(root);
    const c = new Checker(client);
    try {
      await c.list();
      // Bind the deferred tools (the language-server tools and the MCP server's) through tool_search.
      const deferred = [
        "lsp_definition",
        "lsp_references",
        "lsp_implementation",
        "lsp_hover",
        "lsp_document_symbols",
        "lsp_workspace_symbols",
        "lsp_call_hierarchy",
        "lsp_rename",
        "mcp__toy__echo",
        "mcp__toy__pixel",
        "mcp__toy__weather",
        "mcp__toy__fail",
      ];
      const found = await c.call(
        "tool_search",
        { query: `select:${deferred.join(",")}` },
        "tool_search_results",
      );
      expect(found.not_found).toBeUndefined();
      await c.call("tool_search", { query: "" }, "error");
      const listed = (await c.list()).map((t) => t.name);
      expect(listed).toEqual(expect.arrayContaining(deferred));

      await c.call("read_file", { path: "README.md" }, "file_content");
      await c.call("read_file", { path: "README.md" }, "file_unchanged");
      await c.call("read_file", { path: "tiny.png" }, "image");
      await c.call("read_file", { path: "missing.txt" }, "error");
      await c.call("write_file", { path: "notes/new.txt", content: "one\ntwo\n" }, "file_written");
      await c.call("write_file", { path: "../escape.txt", content: "x" }, "error");
      await c.call("list_files", { pattern: "**/*.md" }, "file_list");
      await c.call("list_files", { path: "missing" }, "error");
      await c.call("list_dir", { path: "src" }, "dir_list");
      await c.call("list_dir", { path: "missing" }, "error");
      await c.call("search_files", { query: "TODO" }, "search_results");
      await c.call("search_files", { query: "" }, "error");
      await c.call(
        "edit_file",
        { path: "README.md", old_text: "TODO: one", new_text: "TODO: two" },
        "edit_result",
      );
      await c.call("edit_file", { path: "README.md", old_text: "not in the file", new_text: "x" }, "error");
      await c.call("undo", {}, "checkpoint_restore");
      await c.call("undo", { checkpoint: "no-such-checkpoint" }, "error");

      await c.call("shell", { command: "echo hello; exit 3" }, "shell_result", true);
      await c.call("shell", { command: "sleep 1", timeout: 0.2 }, "shell_result", true);
      const started = await c.call("shell", { command: "cat", run_in_background: true }, "shell_started");
      const id = String(started.shell_id);
      await c.call("shell", {}, "error");
      await c.call("shell_session", { operation: "write", shell_id: id, input: "ping" }, "shell_session");
      await c.call("shell_session", { operation: "read", shell_id: id }, "shell_session");
      await c.call("shell_session", { operation: "list" }, "shell_sessions");
      await c.call("shell_session", { operation: "kill", shell_id: id }, "shell_session");
      await c.call("shell_session", { operation: "read", shell_id: "sh-none" }, "error");

      await c.call(
        "ask_user_question",
        { questions: [{ question: "Which database?", options: ["SQLite", "Postgres"] }] },
        "question_answers",
      );
      await c.call("ask_user_question", { questions: [] }, "error");
      if (listed.includes("update_todos")) {
        await c.call(
          "update_todos",
          { todos: [{ content: "write the test", status: "in_progress" }] },
          "todos",
        );
        await c.call(
          "update_todos",
          {
            todos: [
              { content: "a", status: "in_progress" },
              { content: "b", status: "in_progress" },
            ],
          },
          "error",
        );
      }

      const target = { path: "src/a.ts", line: 1, column: 17 };
      await c.call("lsp_diagnostics", { path: "src/a.ts" }, "lsp_diagnostics");
      await c.call("lsp_definition", { path: "src/a.ts", line: 4, column: 18 }, "lsp_definition");
      await c.call("lsp_references", target, "lsp_references");
      await c.call("lsp_implementation", target, "lsp_implementation");
      await c.call("lsp_hover", target, "lsp_hover");
      await c.call("lsp_document_symbols", { path: "src/a.ts" }, "lsp_document_symbols");
      await c.call("lsp_workspace_symbols", { query: "greet" }, "lsp_workspace_symbols");
      await c.call("lsp_call_hierarchy", target, "lsp_call_hierarchy");
      await c.call("lsp_rename", { ...target, new_name: "welcome" }, "lsp_rename");
      for (const name of ["lsp_diagnostics", ...deferred.filter((n) => n.startsWith("lsp_"))])
        await c.call(name, { path: "missing.ts", line: 1, column: 1, query: "x", new_name: "y" }, "error");

      await c.call("mcp_status", {}, "mcp_status");
      await c.call("mcp__toy__echo", { message: "hi" }, "mcp_result");
      await c.call("mcp__toy__pixel", {}, "mcp_result");
      await c.call("mcp__toy__weather", { city: "Oslo" }, "mcp_result");
      await c.call("mcp__toy__fail", {}, "error");

      await c.call("list_projects", {}, "project_list");
      await c.call("switch_project", { key: "no-such-project" }, "error");
      const tools = await c.list();
      console.log(`checked ${tools.length} tools: ${tools.map((t) => t.name).join(", ")}`);
      // Last: it moves the session into the other project.
      await c.call("switch_project", { key: "other" }, "project_switched");

      // Every tool listed answered a success, and an error unless no input can make it fail (an
      // empty input schema).
      for (const tool of tools) {
        const key = tool.name.startsWith("mcp__") ? "mcp__<server>__<tool>" : tool.name;
        const canFail = Object.keys((tool.inputSchema.properties ?? {}) as Schema).length > 0;
        const want = canFail ? ["error", "success"] : ["success"];
        expect([...(c.answered.get(key) ?? [])], tool.name).toEqual(expect.arrayContaining(want));
      }
    } finally {
      await client.close();
    }
  });

  // One edit tool is bound per session: the other two backends, each in a server of its own.
  for (const [editTool, success, failure] of [
    [
      "structured_patch",
      { path: "README.md", old_string: "TODO: one", new_string: "TODO: two" },
      { path: "README.md", old_string: "not in the file", new_string: "x" },
    ],
    [
      "search_replace_block",
      { content: "README.md\n```\n<<<<<<< SEARCH\nTODO: one\n=======\nTODO: two\n>>>>>>> REPLACE\n```\n" },
      { content: "README.md\n```\n<<<<<<< SEARCH\nabsent\n=======\nx\n>>>>>>> REPLACE\n```\n" },
    ],
  ] as const) {
    it(`answers ${editTool} calls that validate against its outputSchema`, { timeout: 60_000 }, async () => {
      const { root, other } = await project(editTool);
      roots.push(root, other);
      const client = await connect(root);
      const c = new Checker(client);
      try {
        await c.list();
        await c.call(editTool, success, "edit_result");
        await c.call(editTool, failure, "error");
      } finally {
        await client.close();
      }
    });
  }

  it("gives a profile's names the outputSchema of the tool behind them", { timeout: 60_000 }, async () => {
    const { root, other } = await project("search_replace_block");
    roots.push(root, other);
    const plain = new Checker(await connect(root));
    const mewbo = new Checker(await connect(root, ["--profile", "mewbo"]));
    try {
      const byName = new Map((await plain.list()).map((t) => [t.name, t.outputSchema]));
      const renamed = new Map((await mewbo.list()).map((t) => [t.name, t.outputSchema]));
      for (const [profileName, toolName] of [
        ["aider_shell_tool", "shell"],
        ["shell_session_tool", "shell_session"],
        ["aider_list_dir_tool", "list_dir"],
        ["aider_edit_block_tool", "search_replace_block"],
        ["read_file", "read_file"],
      ] as const) {
        expect(renamed.get(profileName), profileName).toBeDefined();
        expect(renamed.get(profileName), profileName).toEqual(byName.get(toolName));
      }
      await mewbo.call("aider_list_dir_tool", { path: "src" }, "dir_list");
      await mewbo.call("aider_list_dir_tool", { path: "missing" }, "error");
    } finally {
      await plain.client.close();
      await mewbo.client.close();
    }
  });

  it("prints the same outputSchemas from `toolbelt tools --format mcp`", { timeout: 60_000 }, async () => {
    const { root, other } = await project("edit_file");
    roots.push(root, other);
    const printed = await cli(["tools", "--format", "mcp", "--trust", "--root", root]);
    expect(printed.code, printed.stderr).toBe(0);
    const { tools } = JSON.parse(printed.stdout) as { tools: ListedTool[] };
    const client = await connect(root);
    try {
      const served = new Map((await new Checker(client).list()).map((t) => [t.name, t.outputSchema]));
      expect(tools.length).toBeGreaterThan(10);
      for (const tool of tools) {
        expect(tool.outputSchema, tool.name).toEqual(served.get(tool.name));
        validators(tool);
      }
    } finally {
      await client.close();
    }
  });

  // present_ui is bound only for a client that draws panels (generative_ui), which an MCP client is
  // not: its result is checked against the schema its session binds.
  it("answers present_ui with results that validate against its outputSchema", async () => {
    const { root, other } = await project("edit_file");
    roots.push(root, other);
    const session = await createToolbelt({
      root,
      trustProject: false,
      userConfig: false,
      client: { name: "panels", capabilities: ["generative_ui"] },
    });
    try {
      const tool = session.bind().tools.find((t) => t.name === "present_ui") as ListedTool | undefined;
      expect(tool).toBeDefined();
      const checks = validators(tool as ListedTool);
      const shown = await session.call("present_ui", {
        tree: {
          component: "Card",
          id: "c1",
          title: "Build",
          children: [{ component: "Paragraph", text: "ok" }],
        },
      });
      const refused = await session.call("present_ui", {});
      expect(shown.kind).toBe("ui_presented");
      expect(refused.kind).toBe("error");
      for (const payload of [shown, refused])
        for (const check of checks) expect(check(payload), JSON.stringify(check.errors)).toBe(true);
    } finally {
      await session.close();
    }
  });
});
