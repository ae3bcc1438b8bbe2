import { randomUUID } from "node:crypto";
import {
  type AnyTool,
  asAnyTool,
  defineTool,
  ERROR_CODES,
  type ErrorCode,
  errorPayload,
  type Payload,
  type Session,
  ToolbeltError,
  type ToolContext,
  z,
} from "@toolbelt/core";
import type { AttachRequest, ClientToolSpec } from "./wire.js";

const TOOL_NAME = /^[a-zA-Z][a-zA-Z0-9_-]{0,63}$/;
const DEFAULT_TIMEOUT_MS = 60_000;
const MAX_TIMEOUT_MS = 30 * 60_000;
/** An attachment whose stream never connects is dropped after this long. */
const DEFAULT_CONNECT_GRACE_MS = 30_000;
/** Attachments one session holds at a time, connected or waiting for their stream. */
export const MAX_ATTACHMENTS = 32;

/** The family of every client-brought tool (config `tools.client.mode` applies to all of them). */
export const CLIENT_FAMILY = "client";

export type Attachment = {
  id: string;
  client: string;
  specs: ClientToolSpec[];
  capabilities: string[];
  timeoutMs: number;
  connected: boolean;
};

type Held = Attachment & {
  grace?: ReturnType<typeof setTimeout>;
  /**
   * What the session knows the tools by. Not the attachment id: that id is what lets a client answer
   * its calls, and the source shows up in every reader's tools_bound events.
   */
  source: string;
};

type PendingCall = {
  attachment: string;
  tool: string;
  settle: (payload: Payload) => void;
};

export type HubOptions = {
  /**
   * The session's client capability list, mutated in place while clients are attached: the session
   * reads it on every bind, so a capability a client brings lasts exactly as long as the client.
   */
  capabilities?: string[];
  connectGraceMs?: number;
};

/**
 * Client-brought tools of one session. A client attaches with tool specs; while its event stream is
 * connected the tools are registered with the session (family `client`, access `interact`, deferrable).
 * Calling one emits `client_tool_call`; the client answers with resolve(); the call returns that payload.
 */
export class ClientToolHub {
  readonly #session: Session;
  readonly #attachments = new Map<string, Held>();
  readonly #calls = new Map<string, PendingCall>();
  readonly #capabilities: string[];
  readonly #baseCapabilities: string[];
  readonly #graceMs: number;
  #sources = 0;

  constructor(session: Session, options: HubOptions = {}) {
    this.#session = session;
    this.#capabilities = options.capabilities ?? [];
    this.#baseCapabilities = [...this.#capabilities];
    this.#graceMs = options.connectGraceMs ?? DEFAULT_CONNECT_GRACE_MS;
  }

  /** Validates and records an attachment; its tools are offered once its stream connects. */
  attach(request: unknown): Attachment {
    const parsed = this.#check(request, undefined);
    if (this.#attachments.size >= MAX_ATTACHMENTS)
      throw new ToolbeltError(
        "ESESSION_CAP",
        `attach: this session holds ${MAX_ATTACHMENTS} attachments already: detach one first`,
      );
    const attachment: Held = {
      id: randomUUID(),
      ...parsed,
      connected: false,
      source: `client:${parsed.client}#${++this.#sources}`,
    };
    attachment.grace = setTimeout(() => {
      if (!attachment.connected) this.#attachments.delete(attachment.id);
    }, this.#graceMs);
    attachment.grace.unref?.();
    this.#attachments.set(attachment.id, attachment);
    return attachment;
  }

  /** Replaces what an attachment currently permits; a tool it drops is unbound at once. */
  update(id: string, request: unknown): Attachment {
    const attachment = this.#get(id);
    Object.assign(attachment, this.#check(request, id));
    if (attachment.connected) this.#publish(attachment);
    return attachment;
  }

  /** The attachment's stream connected: offer its tools. Returns the function to call on disconnect. */
  connect(id: string): () => void {
    const attachment = this.#get(id);
    if (attachment.connected)
      throw new ToolbeltError("ECONFLICT", `attachment ${id} already has a connected stream`);
    if (attachment.grace) clearTimeout(attachment.grace);
    attachment.connected = true;
    this.#publish(attachment);
    return () => this.detach(id);
  }

  /** Unbinds the attachment's tools and fails its calls still waiting for an answer. */
  detach(id: string): void {
    const attachment = this.#attachments.get(id);
    if (!attachment) return;
    this.#attachments.delete(id);
    if (attachment.grace) clearTimeout(attachment.grace);
    for (const [callId, call] of [...this.#calls]) {
      if (call.attachment !== id) continue;
      call.settle(
        errorPayload(
          "EUNAVAILABLE",
          `${call.tool}: client ${attachment.client} disconnected before answering`,
          { tool: call.tool },
        ),
      );
      this.#calls.delete(callId);
    }
    this.#syncCapabilities();
    if (!this.#session.closed) this.#session.unregisterTools(attachment.source);
  }

  /**
   * A client's answer to a call. False when no call with that id is waiting. With `attachmentId`
   * (the HTTP server always passes it), an answer from an attachment other than the one the call
   * was sent to is refused with EDENIED: every client shares the server token, not its calls.
   */
  resolve(callId: string, result: unknown, attachmentId?: string): boolean {
    const call = this.#calls.get(callId);
    if (!call) return false;
    if (attachmentId !== undefined && attachmentId !== call.attachment)
      throw new ToolbeltError(
        "EDENIED",
        `call ${callId} (${call.tool}) was sent to another attachment: only that client may answer it`,
      );
    call.settle(normaliseResult(call.tool, result));
    return true;
  }

  attachments(): Attachment[] {
    return [...this.#attachments.values()].map(({ grace: _g, source: _s, ...a }) => ({ ...a }));
  }

  close(): void {
    for (const id of [...this.#attachments.keys()]) this.detach(id);
  }

  #get(id: string): Held {
    const attachment = this.#attachments.get(id);
    if (!attachment)
      throw new ToolbeltError("ENOENT", `no attachment ${id} (it disconnected or never existed)`);
    return attachment;
  }

  #check(request: unknown, self: string | undefined): Omit<Attachment, "id" | "connected"> {
    const parsed = attachSchema.safeParse(request);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new ToolbeltError(
        "EINVAL_INPUT",
        `attach: ${issue ? `${issue.path.join(".") || "(body)"}: ${issue.message}` : "invalid body"}`,
      );
    }
    const body: AttachRequest = parsed.data;
    // Every name the session knows, under any profile, plus tool_search (bound only when tools are deferred).
    const taken = new Set<string>(["tool_search"]);
    for (const tool of this.#session.granted()) taken.add(tool.name);
    for (const binding of this.#session.bindings()) taken.add(binding.name);
    const own = this.#attachments.get(self ?? "");
    for (const s of own?.specs ?? []) taken.delete(s.name);
    // Attachments whose stream has not connected yet hold their names too.
    for (const a of this.#attachments.values()) if (a.id !== self) for (const s of a.specs) taken.add(s.name);
    const seen = new Set<string>();
    for (const spec of body.tools) {
      if (seen.has(spec.name))
        throw new ToolbeltError("EINVAL_INPUT", `attach: tool ${spec.name} listed twice`);
      seen.add(spec.name);
      if (taken.has(spec.name))
        throw new ToolbeltError("ECONFLICT", `attach: a tool named ${spec.name} is already in this session`);
      compileInput(spec);
    }
    return {
      client: body.client ?? "client",
      specs: body.tools,
      capabilities: body.capabilities ?? [],
      timeoutMs: body.timeout_ms ?? DEFAULT_TIMEOUT_MS,
    };
  }

  #publish(attachment: Held): void {
    this.#syncCapabilities();
    // registerTools re-announces the bound set, which also covers the capabilities just added.
    this.#session.registerTools(
      attachment.source,
      attachment.specs.map((spec) => this.#toolFor(attachment, spec)),
    );
  }

  #syncCapabilities(): void {
    const next = new Set(this.#baseCapabilities);
    for (const a of this.#attachments.values()) if (a.connected) for (const c of a.capabilities) next.add(c);
    this.#capabilities.splice(0, this.#capabilities.length, ...next);
  }

  #toolFor(attachment: Attachment, spec: ClientToolSpec): AnyTool {
    return asAnyTool(
      defineTool({
        name: spec.name,
        family: CLIENT_FAMILY,
        // The client chose to offer the tool, so by default it runs like any interactive tool;
        // `tools.client.mode: "ask"` in config puts every client tool behind an approval.
        access: "interact",
        deferrable: spec.deferrable ?? true,
        description: spec.description,
        input: compileInput(spec),
        // The model sees the client's schema exactly as it was sent; the zod form only validates.
        jsonSchema: { type: "object", ...spec.input_schema },
        execute: (input: unknown, ctx: ToolContext) => this.#dispatch(attachment, spec.name, input, ctx),
      }),
    );
  }

  #dispatch(attachment: Attachment, tool: string, input: unknown, ctx: ToolContext): Promise<Payload> {
    const callId = this.#calls.has(ctx.callId) ? randomUUID() : ctx.callId;
    return new Promise<Payload>((resolve) => {
      let done = false;
      const finish = (payload: Payload) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        ctx.signal.removeEventListener("abort", onAbort);
        this.#calls.delete(callId);
        // The client sees how its call ended, including a timeout or cancellation it should stop on.
        ctx.emit({ type: "client_tool_result", call_id: callId, tool, result: payload });
        resolve(payload);
      };
      const timer = setTimeout(
        () =>
          finish(
            errorPayload(
              "ETIMEOUT",
              `${tool}: client ${attachment.client} did not answer within ${attachment.timeoutMs} ms`,
              { tool, timeout_ms: attachment.timeoutMs },
            ),
          ),
        attachment.timeoutMs,
      );
      const onAbort = () => finish(errorPayload("ECANCELLED", `${tool}: the call was cancelled`, { tool }));
      this.#calls.set(callId, { attachment: attachment.id, tool, settle: finish });
      if (ctx.signal.aborted) return onAbort();
      ctx.signal.addEventListener("abort", onAbort, { once: true });
      ctx.emit({ type: "client_tool_call", call_id: callId, tool, input: input ?? null });
    });
  }
}

const specSchema = z.object({
  name: z.string().regex(TOOL_NAME, "letters, digits, _ and - (max 64), starting with a letter"),
  description: z.string().max(10_000),
  input_schema: z.record(z.string(), z.unknown()),
  deferrable: z.boolean().optional(),
});

/**
 * Client capabilities (`generative_ui`, `ask_user`, ...) as a client declares them, when it opens a
 * session or attaches: what the session binds follows them.
 */
export const capabilitiesSchema = z.array(z.string().min(1).max(100)).max(50);

const attachSchema = z.object({
  client: z.string().max(200).optional(),
  tools: z.array(specSchema).max(200),
  capabilities: capabilitiesSchema.optional(),
  timeout_ms: z.number().int().min(1).max(MAX_TIMEOUT_MS).optional(),
});

const compiled = new WeakMap<ClientToolSpec, z.ZodType>();

/** The client's JSON Schema as a zod schema, so the session validates input before the client sees it. */
function compileInput(spec: ClientToolSpec): z.ZodType {
  const cached = compiled.get(spec);
  if (cached) return cached;
  const schema = spec.input_schema;
  if (schema.type !== undefined && schema.type !== "object")
    throw new ToolbeltError("EINVAL_INPUT", `attach: ${spec.name}.input_schema must be an object schema`);
  let zod: z.ZodType;
  try {
    zod = z.fromJSONSchema({ type: "object", ...schema } as Parameters<typeof z.fromJSONSchema>[0]);
  } catch (error) {
    throw new ToolbeltError(
      "EINVAL_INPUT",
      `attach: ${spec.name}.input_schema is not a JSON Schema toolbelt can use: ${(error as Error).message}`,
    );
  }
  compiled.set(spec, zod);
  return zod;
}

/** Whatever a client POSTs becomes a payload with a kind; an error keeps a code from the stable set. */
export function normaliseResult(tool: string, result: unknown): Payload {
  if (typeof result !== "object" || result === null || Array.isArray(result))
    return { kind: "client_result", tool, value: result ?? null };
  const record = result as Record<string, unknown>;
  if (typeof record.kind !== "string") return { kind: "client_result", tool, ...record };
  if (record.kind !== "error") return record as Payload;
  const code = (ERROR_CODES as readonly string[]).includes(String(record.code))
    ? (record.code as ErrorCode)
    : "EINTERNAL";
  const { kind: _k, code: original, message, ...rest } = record;
  return errorPayload(code, typeof message === "string" ? message : `${tool} failed on the client`, {
    ...rest,
    ...(code !== original && original !== undefined ? { client_code: String(original) } : {}),
  });
}
