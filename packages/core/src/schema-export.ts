import { z } from "zod";
import { errorPayloadSchema, payloadSchema } from "./results.js";

export type JsonSchema = Record<string, unknown>;

/**
 * JSON Schema (draft 2020-12) of a zod input schema, as sent to models. Every optional field is
 * published as nullable, because the session takes null there as "not given" (see validate-input.ts):
 * one rule for every tool and every surface, and the one OpenAI's strict mode needs anyway.
 */
export function inputJsonSchema(schema: z.ZodType): JsonSchema {
  const json = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as JsonSchema;
  delete json.$schema;
  return nullableOptionals(objectRoot(json));
}

/** Whether a schema already takes null: untyped (anything), or null among its types or branches. */
function takesNull(schema: JsonSchema): boolean {
  if (!["type", "anyOf", "oneOf", "enum", "const", "$ref", "not", "allOf"].some((k) => k in schema))
    return true;
  if (schema.type === "null" || (Array.isArray(schema.type) && schema.type.includes("null"))) return true;
  const branches = (schema.anyOf ?? schema.oneOf) as JsonSchema[] | undefined;
  return Array.isArray(branches) && branches.some(takesNull);
}

/** Optional object properties made nullable, at every depth (objects in arrays, unions, maps). */
function nullableOptionals(schema: JsonSchema): JsonSchema {
  const out: JsonSchema = { ...schema };
  if (schema.properties && typeof schema.properties === "object") {
    const required = new Set((schema.required ?? []) as string[]);
    const properties: Record<string, JsonSchema> = {};
    for (const [name, value] of Object.entries(schema.properties as Record<string, JsonSchema>)) {
      const inner = nullableOptionals(value);
      properties[name] = required.has(name) || takesNull(inner) ? inner : withNull(inner);
    }
    out.properties = properties;
  }
  for (const key of ["items", "additionalProperties"] as const) {
    const value = schema[key];
    if (typeof value === "object" && value !== null && !Array.isArray(value))
      out[key] = nullableOptionals(value as JsonSchema);
  }
  for (const key of ["anyOf", "oneOf", "allOf", "prefixItems"] as const) {
    if (Array.isArray(schema[key])) out[key] = (schema[key] as JsonSchema[]).map(nullableOptionals);
  }
  if (schema.$defs && typeof schema.$defs === "object") {
    out.$defs = Object.fromEntries(
      Object.entries(schema.$defs as Record<string, JsonSchema>).map(([k, v]) => [k, nullableOptionals(v)]),
    );
  }
  return out;
}

/** Providers want an object schema at the root, without a top-level anyOf/oneOf. */
function objectRoot(json: JsonSchema): JsonSchema {
  if (json.type === "object" && !json.anyOf && !json.oneOf) return json;
  const branches = (json.anyOf ?? json.oneOf) as JsonSchema[] | undefined;
  if (branches?.length && branches.every((b) => b.type === "object"))
    return mergeObjectBranches(json, branches);
  return { type: "object", properties: {}, ...json };
}

/**
 * A union of objects at the root (`path` or `file`) as one object: every branch's properties, the
 * fields all branches require, and the alternatives stated in the description. Providers refuse
 * anyOf at the top level; the session still validates calls against the exact union.
 */
function mergeObjectBranches(json: JsonSchema, branches: JsonSchema[]): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  let required: string[] | undefined;
  for (const branch of branches) {
    for (const [key, value] of Object.entries((branch.properties ?? {}) as Record<string, JsonSchema>))
      properties[key] ??= value;
    const own = (branch.required ?? []) as string[];
    required = required ? required.filter((k) => own.includes(k)) : own;
  }
  const { anyOf: _a, oneOf: _o, properties: _p, required: _r, ...rest } = json;
  const alternatives = branches
    .map((b) => ((b.required ?? []) as string[]).join(" + ") || "(nothing required)")
    .join(" | ");
  const note = `(give one of: ${alternatives})`;
  return {
    ...rest,
    type: "object",
    properties,
    ...(required?.length ? { required } : {}),
    description: typeof rest.description === "string" ? `${rest.description} ${note}` : note,
  };
}

/**
 * The JSON Schema a tool is bound with: a profile variant's own input, else the tool's verbatim
 * `jsonSchema` (an MCP server's), else derived from its zod input.
 */
export function toolJsonSchema(
  tool: { input: z.ZodType; jsonSchema?: JsonSchema },
  variantInput?: z.ZodType,
): JsonSchema {
  if (variantInput) return inputJsonSchema(variantInput);
  return tool.jsonSchema ? objectRoot(tool.jsonSchema) : inputJsonSchema(tool.input);
}

export interface BoundToolSchema {
  name: string;
  description: string;
  inputSchema: JsonSchema;
  /** What the tool returns, success or error (see {@link outputJsonSchema}). */
  outputSchema?: JsonSchema;
  annotations?: ToolAnnotations;
}

const outputSchemas = new WeakMap<object, JsonSchema>();

/**
 * JSON Schema of everything a tool returns: its declared `output` (the generic payload when it has
 * none) or the error payload. One object schema, as MCP wants an `outputSchema`: `kind` at the root,
 * the alternatives under `anyOf`, no `$schema` (JSON Schema 2020-12 is MCP's default dialect, and the
 * keywords used read the same in draft-07, which the MCP SDK client validates with). Objects stay open
 * (no `additionalProperties: false`): an after hook may add `hook_notes` to any result, and a client
 * must not refuse a result for a field a later version adds.
 */
export function outputJsonSchema(tool: { output?: z.ZodType }): JsonSchema {
  const cached = outputSchemas.get(tool);
  if (cached) return cached;
  const declared = tool.output ?? payloadSchema;
  const def = declared._zod.def as { type: string; options?: z.ZodType[] };
  const options = def.type === "union" && def.options ? def.options : [declared];
  const json = openSchema(
    z.toJSONSchema(z.union([...options, errorPayloadSchema]), { io: "output", unrepresentable: "any" }),
  );
  const { $schema: _dialect, anyOf, ...rest } = json;
  const branches = anyOf as JsonSchema[];
  const kinds = branches.map((b) => (b.properties as Record<string, JsonSchema> | undefined)?.kind?.const);
  const kind = kinds.every((k) => typeof k === "string")
    ? { type: "string", enum: [...new Set(kinds)] }
    : { type: "string" };
  const schema = { type: "object", properties: { kind }, required: ["kind"], anyOf: branches, ...rest };
  outputSchemas.set(tool, schema);
  return schema;
}

/** MCP-style hints about a tool, as bound. */
export interface ToolAnnotations {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
  title?: string;
}

export interface OpenAIFunctionTool {
  type: "function";
  name: string;
  description: string;
  parameters: JsonSchema;
  /** False when strict mode cannot express the schema (a free-form map, an untyped value, a tuple). */
  strict: boolean;
}

// Keywords OpenAI's strict mode rejects; their meaning moves into the description instead.
const OPENAI_UNSUPPORTED = [
  "default",
  "format",
  "pattern",
  "minLength",
  "maxLength",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "multipleOf",
  "minItems",
  "maxItems",
  "uniqueItems",
  "minProperties",
  "maxProperties",
  "propertyNames",
  "patternProperties",
  "examples",
  "$schema",
  "const",
] as const;

function withNull(schema: JsonSchema): JsonSchema {
  if (Array.isArray(schema.anyOf)) {
    const hasNull = (schema.anyOf as JsonSchema[]).some((s) => s.type === "null");
    return hasNull ? schema : { ...schema, anyOf: [...(schema.anyOf as JsonSchema[]), { type: "null" }] };
  }
  if (typeof schema.type === "string") {
    const out: JsonSchema = { ...schema, type: [schema.type, "null"] };
    if (Array.isArray(schema.enum)) out.enum = [...(schema.enum as unknown[]), null];
    return out;
  }
  if (Array.isArray(schema.type)) {
    return (schema.type as string[]).includes("null")
      ? schema
      : { ...schema, type: [...schema.type, "null"] };
  }
  return { anyOf: [schema, { type: "null" }] };
}

/**
 * Rewrites a JSON Schema into OpenAI strict form: every object closed (`additionalProperties: false`)
 * with every property required, optional ones made nullable; unsupported keywords are dropped and
 * stated in the description so the model still sees the constraint.
 */
export function toOpenAIStrictSchema(schema: JsonSchema): JsonSchema {
  const out: JsonSchema = {};
  const notes: string[] = [];
  for (const [key, value] of Object.entries(schema)) {
    if ((OPENAI_UNSUPPORTED as readonly string[]).includes(key)) {
      if (key === "const") {
        out.enum = [value];
      } else if (
        key !== "$schema" &&
        key !== "examples" &&
        key !== "propertyNames" &&
        // zod's integer bounds are the safe-integer range: no news for the model.
        !(typeof value === "number" && Math.abs(value) >= Number.MAX_SAFE_INTEGER)
      ) {
        notes.push(`${key}: ${JSON.stringify(value)}`);
      }
      continue;
    }
    out[key] = value;
  }
  if (schema.type === "object" || schema.properties) {
    const props = (schema.properties ?? {}) as Record<string, JsonSchema>;
    const required = new Set((schema.required ?? []) as string[]);
    const nextProps: Record<string, JsonSchema> = {};
    for (const [name, prop] of Object.entries(props)) {
      const strict = toOpenAIStrictSchema(prop);
      nextProps[name] = required.has(name) ? strict : withNull(strict);
    }
    out.type = "object";
    out.properties = nextProps;
    out.required = Object.keys(nextProps);
    out.additionalProperties = false;
  }
  if (out.items && typeof out.items === "object") out.items = toOpenAIStrictSchema(out.items as JsonSchema);
  for (const key of ["anyOf", "oneOf", "allOf"] as const) {
    if (Array.isArray(out[key])) out[key] = (out[key] as JsonSchema[]).map(toOpenAIStrictSchema);
  }
  if (Array.isArray(out.oneOf)) {
    out.anyOf = out.oneOf;
    delete out.oneOf;
  }
  if (notes.length) {
    const description = typeof out.description === "string" ? `${out.description} ` : "";
    out.description = `${description}(${notes.join(", ")})`;
  }
  return out;
}

const STRICT_UNSUPPORTED = [
  "allOf",
  "not",
  "if",
  "then",
  "else",
  "prefixItems",
  "patternProperties",
  "dependentSchemas",
];

/**
 * Whether OpenAI strict mode can express a schema without changing what it accepts: every value
 * typed, no free-form maps (records), no tuples or schema combinators beyond anyOf/oneOf.
 */
export function strictExpressible(schema: unknown): boolean {
  if (typeof schema === "boolean") return false;
  if (typeof schema !== "object" || schema === null) return false;
  const s = schema as JsonSchema;
  if (STRICT_UNSUPPORTED.some((k) => k in s)) return false;
  const typed = ["type", "anyOf", "oneOf", "enum", "const", "$ref"].some((k) => k in s);
  if (!typed) return false;
  const props = (s.properties ?? {}) as Record<string, unknown>;
  const extra = s.additionalProperties;
  const openMap =
    extra === true || (typeof extra === "object" && extra !== null && Object.keys(extra).length > 0);
  if (("propertyNames" in s || openMap) && Object.keys(props).length === 0) return false;
  if (!Object.values(props).every(strictExpressible)) return false;
  if ("items" in s && s.items !== undefined && !strictExpressible(s.items)) return false;
  for (const key of ["anyOf", "oneOf"]) {
    const list = s[key];
    if (Array.isArray(list) && !list.every(strictExpressible)) return false;
  }
  return true;
}

/**
 * An OpenAI function tool: strict when strict mode can express the schema; otherwise the schema as
 * it is with `strict: false`, because closing a map or typing an `unknown` would refuse valid input.
 */
export function toOpenAITool(tool: BoundToolSchema): OpenAIFunctionTool {
  const strict = strictExpressible(tool.inputSchema);
  const { $schema: _s, ...loose } = tool.inputSchema;
  return {
    type: "function",
    name: tool.name,
    description: tool.description,
    parameters: strict ? toOpenAIStrictSchema(tool.inputSchema) : loose,
    strict,
  };
}

export function toAnthropicTool(tool: BoundToolSchema): {
  name: string;
  description: string;
  input_schema: JsonSchema;
} {
  return { name: tool.name, description: tool.description, input_schema: tool.inputSchema };
}

/**
 * An output schema as clients should read it: objects open (zod closes them), and a list of types
 * (zod's form of `string | number`) as `anyOf`, which strict validators (ajv's strictTypes) accept.
 */
function openSchema(node: unknown): JsonSchema {
  if (Array.isArray(node)) return node.map(openSchema) as unknown as JsonSchema;
  if (typeof node !== "object" || node === null) return node as JsonSchema;
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === "additionalProperties" && value === false) continue;
    if (key === "type" && Array.isArray(value)) out.anyOf = value.map((type) => ({ type }));
    else out[key] = openSchema(value);
  }
  return out;
}

export function toMcpTool(tool: BoundToolSchema): {
  name: string;
  description: string;
  inputSchema: JsonSchema;
  outputSchema?: JsonSchema;
  annotations?: BoundToolSchema["annotations"];
} {
  return {
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema,
    ...(tool.outputSchema ? { outputSchema: tool.outputSchema } : {}),
    ...(tool.annotations ? { annotations: tool.annotations } : {}),
  };
}
