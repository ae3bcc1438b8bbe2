// A tool input checked against its schema before anything runs: the depth bound first (validation
// recurses), then the schema, then once more without nulls (what strict provider schemas send).
import type { z } from "zod";
import { ToolbeltError } from "./errors.js";
import { valueNestsDeeperThan } from "./json-depth.js";

/** Object properties set to null, removed (deeply): what OpenAI strict mode sends for an unused optional field. */
function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutNulls);
  if (typeof value !== "object" || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    // defineProperty, not assignment: a key named __proto__ must stay data, never become the prototype.
    if (v !== null)
      Object.defineProperty(out, key, {
        value: withoutNulls(v),
        enumerable: true,
        writable: true,
        configurable: true,
      });
  }
  return out;
}

/** Deeper inputs are refused before validation, whose recursion they would otherwise overflow. */
export const MAX_INPUT_DEPTH = 128;

export function validate(schema: z.ZodType, input: unknown): unknown {
  if (valueNestsDeeperThan(input, MAX_INPUT_DEPTH)) {
    throw new ToolbeltError(
      "EINVAL_INPUT",
      `input is nested more than ${MAX_INPUT_DEPTH} levels deep (the bound on tool inputs)`,
      { details: { field: "(input)", limit: MAX_INPUT_DEPTH } },
    );
  }
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  // Strict provider schemas make optional fields nullable; null there means "not given". Only when the
  // input as sent fails do we retry without the nulls, so a schema that accepts null keeps them.
  if (typeof input === "object" && input !== null) {
    const retry = schema.safeParse(withoutNulls(input));
    if (retry.success) return retry.data;
  }
  const issues = result.error.issues.map((issue) => ({
    path: issue.path.map(String).join(".") || "(input)",
    message: issue.message,
  }));
  const first = issues[0];
  throw new ToolbeltError("EINVAL_INPUT", issues.map((i) => `${i.path}: ${i.message}`).join("; "), {
    details: { field: first?.path, issues },
  });
}
