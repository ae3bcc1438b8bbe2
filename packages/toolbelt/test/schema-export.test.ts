import { execFile } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { ListToolsResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { toAnthropicTool, toMcpTool, toOpenAITool } from "@toolbelt/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createToolbelt } from "../src/create.js";
import { assertBuilt } from "./cli-harness.js";
import { BIN, REPO } from "./serve-fixture.js";

const run = promisify(execFile);
// A missing or stale build fails these tests (see assertBuilt), it does not skip them.
beforeAll(assertBuilt);

type Schema = Record<string, unknown>;

// Keywords OpenAI strict mode accepts; anything else is refused when the tool is sent.
const OPENAI_STRICT_KEYWORDS = new Set([
  "type",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "enum",
  "anyOf",
  "description",
  "title",
  "$ref",
  "$defs",
]);
const NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** Every rule of OpenAI's strict function schemas that a schema breaks, with where. */
function strictProblems(schema: Schema, where: string, depth = 0): string[] {
  const problems: string[] = [];
  if (depth > 10) problems.push(`${where}: nested deeper than 10 levels`);
  for (const key of Object.keys(schema))
    if (!OPENAI_STRICT_KEYWORDS.has(key)) problems.push(`${where}: unsupported keyword ${key}`);
  if (!["type", "anyOf", "enum", "$ref"].some((k) => k in schema)) problems.push(`${where}: no type`);
  const types = ([] as unknown[]).concat(schema.type ?? []);
  if (types.includes("object") || "properties" in schema) {
    const props = (schema.properties ?? {}) as Record<string, Schema>;
    if (schema.additionalProperties !== false) problems.push(`${where}: additionalProperties is not false`);
    const required = (schema.required ?? []) as string[];
    for (const key of Object.keys(props))
      if (!required.includes(key)) problems.push(`${where}.${key}: not in required`);
    for (const [key, value] of Object.entries(props))
      problems.push(...strictProblems(value, `${where}.${key}`, depth + 1));
  }
  if ("items" in schema) {
    if (typeof schema.items !== "object" || Array.isArray(schema.items))
      problems.push(`${where}: items is not a schema`);
    else problems.push(...strictProblems(schema.items as Schema, `${where}[]`, depth + 1));
  }
  for (const [i, branch] of ((schema.anyOf ?? []) as Schema[]).entries())
    problems.push(...strictProblems(branch, `${where}|${i}`, depth + 1));
  return problems;
}

// A plugin whose schemas hold what providers find hard: a record, an untyped value, a tuple, a
// union at the root, defaults and bounds.
const HARD_PLUGIN = (core: string, zod: string) => `
import { definePlugin, defineTool } from ${JSON.stringify(core)};
import { z } from ${JSON.stringify(zod)};
const tool = (name, input) => defineTool({ name, family: "hard", access: "read", description: name + " fixture", input, execute: () => ({ kind: "ok" }) });
export default definePlugin({ name: "hard", tools: [
  tool("hard_record", z.object({ env: z.record(z.string(), z.string()).optional() })),
  tool("hard_unknown", z.object({ tree: z.unknown() })),
  tool("hard_tuple", z.object({ range: z.tuple([z.number(), z.number()]) })),
  tool("hard_root_union", z.union([z.object({ path: z.string() }), z.object({ file: z.string(), line: z.number().optional() })])),
  tool("hard_nested", z.object({
    edits: z.array(z.object({ op: z.enum(["add", "remove"]), at: z.number().int().min(0).default(0), note: z.string().regex(/x/).optional() })).min(1),
    mode: z.discriminatedUnion("kind", [z.object({ kind: z.literal("a"), a: z.string() }), z.object({ kind: z.literal("b") })]).optional(),
  })),
]});
`;

describe("toolbelt tools --format openai|anthropic|mcp on the real bound tools", () => {
  let plain: string;
  let hard: string;
  beforeAll(async () => {
    plain = await fs.mkdtemp(path.join(os.tmpdir(), "toolbelt-schema-"));
    await fs.mkdir(path.join(plain, "configs"));
    await fs.writeFile(
      path.join(plain, "configs/app.json"),
      JSON.stringify({ agent: { tool_search: "off" } }),
    );
    hard = await fs.mkdtemp(path.join(os.tmpdir(), "toolbelt-schema-hard-"));
    await fs.mkdir(path.join(hard, "configs"));
    await fs.writeFile(
      path.join(hard, "configs/app.json"),
      JSON.stringify({ agent: { tool_search: "off" }, plugins: ["./hard.mjs"] }),
    );
    const core = pathToFileURL(path.join(REPO, "packages/core/dist/index.js")).href;
    const zod = pathToFileURL(path.join(REPO, "node_modules/zod/index.js")).href;
    await fs.writeFile(path.join(hard, "hard.mjs"), HARD_PLUGIN(core, zod));
  });
  afterAll(async () => {
    await fs.rm(plain, { recursive: true, force: true });
    await fs.rm(hard, { recursive: true, force: true });
  });

  // The CLI for the default session; the profile and model variants through the same exporters in
  // process (a CLI spawn per variant and format costs seconds on a busy machine).
  const tools = async (root: string, format: string, extra: string[] = []): Promise<unknown> => {
    if (extra.length === 0)
      return JSON.parse(
        (await run(process.execPath, [BIN, "tools", "--trust", "--root", root, "--format", format])).stdout,
      ) as unknown;
    const session = await createToolbelt({
      root,
      trustProject: true,
      ...(extra[0] === "--profile" ? { profile: extra[1] } : { model: extra[1] }),
    });
    try {
      const bound = session.bind().tools;
      if (format === "openai") return bound.map(toOpenAITool);
      if (format === "anthropic") return bound.map(toAnthropicTool);
      return { tools: bound.map(toMcpTool) };
    } finally {
      await session.close();
    }
  };
  // Each profile and each model family binds other names, schemas and edit backends.
  const VARIANTS: Array<[string, string[]]> = [
    ["default", []],
    ["mewbo", ["--profile", "mewbo"]],
    ["mouaif", ["--profile", "mouaif"]],
    ["claude", ["--model", "claude-sonnet-4-5"]],
    ["gpt-5", ["--model", "gpt-5"]],
  ];

  it("openai: strict function schemas that follow every strict-mode rule", async () => {
    const outputs = await Promise.all(VARIANTS.map(([, extra]) => tools(plain, "openai", extra)));
    for (const [i, [label]] of VARIANTS.entries()) {
      const list = outputs[i] as Array<Schema & { parameters: Schema }>;
      expect(list.length, label).toBeGreaterThan(0);
      for (const tool of list) {
        expect(Object.keys(tool).sort()).toEqual(["description", "name", "parameters", "strict", "type"]);
        expect(tool.type).toBe("function");
        expect(tool.name).toMatch(NAME);
        expect(tool.strict, `${label} ${tool.name}`).toBe(true);
        expect(tool.parameters.type).toBe("object");
        expect(tool.parameters.anyOf).toBeUndefined();
        expect(strictProblems(tool.parameters, `${label}:${tool.name}`)).toEqual([]);
      }
    }
  });

  it("openai: hard schemas are strict when strict mode can say them, and sent non-strict as they are otherwise", async () => {
    const list = (await tools(hard, "openai")) as Array<{
      name: string;
      strict: boolean;
      parameters: Schema;
    }>;
    const byName = new Map(list.map((t) => [t.name, t]));
    // A record closed to no properties, or an untyped value given a type, would refuse valid input.
    for (const name of ["hard_record", "hard_unknown", "hard_tuple"]) {
      const tool = byName.get(name);
      expect(tool?.strict, name).toBe(false);
      expect(tool?.parameters.type).toBe("object");
      expect(tool?.parameters.$schema).toBeUndefined();
    }
    expect((byName.get("hard_record")?.parameters.properties as Schema | undefined)?.env).toMatchObject({
      additionalProperties: { type: "string" },
    });
    for (const name of ["hard_root_union", "hard_nested"]) {
      const tool = byName.get(name);
      expect(tool?.strict, name).toBe(true);
      expect(strictProblems(tool?.parameters ?? {}, name)).toEqual([]);
    }
    // The root union became one object offering both alternatives, and says so.
    const union = byName.get("hard_root_union")?.parameters ?? {};
    expect(Object.keys(union.properties as Schema).sort()).toEqual(["file", "line", "path"]);
    expect(String(union.description)).toContain("path | file");
    // Dropped keywords survive as words in the description.
    const at = (
      (byName.get("hard_nested")?.parameters.properties as Schema | undefined)?.edits as Schema | undefined
    )?.items as Schema;
    expect(String((at.properties as Record<string, Schema>).at?.description)).toContain("default: 0");
  });

  it("anthropic: {name, description, input_schema} with an object schema and no top-level union", async () => {
    const all = [...VARIANTS, ["hard", []] as [string, string[]]];
    const outputs = await Promise.all(
      all.map(([label, extra]) => tools(label === "hard" ? hard : plain, "anthropic", extra)),
    );
    for (const [i, [label]] of all.entries()) {
      const list = outputs[i] as Array<Schema & { input_schema: Schema }>;
      expect(list.length).toBeGreaterThan(0);
      for (const tool of list) {
        expect(Object.keys(tool).sort(), `${label} ${String(tool.name)}`).toEqual([
          "description",
          "input_schema",
          "name",
        ]);
        expect(tool.name).toMatch(NAME);
        expect(typeof tool.description === "string" && tool.description.length > 0).toBe(true);
        expect(tool.input_schema.type).toBe("object");
        for (const key of ["anyOf", "oneOf", "allOf", "$schema"])
          expect(tool.input_schema[key], `${tool.name} ${key}`).toBeUndefined();
      }
    }
  });

  it("mcp: a tools/list result the MCP SDK accepts, {name, description, inputSchema, outputSchema}", async () => {
    const all = [...VARIANTS, ["hard", []] as [string, string[]]];
    const outputs = await Promise.all(
      all.map(([label, extra]) => tools(label === "hard" ? hard : plain, "mcp", extra)),
    );
    for (const [i, [label]] of all.entries()) {
      const result = outputs[i] as { tools: Array<Schema & { inputSchema: Schema }> };
      expect(ListToolsResultSchema.safeParse(result).success, label).toBe(true);
      for (const tool of result.tools) {
        expect(["annotations", "description", "inputSchema", "name", "outputSchema"]).toEqual(
          expect.arrayContaining(Object.keys(tool)),
        );
        expect(tool.name).toMatch(/^[A-Za-z0-9_.-]{1,128}$/);
        expect(tool.inputSchema.type).toBe("object");
        // What the tool returns, success or error (mcp-output-schema.test.ts checks results against it).
        expect(tool.outputSchema, String(tool.name)).toMatchObject({ type: "object", required: ["kind"] });
        expect(tool.inputSchema.anyOf).toBeUndefined();
      }
    }
  });

  it("openai: a call shaped by the strict schema (null for each left-out optional) is accepted by the tool", async () => {
    await fs.writeFile(path.join(hard, "a.txt"), "one\ntwo\n");
    const session = await createToolbelt({ root: hard, trustProject: true });
    try {
      const strict = new Map(session.bind().tools.map((t) => [t.name, toOpenAITool(t).parameters]));
      // Strict mode makes the model send every property; left-out optionals arrive as null.
      const nested = { edits: [{ op: "add", at: null, note: null }], mode: null };
      expect(strictProblems(strict.get("hard_nested") ?? {}, "hard_nested")).toEqual([]);
      expect(await session.call("hard_nested", nested)).toEqual({ kind: "ok" });
      const payload = await session.call("read_file", { path: "a.txt", offset: null, limit: null });
      expect(payload.kind).toBe("file_content");
    } finally {
      await session.close();
    }
  });
});
