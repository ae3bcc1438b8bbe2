import { escapeText } from "./escape.js";
import { type HeaderValue, renderText } from "./text-format.js";
import type { Payload } from "./tool.js";

const BODY_FIELDS = ["content", "output", "stdout", "text", "diff", "body"] as const;

function titleCase(key: string): string {
  return key
    .split(/[_\s]+/)
    .filter(Boolean)
    .map((part) => part[0]?.toUpperCase() + part.slice(1))
    .join("-");
}

/**
 * The model-facing text of a payload: the tool's own renderer when it has one; errors as
 * `# Error: CODE` + message; anything else as `# Kind` + scalar headers + its main text field.
 */
export function renderPayload(payload: Payload, render?: (payload: Payload) => string): string {
  if (payload.kind === "error") {
    const { kind: _k, code, message, ...rest } = payload;
    const extra = Object.entries(rest)
      .filter(([, v]) => v !== undefined && (typeof v !== "object" || v === null))
      .map(([k, v]) => [titleCase(k), v as HeaderValue] as [string, HeaderValue]);
    // Messages quote paths and input: their lines stay, but no control character reaches a terminal raw.
    const body = escapeText(String(message), { keep: "\n\t", reversible: false });
    return renderText([["Error", String(code)], ...extra], body);
  }
  if (render) return render(payload);
  const headers: Array<[string, HeaderValue]> = [["Kind", payload.kind]];
  let body = "";
  const rest: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(payload)) {
    if (key === "kind") continue;
    if (!body && (BODY_FIELDS as readonly string[]).includes(key) && typeof value === "string") {
      body = value;
    } else if (value === null || ["string", "number", "boolean"].includes(typeof value)) {
      const s = String(value);
      if (s.includes("\n")) rest[key] = value;
      else headers.push([titleCase(key), s]);
    } else if (value !== undefined) {
      rest[key] = value;
    }
  }
  if (Object.keys(rest).length)
    body = body ? `${body}\n${JSON.stringify(rest, null, 2)}` : JSON.stringify(rest, null, 2);
  return renderText(headers, body);
}
