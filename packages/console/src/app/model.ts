// The console's picture of a session, folded from the event stream. Pure data, no DOM: the same
// fold serves the live stream, the pending snapshot and a replayed `--events` file.
import type { ToolbeltEvent } from "@toolbelt/core";

export type Json = Record<string, unknown>;

export type ToolCard = {
  /** The call id (`call_id`, or the `id` of an exec result line). */
  id: string;
  tool: string;
  input: unknown;
  seq: number;
  /** A client-brought tool served by an attached client rather than the server. */
  client: boolean;
  result?: Json;
  /** The model-facing text of the result, when the event carried it. */
  text?: string;
  durationMs?: number;
};

export type Todo = { id?: string; content: string; status: "pending" | "in_progress" | "completed" };

export type Panel = { key: string; seq: number; tree: unknown; text: string };

export type QuestionItem = { question: string; options: string[]; multiple?: boolean; header?: string };

export type QuestionAnswer = { options?: number[]; text?: string };

export type Question = {
  id: string;
  seq: number;
  questions: QuestionItem[];
  timeoutSeconds?: number;
  answered?: { answers: unknown[]; notes?: string; late?: boolean; superseded?: boolean };
};

export type Approval = {
  id: string;
  seq: number;
  tool: string;
  family: string;
  access: string;
  summary: string;
  input?: unknown;
  resolved?: { approved: boolean; by: string };
};

export type TimelineItem = {
  kind: "card" | "panel" | "question" | "approval" | "notice";
  key: string;
  seq: number;
};

export type ConsoleState = {
  /** Highest seq applied, per session id, so a reconnecting stream never draws an event twice. */
  lastSeq: Record<string, number>;
  cards: Record<string, ToolCard>;
  panels: Record<string, Panel>;
  questions: Record<string, Question>;
  approvals: Record<string, Approval>;
  notices: Record<string, string>;
  timeline: TimelineItem[];
  todos?: Todo[];
  /** Output of shells by shell id, from `shell_output` events. */
  shells: Record<string, string>;
  /** Bumped on every change; views re-render when it moves. */
  version: number;
};

/** Live shell output kept per shell; the oldest part goes first so a chatty shell cannot eat the tab. */
export const SHELL_OUTPUT_KEEP = 200_000;

export function emptyState(): ConsoleState {
  return {
    lastSeq: {},
    cards: {},
    panels: {},
    questions: {},
    approvals: {},
    notices: {},
    timeline: [],
    shells: {},
    version: 0,
  };
}

function isRecord(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function str(value: unknown, fallback = ""): string {
  return typeof value === "string" ? value : fallback;
}

function nextSeq(state: ConsoleState): number {
  const last = state.timeline[state.timeline.length - 1];
  return last ? last.seq + 1 : 0;
}

function ensureCard(state: ConsoleState, id: string, tool: string, seq: number, client: boolean): ToolCard {
  let card = state.cards[id];
  if (!card) {
    card = { id, tool, input: undefined, seq, client };
    state.cards[id] = card;
    state.timeline.push({ kind: "card", key: id, seq });
  }
  return card;
}

function questionItems(raw: unknown): QuestionItem[] {
  if (!Array.isArray(raw)) return [];
  return raw.filter(isRecord).map((q) => ({
    question: str(q.question, str(q.text, "(no question text)")),
    options: Array.isArray(q.options)
      ? q.options.map((o) => (isRecord(o) ? str(o.label, JSON.stringify(o)) : String(o)))
      : [],
    ...(q.multiple === true || q.multiSelect === true ? { multiple: true } : {}),
    ...(typeof q.header === "string" ? { header: q.header } : {}),
  }));
}

/** The first container id in a tree, depth first (the root's own id when it has one). */
function firstId(node: unknown, depth = 0): string | undefined {
  if (!isRecord(node) || depth > 32) return undefined;
  if (typeof node.id === "string" && node.id) return node.id;
  for (const child of Array.isArray(node.children) ? node.children : []) {
    const id = firstId(child, depth + 1);
    if (id) return id;
  }
  return undefined;
}

/**
 * The key a present_ui tree is kept under. Every update republishes the whole surface, which keeps
 * its container ids, so keying by the first id makes an update replace the panel it changes.
 */
function panelKey(tree: unknown, seq: number): string {
  const id = firstId(tree);
  return id ? `id:${id}` : `seq:${seq}`;
}

/**
 * Folds one event into the state. Accepts anything shaped like an event (a replayed file may hold
 * lines from another version); unknown types are ignored rather than thrown on.
 */
export function applyEvent(state: ConsoleState, input: ToolbeltEvent | Json): boolean {
  if (!isRecord(input) || typeof input.type !== "string") return false;
  const event: Json = input;
  const session = str(event.session);
  const seq = typeof event.seq === "number" ? event.seq : nextSeq(state);
  if (typeof event.seq === "number") {
    const last = state.lastSeq[session];
    if (last !== undefined && event.seq <= last) return false;
    state.lastSeq[session] = event.seq;
  }
  switch (event.type) {
    case "tool_call":
    case "client_tool_call": {
      const card = ensureCard(
        state,
        str(event.call_id, `seq-${seq}`),
        str(event.tool, "?"),
        seq,
        event.type === "client_tool_call",
      );
      // A client-brought tool's call shows up as both tool_call and client_tool_call, one call id.
      if (event.type === "client_tool_call") card.client = true;
      card.input = event.input;
      break;
    }
    case "tool_result":
    case "client_tool_result": {
      const card = ensureCard(
        state,
        str(event.call_id, `seq-${seq}`),
        str(event.tool, "?"),
        seq,
        event.type === "client_tool_result",
      );
      if (isRecord(event.result)) card.result = event.result;
      if (typeof event.text === "string") card.text = event.text;
      if (typeof event.duration_ms === "number") card.durationMs = event.duration_ms;
      break;
    }
    case "todos": {
      const todos = Array.isArray(event.todos) ? event.todos.filter(isRecord) : [];
      state.todos = todos.map((t) => ({
        ...(typeof t.id === "string" ? { id: t.id } : {}),
        content: str(t.content),
        status: t.status === "in_progress" || t.status === "completed" ? t.status : "pending",
      }));
      break;
    }
    case "generative_ui": {
      const key = panelKey(event.tree, seq);
      const existing = state.panels[key];
      state.panels[key] = { key, seq: existing?.seq ?? seq, tree: event.tree, text: str(event.text) };
      if (!existing) state.timeline.push({ kind: "panel", key, seq });
      break;
    }
    case "question": {
      const id = str(event.question_id);
      addQuestion(
        state,
        { question_id: id, questions: event.questions, timeout_seconds: event.timeout_seconds },
        seq,
      );
      break;
    }
    case "question_answered": {
      const q = state.questions[str(event.question_id)];
      if (q) {
        q.answered = {
          answers: Array.isArray(event.answers) ? event.answers : [],
          ...(typeof event.notes === "string" ? { notes: event.notes } : {}),
          ...(event.late === true ? { late: true } : {}),
          ...(event.superseded === true ? { superseded: true } : {}),
        };
      }
      break;
    }
    case "approval_requested":
      addApproval(state, event, seq);
      break;
    case "approval_resolved": {
      const a = state.approvals[str(event.request_id)];
      if (a) a.resolved = { approved: event.approved === true, by: str(event.by) };
      break;
    }
    case "shell_output": {
      const id = str(event.shell_id);
      const next = (state.shells[id] ?? "") + str(event.data);
      state.shells[id] = next.length > SHELL_OUTPUT_KEEP ? next.slice(next.length - SHELL_OUTPUT_KEEP) : next;
      break;
    }
    case "tools_bound": {
      const bound = Array.isArray(event.bound) ? event.bound.length : 0;
      const deferred = Array.isArray(event.deferred) ? event.deferred.length : 0;
      addNotice(state, seq, `Tools bound (${str(event.reason)}): ${bound} bound, ${deferred} deferred`);
      break;
    }
    case "project_switched":
      addNotice(state, seq, `Project switched to ${str(event.key)}: ${str(event.from)} → ${str(event.to)}`);
      break;
    default:
      return false;
  }
  state.version++;
  return true;
}

function addNotice(state: ConsoleState, seq: number, text: string): void {
  const key = `notice-${seq}-${state.timeline.length}`;
  state.notices[key] = text;
  state.timeline.push({ kind: "notice", key, seq });
}

function addQuestion(state: ConsoleState, raw: Json, seq: number): boolean {
  const id = str(raw.question_id);
  if (!id || state.questions[id]) return false;
  state.questions[id] = {
    id,
    seq,
    questions: questionItems(raw.questions),
    ...(typeof raw.timeout_seconds === "number" ? { timeoutSeconds: raw.timeout_seconds } : {}),
  };
  state.timeline.push({ kind: "question", key: id, seq });
  return true;
}

function addApproval(state: ConsoleState, raw: Json, seq: number): boolean {
  const id = str(raw.request_id);
  if (!id || state.approvals[id]) return false;
  state.approvals[id] = {
    id,
    seq,
    tool: str(raw.tool, "?"),
    family: str(raw.family),
    access: str(raw.access),
    summary: str(raw.summary),
    ...(raw.input !== undefined ? { input: raw.input } : {}),
  };
  state.timeline.push({ kind: "approval", key: id, seq });
  return true;
}

/**
 * Merges `GET /pending`: questions and approvals raised before this page started listening.
 * Ones already known are left alone.
 */
export function applyPending(state: ConsoleState, pending: unknown): void {
  if (!isRecord(pending)) return;
  let changed = false;
  for (const q of Array.isArray(pending.questions) ? pending.questions : []) {
    if (isRecord(q)) changed = addQuestion(state, q, nextSeq(state)) || changed;
  }
  for (const a of Array.isArray(pending.approvals) ? pending.approvals : []) {
    if (isRecord(a)) changed = addApproval(state, a, nextSeq(state)) || changed;
  }
  if (changed) state.version++;
}

/** Attaches an exec result line (`{"id","tool","result"}`) to its card, or draws it as a card. */
export function applyResultLine(
  state: ConsoleState,
  line: { id: unknown; tool: unknown; result: unknown },
): void {
  const id = line.id === null || line.id === undefined ? `line-${state.timeline.length}` : String(line.id);
  const card = ensureCard(state, id, str(line.tool, "?"), nextSeq(state), false);
  if (isRecord(line.result)) card.result = line.result;
  state.version++;
}

export function pendingQuestions(state: ConsoleState): Question[] {
  return Object.values(state.questions).filter((q) => !q.answered);
}

export function pendingApprovals(state: ConsoleState): Approval[] {
  return Object.values(state.approvals).filter((a) => !a.resolved);
}
