// A project's MCP server asking the user for input (the mcp family's `client.elicit`), put to a
// client that asks questions (`client.ask`: the terminal, the HTTP API's pending questions and its
// console, `serve --mcp`'s own elicitation upstream). Here, because only the composed toolbelt knows
// both families' contracts: the form becomes questions, the answers become the form's content.
import { randomUUID } from "node:crypto";
import type { ClientInfo, Session } from "@toolbelt/core";
import type {
  ElicitationField,
  ElicitationRequest,
  ElicitationResult,
  ElicitationValue,
} from "@toolbelt/mcp/contrib";
import type { QuestionRequest, QuestionResponse } from "@toolbelt/ui/contrib";

type Question = QuestionRequest["questions"][number];

const ANSWER = "Answer";
const DECLINE = "Decline";
const LEAVE_EMPTY = "(leave empty)";
/** Typed for a free field: the default where the form names one, else nothing. */
const SKIP = "-";

function choices(field: ElicitationField): Array<{ value: string; title: string }> | undefined {
  if (field.type === "array") {
    const items = field.items ?? {};
    if (items.anyOf) return items.anyOf.map((o) => ({ value: o.const, title: o.title }));
    return items.enum?.map((value) => ({ value, title: value }));
  }
  if (field.oneOf) return field.oneOf.map((o) => ({ value: o.const, title: o.title }));
  return field.enum?.map((value, i) => ({ value, title: field.enumNames?.[i] ?? value }));
}

function hint(field: ElicitationField): string {
  const bounds = (lo?: number, hi?: number) =>
    lo !== undefined && hi !== undefined
      ? ` from ${lo} to ${hi}`
      : lo !== undefined
        ? ` of at least ${lo}`
        : hi !== undefined
          ? ` of at most ${hi}`
          : "";
  if (field.type === "integer") return `a whole number${bounds(field.minimum, field.maximum)}`;
  if (field.type === "number") return `a number${bounds(field.minimum, field.maximum)}`;
  if (field.type === "string" && field.format) return `a ${field.format}`;
  return "text";
}

/** One question per form field, after one that asks whether to answer at all. */
export function formQuestions(request: ElicitationRequest): Question[] {
  const schema = request.requested_schema;
  const required = new Set(schema.required ?? []);
  const questions: Question[] = [
    {
      header: `MCP server ${request.server}`.slice(0, 40),
      question: `MCP server ${request.server} asks: ${request.message}`,
      options: [ANSWER, DECLINE],
    },
  ];
  for (const [name, field] of Object.entries(schema.properties)) {
    const label = field.title ?? name;
    const optional = !required.has(name);
    const list = choices(field);
    let question = `${label}${field.description ? `: ${field.description}` : ""}`;
    let options: string[];
    if (field.type === "boolean") options = ["yes", "no"];
    else if (list) options = list.map((c) => c.title);
    else {
      // A free field has no options: a typed number is the value, not an option's number.
      options = [];
      const fallback =
        field.default !== undefined
          ? `${SKIP} for the default, ${JSON.stringify(field.default)}`
          : `${SKIP} to leave it empty`;
      question += ` (${hint(field)}${optional || field.default !== undefined ? `; ${fallback}` : ""})`;
    }
    if (options.length > 0) {
      if (field.default !== undefined) question += ` (default: ${JSON.stringify(field.default)})`;
      if (optional) options.push(LEAVE_EMPTY);
    }
    questions.push({
      header: label.slice(0, 40),
      question: question.slice(0, 1000),
      options,
      ...(field.type === "array" ? { multiple: true } : {}),
    });
  }
  return questions;
}

function fieldValue(
  name: string,
  field: ElicitationField,
  question: Question,
  answer: QuestionResponse["answers"][number],
): ElicitationValue | undefined | { problem: string } {
  const where = JSON.stringify(field.title ?? name);
  const picked = (answer.options ?? []).map((i) => question.options[i]);
  if (picked.includes(LEAVE_EMPTY)) return undefined;
  const text = answer.text?.trim();
  if (field.type === "boolean") {
    const word = (picked[0] ?? text ?? "").toLowerCase();
    if (["yes", "y", "true"].includes(word)) return true;
    if (["no", "n", "false"].includes(word)) return false;
    return { problem: `${where}: answer yes or no` };
  }
  const list = choices(field);
  if (list) {
    const byTitle = (t: string) =>
      list.find((c) => c.title === t || c.value === t || c.title.toLowerCase() === t.toLowerCase())?.value;
    const values =
      picked.length > 0
        ? picked.map((t) => byTitle(t as string))
        : (field.type === "array" ? (text ?? "").split(",") : [text ?? ""]).map((t) => byTitle(t.trim()));
    if (values.some((v) => v === undefined))
      return { problem: `${where}: choose from ${list.map((c) => c.title).join(", ")}` };
    return field.type === "array" ? (values as string[]) : (values[0] as string);
  }
  if (text === undefined || text === SKIP) return field.default;
  if (field.type === "number" || field.type === "integer") {
    const n = Number(text);
    if (text === "" || !Number.isFinite(n))
      return { problem: `${where}: ${JSON.stringify(text)} is not a number` };
    return n;
  }
  return answer.text;
}

/** The form's content from the answers to formQuestions, or a decline saying why it cannot be. */
export function formResult(request: ElicitationRequest, response: QuestionResponse): ElicitationResult {
  const questions = formQuestions(request);
  const [first, ...rest] = response.answers;
  if (first?.options?.[0] === 1) return { action: "decline", reason: "the user declined" };
  const content: Record<string, ElicitationValue> = {};
  const fields = Object.entries(request.requested_schema.properties);
  for (const [i, [name, field]] of fields.entries()) {
    const answer = rest[i];
    const question = questions[i + 1];
    if (!answer || !question) continue;
    const value = fieldValue(name, field, question, answer);
    if (value !== null && typeof value === "object" && !Array.isArray(value))
      return { action: "decline", reason: `the answer does not fit the form: ${value.problem}` };
    if (value !== undefined) content[name] = value;
  }
  return { action: "accept", content };
}

/**
 * The `elicit` of a client that only asks questions: a server's form goes through `ask` as
 * questions, with the `question` / `question_answered` events a console draws it from. Only while
 * the client says someone can answer (`ask_user`, which the HTTP API's clients bring and take away);
 * otherwise declined at once, saying so. `session()` is the session the client is attached to.
 */
export function elicitByQuestions(
  client: ClientInfo,
  session: () => Session | undefined,
): NonNullable<ClientInfo["elicit"]> {
  return async (request, signal) => {
    const ask = client.ask;
    const target = session();
    if (!ask || !target || !(client.capabilities ?? []).includes("ask_user"))
      return {
        action: "decline",
        reason: "nobody who can answer is attached to this session (no client with ask_user)",
      };
    const question: QuestionRequest = {
      question_id: `q-${randomUUID().slice(0, 8)}`,
      questions: formQuestions(request),
    };
    target.emit({ type: "question", ...question });
    let response: QuestionResponse;
    try {
      response = await ask(question, signal);
    } catch (error) {
      target.emit({
        type: "question_answered",
        question_id: question.question_id,
        answers: [],
        superseded: true,
      });
      throw error;
    }
    target.emit({
      type: "question_answered",
      question_id: question.question_id,
      answers: response.answers,
      ...(response.notes ? { notes: response.notes } : {}),
    });
    return formResult(request, response);
  };
}
