import { z } from "zod";
import { clash, type EventContribution } from "./contributions.js";
import { ToolbeltError } from "./errors.js";

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

type CoreEventSchema = (typeof eventSchemas)[keyof typeof eventSchemas];
const CORE_EVENTS = Object.values(eventSchemas) as CoreEventSchema[];

/** Core's own events; families and plugins add theirs (`defineBuiltinEvents`, `defineEvents`). */
export const eventSchema = z.discriminatedUnion(
  "type",
  CORE_EVENTS as [CoreEventSchema, ...CoreEventSchema[]],
);

/**
 * Events families and plugins contribute, for typing: each augments this map (event type → fields)
 * beside the `defineEvents` that validates them, so `emit` and `on` stay type-checked.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled in by module augmentation
export interface EventMap {}

/** The fields of contributed events, as `EventMap` takes them. */
export type EventFieldsOf<C extends EventContribution> = {
  [K in keyof C["events"] & string]: z.output<z.ZodObject<C["events"][K]>>;
};

type Envelope = { v: typeof EVENT_SCHEMA_VERSION; seq: number; session: string; at: string };
type CoreEvent = z.infer<typeof eventSchema>;
type ContributedEvent = {
  [K in keyof EventMap & string]: Envelope & { type: K } & EventMap[K];
}[keyof EventMap & string];

export type ToolbeltEvent = CoreEvent | ContributedEvent;
export type EventType = ToolbeltEvent["type"];
/** Core's event types; `eventTypes(contributions)` lists the contributed ones too. */
export const EVENT_TYPES = Object.keys(eventSchemas) as Array<keyof typeof eventSchemas>;
export type EventOf<T extends EventType> = Extract<ToolbeltEvent, { type: T }>;
/** What a tool passes to `emit`: the event without the envelope the session adds. */
export type EventInput = ToolbeltEvent extends infer E
  ? E extends ToolbeltEvent
    ? Omit<E, "v" | "seq" | "session" | "at">
    : never
  : never;

const composedEvents = new WeakMap<readonly EventContribution[], z.ZodType>();

function contributedEventSchemas(contributions: readonly EventContribution[]): z.ZodObject[] {
  const owners = new Map<string, string>(EVENT_TYPES.map((t) => [t, "core"]));
  const out: z.ZodObject[] = [];
  for (const contribution of new Set(contributions))
    for (const [type, shape] of Object.entries(contribution.events)) {
      const owner = owners.get(type);
      if (owner !== undefined) throw clash("event", type, owner, contribution.owner);
      owners.set(type, contribution.owner);
      out.push(z.object({ ...base, type: z.literal(type), ...shape }));
    }
  return out;
}

/** One union of core's events and the contributed ones; a type two owners claim is refused (EPLUGIN). */
export function composeEventSchema(contributions: readonly EventContribution[] = []): z.ZodType {
  if (contributions.length === 0) return eventSchema;
  const cached = composedEvents.get(contributions);
  if (cached) return cached;
  const options = [...CORE_EVENTS, ...contributedEventSchemas(contributions)] as [
    z.ZodObject,
    ...z.ZodObject[],
  ];
  const schema = z.discriminatedUnion("type", options);
  composedEvents.set(contributions, schema);
  return schema;
}

/** Every event type: core's and the contributions'. */
export function eventTypes(contributions: readonly EventContribution[] = []): string[] {
  return [...EVENT_TYPES, ...[...new Set(contributions)].flatMap((c) => Object.keys(c.events))];
}

/** The event schema as JSON Schema, for docs and non-TypeScript consumers. */
export function eventJsonSchema(contributions: readonly EventContribution[] = []): Record<string, unknown> {
  return z.toJSONSchema(composeEventSchema(contributions), { unrepresentable: "any" }) as Record<
    string,
    unknown
  >;
}

// A stream built without contributions (a test, a console fixture) cannot know family events: it
// checks core's strictly and any other type's envelope only. Sessions always pass their union.
const looseEvent = z.looseObject({ ...base, type: z.string() });
function looseParse(value: unknown): unknown {
  const type = (value as { type?: unknown }).type;
  return typeof type === "string" && type in eventSchemas
    ? eventSchema.parse(value)
    : looseEvent.parse(value);
}

type Listener = (event: ToolbeltEvent) => void;

/** Who emitted an event, named when the event is refused. */
export interface EventEmitter {
  /** As a message names it, e.g. `plugin wave's tool wave`. */
  who: string;
  /** The plugin's name, for the `defineEvents` hint. */
  plugin?: string;
}

/**
 * A refused event as its emitter's mistake (EPLUGIN): a type nothing declared, named with where to
 * declare it, or fields that do not match the declaration, named field by field — not zod's dump of
 * the whole union. Anything but a zod refusal is passed on as it is.
 */
function refusedEvent(
  input: EventInput,
  error: unknown,
  known: ReadonlySet<string> | undefined,
  emitter: EventEmitter | undefined,
): unknown {
  if (!(error instanceof z.ZodError)) return error;
  const type = (input as { type?: unknown }).type;
  const details = { event_type: type };
  if (typeof type !== "string" || (known !== undefined && !known.has(type))) {
    const [owner, name] =
      typeof type === "string" && type.includes("/")
        ? (type.split("/", 2) as [string, string])
        : [emitter?.plugin ?? "OWNER", typeof type === "string" ? type : "NAME"];
    const what = `the event type ${JSON.stringify(type)}`;
    return new ToolbeltError(
      "EPLUGIN",
      `${emitter ? `${emitter.who} emitted ${what}` : what}, which nothing declares: a plugin declares its events with defineEvents(${JSON.stringify(owner)}, { ${name}: { ...fields } }) in its contributes.events`,
      { cause: error, details },
    );
  }
  return new ToolbeltError(
    "EPLUGIN",
    `${emitter ? `${emitter.who} emitted a` : "a"} ${JSON.stringify(type)} event that does not match its declaration:\n${z.prettifyError(error)}`,
    { cause: error, details },
  );
}

/**
 * Sequenced, validated events: `on(type, fn)` for callbacks and an async iterator that
 * sees every event emitted after it started iterating.
 */
export class EventStream implements AsyncIterable<ToolbeltEvent> {
  #seq = 0;
  #closed = false;
  readonly #listeners = new Set<{ type: EventType | "*"; fn: Listener }>();
  readonly #waiters = new Set<{ queue: ToolbeltEvent[]; wake: (() => void) | undefined }>();

  readonly #parse: (value: unknown) => unknown;
  /** The types this stream knows (all of them when it was built without contributions). */
  readonly #types: ReadonlySet<string> | undefined;

  /** With `contributions`, every event is checked against core's and theirs; unknown types throw. */
  constructor(
    readonly sessionId: string,
    contributions?: readonly EventContribution[],
  ) {
    const schema = contributions ? composeEventSchema(contributions) : undefined;
    this.#parse = schema ? (value) => schema.parse(value) : looseParse;
    this.#types = contributions ? new Set(eventTypes(contributions)) : undefined;
  }

  /** `emitter` names who emitted it (a plugin's tool) when the event is refused (EPLUGIN). */
  emit(input: EventInput, emitter?: () => EventEmitter): ToolbeltEvent {
    const seq = this.#seq++;
    const at = new Date().toISOString();
    let event: ToolbeltEvent;
    try {
      // Object.assign, not a spread followed by the envelope's fields: on Node 20 that literal form
      // costs many times more per event (see benchmarks/startup/RESULTS.md). The envelope still wins.
      event = this.#parse(
        Object.assign({}, input, { v: EVENT_SCHEMA_VERSION, seq, session: this.sessionId, at }),
      ) as ToolbeltEvent;
    } catch (error) {
      throw refusedEvent(input, error, this.#types, emitter?.());
    }
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

  /** Whether anyone would see an event of `type` now (a listener for it or for "*", or an iterator). */
  wants(type: EventType): boolean {
    if (this.#waiters.size > 0) return true;
    for (const listener of this.#listeners) if (listener.type === "*" || listener.type === type) return true;
    return false;
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
