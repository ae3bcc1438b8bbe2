import { readSse } from "./sse.js";
import {
  type AttachRequest,
  type AttachResponse,
  type ClientToolSpec,
  ROUTES,
  type RouteName,
  type RouteParams,
  type RouteTypes,
  routePath,
} from "./wire.js";

/** A tool the client serves: its spec plus the code that runs on the client's machine. */
export type ClientTool = ClientToolSpec & {
  execute: (input: Record<string, unknown>, context: { callId: string; signal: AbortSignal }) => unknown;
};

export type ConnectClientOptions = {
  /** The server's base URL, e.g. `http://127.0.0.1:4000`. */
  url: string;
  token: string;
  /** Session id to attach to; the server's first session when left out. */
  session?: string;
  tools: ClientTool[];
  /** A name shown in approvals and errors. */
  client?: string;
  capabilities?: string[];
  /** How long the server waits for this client's answer to a call. */
  timeoutMs?: number;
  /** Reconnection backoff: first delay and cap (default 250 ms … 10 s). */
  backoff?: { initialMs?: number; maxMs?: number };
  /**
   * Requests this client sends at once, its event stream aside (default 8): the connections it
   * holds to the server stay as few. Posting many results at once queues them here.
   */
  maxConnections?: number;
  /** Called on every connection state change, for logs and tests. */
  onStatus?: (status: ClientStatus) => void;
};

/** Retries of a request the server answered 503 (saturated or stopping), each after its Retry-After. */
const BUSY_RETRIES = 5;
/** The longest Retry-After honoured; a longer one is cut to this. */
const MAX_RETRY_AFTER_MS = 30_000;

/** A 503's Retry-After (seconds or an HTTP date) in milliseconds; undefined when absent or unreadable. */
export function retryAfterMs(header: string | null | undefined, now = Date.now()): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(header) - now;
  if (!Number.isFinite(ms)) return undefined;
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(0, ms));
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export type ClientStatus =
  | { state: "attached"; attachment_id: string; session: string; tools: string[] }
  | { state: "disconnected"; error?: string; retry_in_ms: number }
  | { state: "closed" };

export type BridgeClient = {
  /** Resolves once the first attachment's stream is connected (its tools are offered). */
  readonly ready: Promise<void>;
  readonly attachmentId: string | undefined;
  readonly session: string | undefined;
  /** Changes what the client permits now; a tool left out is unbound at once. */
  setTools(tools: ClientTool[]): Promise<void>;
  /** Detaches: the stream closes and the server unbinds the tools. */
  close(): Promise<void>;
};

type Event = {
  type: string;
  call_id?: string;
  tool?: string;
  input?: unknown;
  result?: { kind?: string; code?: string };
};

/**
 * Attaches to a `toolbelt serve --http` session, offers `tools`, runs the calls the server forwards
 * and posts the results back. A dropped stream re-attaches with backoff until close().
 */
export function connectClient(options: ConnectClientOptions): BridgeClient {
  const base = options.url.replace(/\/+$/, "");
  const headers = { authorization: `Bearer ${options.token}`, "content-type": "application/json" };
  let tools = new Map(options.tools.map((t) => [t.name, t]));
  let closed = false;
  let attachmentId: string | undefined;
  let session = options.session;
  let stream: AbortController | undefined;
  const running = new Map<string, AbortController>();
  // A counting gate over the requests in flight: a freed place goes straight to the next waiter.
  const maxConnections = Math.max(1, options.maxConnections ?? 8);
  let sending = 0;
  const queued: Array<() => void> = [];
  const enter = (): Promise<void> => {
    if (sending < maxConnections) {
      sending++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => queued.push(resolve));
  };
  const leave = () => {
    const next = queued.shift();
    if (next) next();
    else sending--;
  };
  let markReady: () => void = () => {};
  let failReady: (error: Error) => void = () => {};
  const ready = new Promise<void>((resolve, reject) => {
    markReady = resolve;
    failReady = reject;
  });
  ready.catch(() => {});

  const api = async <N extends RouteName>(
    name: N,
    params: RouteParams<N>,
    body?: RouteTypes[N]["body"],
  ): Promise<RouteTypes[N]["response"]> => {
    const { method } = ROUTES[name];
    const path = routePath(name, params);
    let status: number;
    let text: string;
    for (let attempt = 0; ; attempt++) {
      let retryAfter: string | null;
      await enter();
      try {
        const response = await fetch(`${base}${path}`, {
          method,
          headers,
          ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        });
        status = response.status;
        retryAfter = response.headers.get("retry-after");
        text = await response.text();
      } finally {
        leave();
      }
      // A 503 was not acted on (the server is saturated or stopping): the same request is sent again
      // after the wait the server asked for, else with backoff, a bounded number of times.
      if (status !== 503 || attempt >= BUSY_RETRIES || closed) break;
      const wait = retryAfterMs(retryAfter) ?? 250 * 2 ** attempt;
      await sleep(Math.round(wait * (0.75 + Math.random() * 0.5)));
    }
    const json = text ? (JSON.parse(text) as unknown) : undefined;
    if (status < 200 || status > 299) {
      const error = (json as { error?: { code?: string; message?: string } } | undefined)?.error;
      throw Object.assign(new Error(`${method} ${path}: ${status} ${error?.message ?? text}`), {
        status,
        code: error?.code,
      });
    }
    return json as RouteTypes[N]["response"];
  };

  const attachBody = (): AttachRequest => ({
    ...(options.client ? { client: options.client } : {}),
    tools: [...tools.values()].map(({ execute: _e, ...spec }) => spec),
    ...(options.capabilities ? { capabilities: options.capabilities } : {}),
    ...(options.timeoutMs ? { timeout_ms: options.timeoutMs } : {}),
  });

  const runCall = async (event: Event): Promise<void> => {
    const callId = event.call_id;
    const tool = event.tool ? tools.get(event.tool) : undefined;
    // The call came on this attachment's stream; only this attachment may answer it.
    const from = attachmentId;
    if (!callId || !tool || !from || running.has(callId)) return;
    const controller = new AbortController();
    running.set(callId, controller);
    let result: unknown;
    try {
      result = await tool.execute((event.input ?? {}) as Record<string, unknown>, {
        callId,
        signal: controller.signal,
      });
    } catch (error) {
      const e = error as { code?: unknown; message?: unknown };
      result = {
        kind: "error",
        code: typeof e?.code === "string" ? e.code : "EINTERNAL",
        message: typeof e?.message === "string" ? e.message : String(error),
      };
    } finally {
      running.delete(callId);
    }
    if (controller.signal.aborted || !session) return;
    try {
      await api(
        "clientResult",
        { id: session },
        {
          attachment_id: from,
          call_id: callId,
          result: result ?? null,
        },
      );
    } catch {
      // The call already ended on the server (timeout, cancel, disconnect): nothing left to answer.
    }
  };

  const onEvent = (event: Event): void => {
    if (event.type === "client_tool_call") void runCall(event);
    else if (event.type === "client_tool_result" && event.call_id && event.result?.kind === "error") {
      // The server gave up on the call (timeout, cancel): stop the work still running for it.
      running.get(event.call_id)?.abort();
    }
  };

  const connectOnce = async (): Promise<void> => {
    if (!session) {
      const sessions = await api("listSessions", {});
      session = sessions[0]?.id;
      if (!session) throw new Error("the server has no session to attach to");
    }
    const attached: AttachResponse = await api("attach", { id: session }, attachBody());
    attachmentId = attached.attachment_id;
    stream = new AbortController();
    const response = await fetch(
      `${base}${routePath("events", { id: session })}?attachment=${encodeURIComponent(attached.attachment_id)}&since=${attached.last_seq}`,
      {
        headers: { authorization: headers.authorization, accept: "text/event-stream" },
        signal: stream.signal,
      },
    );
    if (!response.ok || !response.body)
      throw Object.assign(new Error(`event stream: HTTP ${response.status}`), {
        status: response.status,
        retryAfterMs: retryAfterMs(response.headers.get("retry-after")),
      });
    options.onStatus?.({
      state: "attached",
      attachment_id: attached.attachment_id,
      session,
      tools: attached.tools,
    });
    markReady();
    for await (const message of readSse(response.body)) {
      try {
        onEvent(JSON.parse(message.data) as Event);
      } catch {
        // A message that is not an event JSON is not for us.
      }
    }
  };

  const loop = async (): Promise<void> => {
    const initial = options.backoff?.initialMs ?? 250;
    const max = options.backoff?.maxMs ?? 10_000;
    let delay = initial;
    while (!closed) {
      let error: string | undefined;
      let asked: number | undefined;
      const started = Date.now();
      try {
        await connectOnce();
      } catch (e) {
        error = (e as Error).message;
        const status = (e as { status?: number }).status;
        asked = (e as { retryAfterMs?: number }).retryAfterMs;
        // A wrong token or a malformed tool list will not fix itself by retrying.
        // A restarted server has new session ids: pick its first session again unless one was named.
        if (status === 404 && !options.session) session = undefined;
        if (status === 400 || status === 401 || status === 409) {
          failReady(e as Error);
          closed = true;
          break;
        }
      }
      for (const controller of running.values()) controller.abort();
      attachmentId = undefined;
      if (closed) break;
      if (Date.now() - started > 5_000) delay = initial;
      // A server that asked for a wait (503 Retry-After) gets at least that.
      const wait = Math.max(asked ?? 0, Math.round(delay * (0.75 + Math.random() * 0.5)));
      options.onStatus?.({ state: "disconnected", ...(error ? { error } : {}), retry_in_ms: wait });
      await new Promise((r) => setTimeout(r, wait));
      delay = Math.min(max, delay * 2);
    }
    options.onStatus?.({ state: "closed" });
  };
  const done = loop();

  return {
    ready,
    get attachmentId() {
      return attachmentId;
    },
    get session() {
      return session;
    },
    async setTools(next: ClientTool[]) {
      tools = new Map(next.map((t) => [t.name, t]));
      if (attachmentId && session)
        await api("updateAttachment", { id: session, attachment_id: attachmentId }, attachBody());
    },
    async close() {
      closed = true;
      stream?.abort();
      await done;
    },
  };
}
