import { randomUUID } from "node:crypto";
import type { Session } from "@toolbelt/core";
import {
  type ElicitationField,
  type ElicitationPolicy,
  type ElicitationResult,
  type ElicitationSchema,
  type ElicitationValue,
  mcpConfig,
} from "./contrib.js";

// A project's MCP server asking the user for input (`elicitation/create`, form mode): who may be
// asked, what is sent back, and the check every answer passes before the server sees it.

/** `tools.mcp.elicitation`, "ask" when unset. */
export function elicitationPolicy(session: Pick<Session, "config">): ElicitationPolicy {
  return mcpConfig.read(session.config).elicitation ?? "ask";
}

/**
 * Whether toolbelt offers elicitation to servers at all: when the policy answers by itself
 * (accept_defaults), or asks and the client has a way to ask someone. Declining by policy, or with
 * nobody to ask, the capability is not advertised, so a well-behaved server does not ask.
 */
export function offersElicitation(session: Pick<Session, "config" | "client">): boolean {
  const policy = elicitationPolicy(session);
  if (policy === "accept_defaults") return true;
  return policy === "ask" && session.client.elicit !== undefined;
}

/** The values a form names as defaults (SEP-1034), by field. */
export function defaultsOf(schema: ElicitationSchema): Record<string, ElicitationValue> {
  const out: Record<string, ElicitationValue> = {};
  for (const [name, field] of Object.entries(schema.properties))
    if (field.default !== undefined) out[name] = field.default;
  return out;
}

/** The allowed values of an enum field (single or multi-select), or undefined for a free field. */
export function choicesOf(field: ElicitationField): string[] | undefined {
  if (field.type === "array") {
    const items = field.items ?? {};
    return items.enum ?? items.anyOf?.map((o) => o.const);
  }
  return field.enum ?? field.oneOf?.map((o) => o.const);
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

function checkFormat(format: ElicitationField["format"], value: string): string | undefined {
  if (format === "email" && !EMAIL.test(value)) return "is not an email address";
  if (format === "uri") {
    try {
      new URL(value);
    } catch {
      return "is not a URI";
    }
  }
  if (format === "date" && (!DATE.test(value) || Number.isNaN(Date.parse(value))))
    return "is not a date (YYYY-MM-DD)";
  if (format === "date-time" && (!value.includes("T") || Number.isNaN(Date.parse(value))))
    return "is not a date-time (ISO 8601)";
  return undefined;
}

function checkField(name: string, field: ElicitationField, value: unknown): string | undefined {
  const where = JSON.stringify(name);
  const choices = choicesOf(field);
  switch (field.type) {
    case "string": {
      if (typeof value !== "string") return `${where} must be a string`;
      if (choices && !choices.includes(value)) return `${where} must be one of ${choices.join(", ")}`;
      if (field.minLength !== undefined && value.length < field.minLength)
        return `${where} must be at least ${field.minLength} characters`;
      if (field.maxLength !== undefined && value.length > field.maxLength)
        return `${where} must be at most ${field.maxLength} characters`;
      const format = checkFormat(field.format, value);
      return format ? `${where} ${format}` : undefined;
    }
    case "number":
    case "integer": {
      if (typeof value !== "number" || !Number.isFinite(value)) return `${where} must be a number`;
      if (field.type === "integer" && !Number.isInteger(value)) return `${where} must be an integer`;
      if (field.minimum !== undefined && value < field.minimum)
        return `${where} must be at least ${field.minimum}`;
      if (field.maximum !== undefined && value > field.maximum)
        return `${where} must be at most ${field.maximum}`;
      return undefined;
    }
    case "boolean":
      return typeof value === "boolean" ? undefined : `${where} must be true or false`;
    case "array": {
      if (!Array.isArray(value) || !value.every((v) => typeof v === "string"))
        return `${where} must be a list of strings`;
      if (choices && !value.every((v) => choices.includes(v)))
        return `${where} may only hold ${choices.join(", ")}`;
      if (new Set(value).size !== value.length) return `${where} names a choice twice`;
      if (field.minItems !== undefined && value.length < field.minItems)
        return `${where} needs at least ${field.minItems} choices`;
      if (field.maxItems !== undefined && value.length > field.maxItems)
        return `${where} takes at most ${field.maxItems} choices`;
      return undefined;
    }
  }
  return `${where} has a type MCP forms do not allow`;
}

/**
 * Checks a form's content against the schema it answers: every required field present, no field the
 * form does not name, each value of its field's type and within its bounds. Returns why not, or
 * undefined when it fits.
 */
export function checkContent(
  schema: ElicitationSchema,
  content: Record<string, unknown>,
): string | undefined {
  for (const name of schema.required ?? [])
    if (content[name] === undefined) return `${JSON.stringify(name)} is required`;
  for (const [name, value] of Object.entries(content)) {
    const field = schema.properties[name];
    if (!field) return `${JSON.stringify(name)} is not a field of the form`;
    const problem = checkField(name, field, value);
    if (problem) return problem;
  }
  return undefined;
}

/**
 * Whether a server's form is one toolbelt can present: an object of flat primitive fields only.
 * Anything else is declined rather than half-shown.
 */
export function checkSchema(schema: unknown): string | undefined {
  const s = schema as ElicitationSchema | undefined;
  if (s?.type !== "object" || typeof s.properties !== "object" || s.properties === null)
    return "the requested schema is not an object of fields";
  for (const [name, field] of Object.entries(s.properties)) {
    if (!["string", "number", "integer", "boolean", "array"].includes(field?.type))
      return `field ${JSON.stringify(name)} is not a primitive MCP forms allow`;
    if (field.default !== undefined && checkField(name, field, field.default))
      return `the default of ${JSON.stringify(name)} does not fit its own field`;
  }
  for (const name of s.required ?? [])
    if (!(name in s.properties)) return `required field ${JSON.stringify(name)} is not in the form`;
  return undefined;
}

export type Elicited = {
  message: string;
  action: ElicitationResult["action"];
  /** `policy`: answered by tools.mcp.elicitation or for want of anyone to ask. */
  by: "client" | "policy";
  reason?: string;
};

/**
 * Answers one `elicitation/create` of server `server` for the session: by policy, or through the
 * client's `elicit`. What goes back is always a valid result: accepted content has been checked
 * against the form, and anything that fails (a bad form, a bad answer, a client error) is declined
 * with the reason kept for the tool result.
 */
export async function answerElicitation(
  session: Session,
  server: string,
  params: { message: string; requestedSchema: unknown },
  signal: AbortSignal,
): Promise<ElicitationResult & { by: Elicited["by"] }> {
  const id = `e-${randomUUID().slice(0, 8)}`;
  const schema = params.requestedSchema as ElicitationSchema;
  const bad = checkSchema(schema);
  const fields = bad ? [] : Object.keys(schema.properties);
  session.emit({
    type: "elicitation_requested",
    elicitation_id: id,
    server,
    message: params.message,
    fields,
  });
  const result = await decide(session, server, id, params.message, schema, bad, signal);
  session.emit({
    type: "elicitation_resolved",
    elicitation_id: id,
    server,
    action: result.action,
    by: result.by,
    ...(result.reason ? { reason: result.reason } : {}),
  });
  return result;
}

async function decide(
  session: Session,
  server: string,
  id: string,
  message: string,
  schema: ElicitationSchema,
  bad: string | undefined,
  signal: AbortSignal,
): Promise<ElicitationResult & { by: Elicited["by"] }> {
  if (bad) return { action: "decline", by: "policy", reason: `toolbelt cannot show this form: ${bad}` };
  const policy = elicitationPolicy(session);
  if (policy === "decline")
    return { action: "decline", by: "policy", reason: 'tools.mcp.elicitation is "decline"' };
  if (policy === "accept_defaults") {
    const content = defaultsOf(schema);
    const problem = checkContent(schema, content);
    if (problem)
      return {
        action: "decline",
        by: "policy",
        reason: `tools.mcp.elicitation is "accept_defaults", but the defaults do not fill the form: ${problem}`,
      };
    return { action: "accept", content, by: "policy" };
  }
  const elicit = session.client.elicit;
  if (!elicit)
    return {
      action: "decline",
      by: "policy",
      reason:
        'nobody can answer in this session (no client that asks); set tools.mcp.elicitation to "accept_defaults" to accept the defaults the server names',
    };
  let answer: ElicitationResult;
  try {
    answer = await elicit({ elicitation_id: id, server, message, requested_schema: schema }, signal);
  } catch (error) {
    if (signal.aborted) return { action: "cancel", by: "client", reason: "the call ended before an answer" };
    return {
      action: "cancel",
      by: "client",
      reason: `the client could not ask: ${(error as Error).message}`,
    };
  }
  if (answer.action !== "accept")
    return { action: answer.action, by: "client", ...(answer.reason ? { reason: answer.reason } : {}) };
  const content = answer.content ?? {};
  const problem = checkContent(schema, content);
  if (problem)
    return { action: "decline", by: "client", reason: `the answer does not fit the form: ${problem}` };
  return { action: "accept", content, by: "client" };
}
