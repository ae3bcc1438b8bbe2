import { createHash, randomUUID } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { defineTool, type ErrorPayload, errorPayload, renderText, type Session, z } from "@toolbelt/core";
import { stateDir } from "@toolbelt/core/internal";
import { checkQuestionResponse, type QuestionRequest, type QuestionResponse } from "./contrib.js";

type Question = QuestionRequest["questions"][number];

/** One answer as the model reads it: the chosen option labels or the user's own words. */
const answerView = z.object({
  question: z.string(),
  options: z.array(z.number().int()).optional(),
  selected: z.array(z.string()).optional(),
  text: z.string().optional(),
});

const questionAnswersPayload = z.object({
  kind: z.literal("question_answers"),
  question_id: z.string(),
  answers: z.array(answerView),
  notes: z.string().optional(),
});

const questionPendingPayload = z.object({
  kind: z.literal("question_pending"),
  question_id: z.string(),
  waited_seconds: z.number(),
  message: z.string(),
});

const questionSupersededPayload = z.object({
  kind: z.literal("question_superseded"),
  question_id: z.string(),
  user_message: z.string(),
  message: z.string(),
});

export type AnswerView = z.output<typeof answerView>;
export type QuestionAnswersPayload = z.output<typeof questionAnswersPayload>;
export type QuestionPendingPayload = z.output<typeof questionPendingPayload>;
export type QuestionSupersededPayload = z.output<typeof questionSupersededPayload>;
export type QuestionPayload = QuestionAnswersPayload | QuestionPendingPayload | QuestionSupersededPayload;

/** An answer that came after its question timed out, waiting for the agent loop to pick it up. */
export type LateAnswer = QuestionAnswersPayload & { text: string };

export type PendingQuestion = {
  question_id: string;
  questions: Question[];
  /** `waiting`: the tool call is still blocked on it; `timed_out`: the call returned, the question stays open. */
  status: "waiting" | "timed_out";
  asked_at: string;
};

type Outcome =
  | { type: "answered"; payload: QuestionAnswersPayload }
  | { type: "superseded"; text: string }
  | { type: "failed"; error: ErrorPayload };

type Entry = {
  request: QuestionRequest;
  status: PendingQuestion["status"];
  askedAt: string;
  controller: AbortController;
  settle: (outcome: Outcome) => void;
};

type Store = {
  pending: Map<string, Entry>;
  late: LateAnswer[];
  hooked: boolean;
  /** Ids this session wrote to (or read from) the questions file: the entries it owns there. */
  owned: Set<string>;
  file: string | undefined;
};

const QUESTIONS_STATE = "ui.questions";

/** What the questions file of a root holds: the open questions and the late answers not yet taken. */
type SavedQuestions = {
  v: 1;
  root: string;
  pending: Array<{ request: QuestionRequest; asked_at: string }>;
  late: LateAnswer[];
};

/**
 * Open questions outlive the process: a root session keeps them (and untaken late answers) in
 * `<state dir>/questions/<hash of the root>.json`, so a restarted server still takes their answers.
 */
export function questionsFile(session: Session): string | undefined {
  if (!session.isRoot) return undefined;
  const key = createHash("sha256").update(session.root).digest("hex").slice(0, 24);
  return path.join(stateDir(), "questions", `${key}.json`);
}

function readSaved(file: string, root: string): SavedQuestions | undefined {
  try {
    const saved = JSON.parse(readFileSync(file, "utf8")) as SavedQuestions;
    if (saved?.v !== 1 || saved.root !== root || !Array.isArray(saved.pending) || !Array.isArray(saved.late))
      return undefined;
    return saved;
  } catch {
    return undefined;
  }
}

/** Writes this session's open questions, keeping what other sessions of the same root saved. */
function save(session: Session, s: Store): void {
  if (!s.file || session.closed) return;
  const others = readSaved(s.file, session.root);
  const pending = (others?.pending ?? []).filter((p) => !s.owned.has(p.request.question_id));
  const late = (others?.late ?? []).filter((l) => !s.owned.has(l.question_id));
  for (const [id, entry] of s.pending) {
    s.owned.add(id);
    pending.push({ request: entry.request, asked_at: entry.askedAt });
  }
  for (const answer of s.late) s.owned.add(answer.question_id);
  late.push(...s.late);
  try {
    if (pending.length === 0 && late.length === 0) {
      rmSync(s.file, { force: true });
      return;
    }
    mkdirSync(path.dirname(s.file), { recursive: true, mode: 0o700 });
    const tmp = `${s.file}.${process.pid}.tmp`;
    const saved: SavedQuestions = { v: 1, root: session.root, pending, late };
    writeFileSync(tmp, JSON.stringify(saved), { mode: 0o600 });
    renameSync(tmp, s.file);
  } catch {
    // A read-only state dir only loses persistence across restarts; the session works as before.
  }
}

/** Questions a previous process left open come back as timed out: answerable, the answer arrives late. */
function restore(session: Session, s: Store): void {
  if (!s.file) return;
  const saved = readSaved(s.file, session.root);
  if (!saved) return;
  for (const { request, asked_at } of saved.pending) {
    if (typeof request?.question_id !== "string" || !Array.isArray(request.questions)) continue;
    s.owned.add(request.question_id);
    s.pending.set(request.question_id, {
      request,
      status: "timed_out",
      askedAt: asked_at,
      controller: new AbortController(),
      settle: () => {},
    });
  }
  for (const answer of saved.late) {
    if (typeof answer?.question_id !== "string" || typeof answer.text !== "string") continue;
    s.owned.add(answer.question_id);
    s.late.push(answer);
  }
}

function store(session: Session): Store {
  const s = session.state<Store>(QUESTIONS_STATE, () => {
    const fresh: Store = { pending: new Map(), late: [], hooked: false, owned: new Set(), file: undefined };
    fresh.file = questionsFile(session);
    restore(session, fresh);
    return fresh;
  });
  if (!s.hooked) {
    s.hooked = true;
    // A new user message answers nothing: it replaces the questions calls still wait on.
    session.hooks.userMessage.add((text) => supersede(session, s, text));
    session.onClose(() => {
      for (const entry of s.pending.values()) entry.controller.abort(new Error("session closed"));
      s.pending.clear();
    });
  }
  return s;
}

/**
 * Closes the questions a call is still blocked on: their calls return `question_superseded`. A
 * question whose call already returned (timed out, or left by an earlier process) stays answerable:
 * its answer arrives later as a new message, as the spec has it.
 */
function supersede(session: Session, s: Store, text: string): void {
  let changed = false;
  for (const [id, entry] of s.pending) {
    if (entry.status !== "waiting") continue;
    changed = true;
    s.pending.delete(id);
    entry.controller.abort(new Error("superseded by a new user message"));
    session.emit({ type: "question_answered", question_id: id, answers: [], superseded: true });
    entry.settle({ type: "superseded", text });
  }
  if (changed) save(session, s);
}

/** The model's view of a checked answer: the chosen option labels or the user's own words. */
function answerViews(request: QuestionRequest, response: QuestionResponse): QuestionAnswersPayload {
  const answers: AnswerView[] = response.answers.map((answer, i) => {
    const q = request.questions[i] as Question;
    if (answer.text !== undefined) return { question: q.question, text: answer.text };
    const picked = answer.options ?? [];
    return { question: q.question, options: picked, selected: picked.map((n) => q.options[n] as string) };
  });
  return {
    kind: "question_answers",
    question_id: request.question_id,
    answers,
    ...(response.notes ? { notes: response.notes } : {}),
  };
}

function renderAnswers(payload: QuestionAnswersPayload, late = false): string {
  const lines = payload.answers.map((a, i) => {
    const answer = a.text !== undefined ? `(own words) ${a.text}` : (a.selected ?? []).join("; ");
    return `Q${i + 1}: ${a.question}\nA${i + 1}: ${answer}`;
  });
  if (payload.notes) lines.push(`Notes: ${payload.notes}`);
  return renderText(
    [
      ["Kind", payload.kind],
      ["Question-Id", payload.question_id],
      ["Late", late ? "true (the question had timed out; this answer arrived afterwards)" : undefined],
    ],
    lines.join("\n"),
  );
}

/**
 * Answers a question from outside the tool call (a UI, an HTTP client, a test). An answer in time
 * completes the blocked call; one after its timeout becomes a late `question_answered` event and is
 * queued for `takeLateAnswers`. Returns an error payload for an unknown id or an invalid answer.
 */
export function answerQuestion(
  session: Session,
  questionId: string,
  response: QuestionResponse,
): { kind: "question_answered"; question_id: string; late: boolean } | ErrorPayload {
  const s = store(session);
  const entry = s.pending.get(questionId);
  if (!entry) {
    const open = [...s.pending.keys()];
    return errorPayload(
      "ENOENT",
      `no open question ${JSON.stringify(questionId)} (answered, superseded or never asked); open: ${open.join(", ") || "(none)"}`,
      { question_id: questionId },
    );
  }
  // A refused answer changes nothing: the question stays open for the next answer.
  const checked = checkQuestionResponse(entry.request, response);
  if (typeof checked === "string") return errorPayload("EINVAL_INPUT", checked, { question_id: questionId });
  s.pending.delete(questionId);
  const late = entry.status === "timed_out";
  session.emit({
    type: "question_answered",
    question_id: questionId,
    answers: checked.answers,
    ...(checked.notes ? { notes: checked.notes } : {}),
    ...(late ? { late: true } : {}),
  });
  const payload = answerViews(entry.request, checked);
  if (late) s.late.push({ ...payload, text: renderAnswers(payload, true) });
  else entry.settle({ type: "answered", payload });
  save(session, s);
  return { kind: "question_answered", question_id: questionId, late };
}

/** Questions still open in this session (blocked calls and timed-out ones that can still be answered). */
export function pendingQuestions(session: Session): PendingQuestion[] {
  return [...store(session).pending.entries()].map(([id, e]) => ({
    question_id: id,
    questions: e.request.questions,
    status: e.status,
    asked_at: e.askedAt,
  }));
}

/**
 * Late answers not yet picked up, oldest first; each carries `text` to hand to the model as a new
 * message. Taking them clears the queue.
 */
export function takeLateAnswers(session: Session): LateAnswer[] {
  const s = store(session);
  const taken = s.late.splice(0);
  if (taken.length) save(session, s);
  return taken;
}

const questionSchema = z.object({
  question: z.string().min(1).max(1000).describe("the full question"),
  header: z.string().max(40).optional().describe("a short label, e.g. 'Database'"),
  options: z
    .array(z.string().min(1).max(200))
    .min(1)
    .max(10)
    .describe("choices; the user may also answer in own words"),
  multiple: z.boolean().optional().describe("allow choosing several options"),
});

export const askUserQuestion = defineTool({
  name: "ask_user_question",
  family: "ui",
  access: "interact",
  requires: { rootAgentOnly: true, capability: "ask_user" },
  description:
    "Ask the user one or more questions, each with options; the user picks option(s) or answers in own words, and may add notes. Blocks until answered unless timeout_seconds is given: then an unanswered question returns a 'pending' result (not an error), stays open, and a later answer arrives as a new message. Ask only what you cannot find out yourself.",
  input: z.object({
    questions: z.array(questionSchema).min(1).max(8),
    timeout_seconds: z.number().positive().max(86_400).optional().describe("stop waiting after this long"),
  }),
  output: z.discriminatedUnion("kind", [
    questionAnswersPayload,
    questionPendingPayload,
    questionSupersededPayload,
  ]),
  async execute(input, ctx): Promise<QuestionPayload | ErrorPayload> {
    const session = ctx.session;
    const s = store(session);
    const questionId = `q-${randomUUID().slice(0, 8)}`;
    const questions: Question[] = input.questions.map((q) => ({
      question: q.question,
      options: q.options,
      ...(q.header !== undefined ? { header: q.header } : {}),
      ...(q.multiple !== undefined ? { multiple: q.multiple } : {}),
    }));
    const request: QuestionRequest = {
      question_id: questionId,
      questions,
      ...(input.timeout_seconds !== undefined ? { timeout_seconds: input.timeout_seconds } : {}),
    };
    let settle: (outcome: Outcome) => void = () => {};
    const outcome = new Promise<Outcome>((resolve) => {
      settle = resolve;
    });
    const entry: Entry = {
      request,
      status: "waiting",
      askedAt: new Date().toISOString(),
      controller: new AbortController(),
      settle,
    };
    s.pending.set(questionId, entry);
    save(session, s);
    ctx.emit({ type: "question", ...request });

    const ask = session.client.ask;
    if (ask) {
      // The client's promise outlives a timeout: a terminal answer typed later still counts (late).
      ask(request, entry.controller.signal).then(
        (response) => {
          if (!s.pending.has(questionId)) return;
          const result = answerQuestion(session, questionId, response);
          if (result.kind === "error" && s.pending.get(questionId) === entry) {
            s.pending.delete(questionId);
            save(session, s);
            entry.settle({
              type: "failed",
              error: { ...result, message: `the client's answer: ${result.message}` },
            });
          }
        },
        (error: unknown) => {
          if (entry.controller.signal.aborted || s.pending.get(questionId) !== entry) return;
          s.pending.delete(questionId);
          save(session, s);
          entry.settle({
            type: "failed",
            error: errorPayload(
              "EUNAVAILABLE",
              `the client could not ask: ${(error as Error)?.message ?? String(error)}`,
            ),
          });
        },
      );
    }

    const waits: Array<Promise<Outcome | "timeout" | "aborted">> = [outcome];
    let timer: NodeJS.Timeout | undefined;
    if (input.timeout_seconds !== undefined) {
      const ms = input.timeout_seconds * 1000;
      waits.push(new Promise((resolve) => (timer = setTimeout(() => resolve("timeout"), ms))));
    }
    let onAbort: (() => void) | undefined;
    waits.push(
      new Promise((resolve) => {
        onAbort = () => resolve("aborted");
        if (ctx.signal.aborted) onAbort();
        else ctx.signal.addEventListener("abort", onAbort, { once: true });
      }),
    );
    try {
      const result = await Promise.race(waits);
      if (result === "aborted") {
        s.pending.delete(questionId);
        save(session, s);
        entry.controller.abort(new Error("the call was cancelled"));
        return errorPayload("ECANCELLED", "the question was cancelled before it was answered", {
          question_id: questionId,
        });
      }
      if (result === "timeout") {
        entry.status = "timed_out";
        return {
          kind: "question_pending",
          question_id: questionId,
          waited_seconds: input.timeout_seconds ?? 0,
          message: `No answer after ${input.timeout_seconds} s. The question stays open: if the user answers later, the answer comes to you as a new message. Continue with a sensible default and say which one you chose, or work on something that does not depend on the answer.`,
        };
      }
      if (result.type === "answered") return result.payload;
      if (result.type === "failed") return result.error;
      return {
        kind: "question_superseded",
        question_id: questionId,
        user_message: result.text,
        message:
          "The user sent a new message instead of answering; the question is closed. Follow the new message.",
      };
    } finally {
      if (timer) clearTimeout(timer);
      if (onAbort) ctx.signal.removeEventListener("abort", onAbort);
    }
  },
  render(payload) {
    if (payload.kind === "question_answers") return renderAnswers(payload);
    if (payload.kind === "question_pending")
      return renderText(
        [
          ["Kind", payload.kind],
          ["Question-Id", payload.question_id],
          ["Waited", `${payload.waited_seconds} s`],
        ],
        payload.message,
      );
    return renderText(
      [
        ["Kind", payload.kind],
        ["Question-Id", payload.question_id],
      ],
      `${payload.message}\nUser message: ${payload.user_message}`,
    );
  },
});
