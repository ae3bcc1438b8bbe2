import { type EventFieldsOf, z } from "@toolbelt/core";
import { defineBuiltinEvents } from "@toolbelt/core/internal";

// The ui family's events and its question contract with clients, light (zod and core types only).

export const uiEvents = defineBuiltinEvents("ui", {
  todos: {
    todos: z.array(
      z.object({
        id: z.string().optional(),
        content: z.string(),
        status: z.enum(["pending", "in_progress", "completed"]),
      }),
    ),
  },
  generative_ui: { tree: z.unknown(), text: z.string() },
  question: {
    question_id: z.string(),
    questions: z.array(z.unknown()),
    timeout_seconds: z.number().optional(),
  },
  question_answered: {
    question_id: z.string(),
    answers: z.array(z.unknown()),
    notes: z.string().optional(),
    late: z.boolean().optional(),
    superseded: z.boolean().optional(),
  },
});

/** What ask_user_question hands the client: the questions, each with its options. */
export interface QuestionRequest {
  question_id: string;
  questions: Array<{ question: string; options: string[]; multiple?: boolean; header?: string }>;
  timeout_seconds?: number;
}

/** The client's answer: per question the chosen option indices or a typed text. */
export interface QuestionResponse {
  answers: Array<{ options?: number[]; text?: string }>;
  notes?: string;
}

/**
 * Checks an answer against the questions it answers: per question option indexes (one unless the
 * question takes several, each once) or non-blank text, never both, and notes as text. Returns the
 * answer with nothing else in it, or why it does not fit. The one check every way of answering goes
 * through (the SDK's answerQuestion, the HTTP API), so a refused answer is refused before anything changes.
 */
export function checkQuestionResponse(request: QuestionRequest, value: unknown): QuestionResponse | string {
  if (typeof value !== "object" || value === null) return "the answer must be {answers: [...], notes?}";
  const { answers, notes } = value as { answers?: unknown; notes?: unknown };
  if (!Array.isArray(answers)) return "answers must be an array (one entry per question)";
  if (answers.length !== request.questions.length)
    return `expected ${request.questions.length} answer(s), one per question, got ${answers.length}`;
  if (notes !== undefined && typeof notes !== "string") return "notes must be a string";
  const checked: QuestionResponse["answers"] = [];
  for (const [i, answer] of answers.entries()) {
    const q = request.questions[i] as QuestionRequest["questions"][number];
    const where = `answers[${i}]`;
    if (typeof answer !== "object" || answer === null)
      return `${where} must be {options?: number[], text?: string}`;
    const { options, text } = answer as { options?: unknown; text?: unknown };
    if (options !== undefined && !Array.isArray(options))
      return `${where}.options must be an array of option indexes`;
    if (text !== undefined && typeof text !== "string") return `${where}.text must be a string`;
    const hasOptions = Array.isArray(options) && options.length > 0;
    const hasText = typeof text === "string" && text.trim() !== "";
    if (hasOptions && hasText) return `${where}: give option indexes or free text, never both`;
    if (!hasOptions && !hasText) return `${where}: give option indexes or free text`;
    if (hasText) {
      checked.push({ text });
      continue;
    }
    const picked = options as unknown[];
    if (!picked.every((n) => Number.isInteger(n) && (n as number) >= 0 && (n as number) < q.options.length))
      return `${where}: option indexes must be integers from 0 to ${q.options.length - 1}`;
    if (new Set(picked).size !== picked.length) return `${where}: an option is chosen twice`;
    if (picked.length > 1 && !q.multiple) return `${where}: this question takes one option`;
    checked.push({ options: picked as number[] });
  }
  return notes ? { answers: checked, notes } : { answers: checked };
}

export const contributions = {
  events: [uiEvents],
  toolKeys: ["ui", "update_todos", "ask_user_question", "present_ui"],
};

declare module "@toolbelt/core" {
  interface EventMap extends EventFieldsOf<typeof uiEvents> {}
  interface ClientInfo {
    /** Asks the user questions (ask_user_question); without it the question waits for an answer file. */
    ask?: (request: QuestionRequest, signal: AbortSignal) => Promise<QuestionResponse>;
  }
}
