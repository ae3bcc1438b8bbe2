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
