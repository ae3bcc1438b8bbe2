import { z } from "zod";

/** The event schema version. Bump on any breaking change of an event's shape. */
export const EVENT_SCHEMA_VERSION = 1;

const base = {
  v: z.literal(EVENT_SCHEMA_VERSION),
  seq: z.number().int().nonnegative(),
  session: z.string(),
  at: z.string(),
};

const payload = z.record(z.string(), z.unknown());

export const eventSchemas = {
  tool_call: z.object({
    ...base,
    type: z.literal("tool_call"),
    call_id: z.string(),
    tool: z.string(),
    input: z.unknown(),
  }),
  tool_result: z.object({
    ...base,
    type: z.literal("tool_result"),
    call_id: z.string(),
    tool: z.string(),
    result: payload,
    text: z.string().optional(),
    duration_ms: z.number().nonnegative(),
  }),
  todos: z.object({
    ...base,
    type: z.literal("todos"),
    todos: z.array(
      z.object({
        id: z.string().optional(),
        content: z.string(),
        status: z.enum(["pending", "in_progress", "completed"]),
      }),
    ),
  }),
  generative_ui: z.object({
    ...base,
    type: z.literal("generative_ui"),
    tree: z.unknown(),
    text: z.string(),
  }),
  question: z.object({
    ...base,
    type: z.literal("question"),
    question_id: z.string(),
    questions: z.array(z.unknown()),
    timeout_seconds: z.number().optional(),
  }),
  question_answered: z.object({
    ...base,
    type: z.literal("question_answered"),
    question_id: z.string(),
    answers: z.array(z.unknown()),
    notes: z.string().optional(),
    late: z.boolean().optional(),
    superseded: z.boolean().optional(),
  }),
  approval_requested: z.object({
    ...base,
    type: z.literal("approval_requested"),
    request_id: z.string(),
    tool: z.string(),
    family: z.string(),
    access: z.string(),
    summary: z.string(),
    input: z.unknown().optional(),
  }),
  approval_resolved: z.object({
    ...base,
    type: z.literal("approval_resolved"),
    request_id: z.string(),
    approved: z.boolean(),
    by: z.string(),
  }),
  shell_output: z.object({
    ...base,
    type: z.literal("shell_output"),
    shell_id: z.string(),
    data: z.string(),
  }),
  tools_bound: z.object({
    ...base,
    type: z.literal("tools_bound"),
    bound: z.array(z.string()),
    deferred: z.array(z.string()),
    reason: z.string(),
  }),
  project_switched: z.object({
    ...base,
    type: z.literal("project_switched"),
    key: z.string(),
    from: z.string(),
    to: z.string(),
  }),
  client_tool_call: z.object({
    ...base,
    type: z.literal("client_tool_call"),
    call_id: z.string(),
    tool: z.string(),
    input: z.unknown(),
  }),
  client_tool_result: z.object({
    ...base,
    type: z.literal("client_tool_result"),
    call_id: z.string(),
    tool: z.string(),
    result: payload,
  }),
  // Sent once while the session starts, when settings of an untrusted project were dropped.
  config_ignored: z.object({
    ...base,
    type: z.literal("config_ignored"),
    trusted: z.boolean(),
    reason: z.string(),
    ignored: z.array(z.object({ key: z.string(), source: z.string(), why: z.string() })),
  }),
} as const;

export type EventType = keyof typeof eventSchemas;
export const EVENT_TYPES = Object.keys(eventSchemas) as EventType[];

export const eventSchema = z.discriminatedUnion("type", [
  eventSchemas.tool_call,
  eventSchemas.tool_result,
  eventSchemas.todos,
  eventSchemas.generative_ui,
  eventSchemas.question,
  eventSchemas.question_answered,
  eventSchemas.approval_requested,
  eventSchemas.approval_resolved,
  eventSchemas.shell_output,
  eventSchemas.tools_bound,
  eventSchemas.project_switched,
  eventSchemas.client_tool_call,
  eventSchemas.client_tool_result,
  eventSchemas.config_ignored,
]);

export type ToolbeltEvent = z.infer<typeof eventSchema>;
export type EventOf<T extends EventType> = Extract<ToolbeltEvent, { type: T }>;
/** What a tool passes to `emit`: the event without the envelope the session adds. */
export type EventInput = ToolbeltEvent extends infer E
  ? E extends ToolbeltEvent
    ? Omit<E, "v" | "seq" | "session" | "at">
    : never
  : never;

/** The event schema as JSON Schema, for docs and non-TypeScript consumers. */
export function eventJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(eventSchema, { unrepresentable: "any" }) as Record<string, unknown>;
}

type Listener = (event: ToolbeltEvent) => void;

/**
 * Sequenced, validated events: `on(type, fn)` for callbacks and an async iterator that
 * sees every event emitted after it started iterating.
 */
export class EventStream implements AsyncIterable<ToolbeltEvent> {
  #seq = 0;
  #closed = false;
  readonly #listeners = new Set<{ type: EventType | "*"; fn: Listener }>();
  readonly #waiters = new Set<{ queue: ToolbeltEvent[]; wake: (() => void) | undefined }>();

  constructor(readonly sessionId: string) {}

  emit(input: EventInput): ToolbeltEvent {
    const event = eventSchema.parse({
      ...input,
      v: EVENT_SCHEMA_VERSION,
      seq: this.#seq++,
      session: this.sessionId,
      at: new Date().toISOString(),
    });
    for (const listener of this.#listeners) {
      if (listener.type !== "*" && listener.type !== event.type) continue;
      try {
        listener.fn(event);
      } catch {
        // A failing listener must never break the tool call that emitted the event.
      }
    }
    for (const waiter of this.#waiters) {
      waiter.queue.push(event);
      waiter.wake?.();
    }
    return event;
  }

  on<T extends EventType | "*">(
    type: T,
    fn: (event: T extends EventType ? EventOf<T> : ToolbeltEvent) => void,
  ): () => void {
    const entry = { type, fn: fn as Listener };
    this.#listeners.add(entry);
    return () => this.#listeners.delete(entry);
  }

  close(): void {
    this.#closed = true;
    for (const waiter of this.#waiters) waiter.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<ToolbeltEvent> {
    const waiter: { queue: ToolbeltEvent[]; wake: (() => void) | undefined } = { queue: [], wake: undefined };
    this.#waiters.add(waiter);
    try {
      while (true) {
        const next = waiter.queue.shift();
        if (next) {
          yield next;
          continue;
        }
        if (this.#closed) return;
        await new Promise<void>((resolve) => {
          waiter.wake = resolve;
        });
        waiter.wake = undefined;
      }
    } finally {
      this.#waiters.delete(waiter);
    }
  }
}
