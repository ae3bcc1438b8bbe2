import { z } from "zod";

export type JsonSchema = Record<string, unknown>;

/** JSON Schema (draft 2020-12) of a zod input schema, as sent to models. */
export function inputJsonSchema(schema: z.ZodType): JsonSchema {
  const json = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as JsonSchema;
  delete json.$schema;
  if (json.type !== "object") return { type: "object", properties: {}, ...json };
  return json;
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
  return tool.jsonSchema ?? inputJsonSchema(tool.input);
}

export interface BoundToolSchema {
  name: string;
  description: string;
  inputSchema: JsonSchema;
  annotations?: {
    readOnlyHint?: boolean;
    destructiveHint?: boolean;
    openWorldHint?: boolean;
    title?: string;
  };
}

export interface OpenAIFunctionTool {
  type: "function";
  name: string;
  description: string;
  parameters: JsonSchema;
  strict: true;
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
      } else if (key !== "$schema" && key !== "examples" && key !== "propertyNames") {
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

export function toOpenAITool(tool: BoundToolSchema): OpenAIFunctionTool {
  return {
    type: "function",
    name: tool.name,
    description: tool.description,
    parameters: toOpenAIStrictSchema(tool.inputSchema),
    strict: true,
  };
}

export function toAnthropicTool(tool: BoundToolSchema): {
  name: string;
  description: string;
  input_schema: JsonSchema;
} {
  return { name: tool.name, description: tool.description, input_schema: tool.inputSchema };
}

export function toMcpTool(tool: BoundToolSchema): {
  name: string;
  description: string;
  inputSchema: JsonSchema;
  annotations?: BoundToolSchema["annotations"];
} {
  return {
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema,
    ...(tool.annotations ? { annotations: tool.annotations } : {}),
  };
}
