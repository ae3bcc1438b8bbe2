import { AsyncLocalStorage } from "node:async_hooks";
import { randomBytes, randomUUID } from "node:crypto";
import { readFileSync, realpathSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import {
  type ClientInfo,
  definePlugin,
  normaliseError,
  type Plugin,
  type Session,
  ToolbeltError,
  type ToolbeltEvent,
} from "@toolbelt/core";
import { SERVER_DEFAULTS } from "@toolbelt/core/internal";
import { checkQuestionResponse, type QuestionRequest, type QuestionResponse } from "@toolbelt/ui/contrib";
import { authorised, readJson, requestUrl, sendError, sendJson, unauthorised } from "./http-io.js";
import { ClientToolHub, capabilitiesSchema } from "./hub.js";
import { PendingRequests } from "./pending.js";
import {
  type AttachResponse,
  type HealthResponse,
  HttpError,
  type LateAnswerMessage,
  matchRoute,
  noRoute,
  type RouteName,
  type RouteParams,
  type RouteTypes,
  type SessionInfo,
} from "./wire.js";

/*
 * `toolbelt serve --http`: sessions over HTTP, their events as Server-Sent Events, client-brought
 * tools, and approvals/questions answered by POST. The routes are ROUTES in wire.ts; every one but
 * the console page and the health probe needs the bearer token (`Authorization: Bearer <token>`, or
 * `?token=` where headers cannot be set, as with EventSource). Errors: {error: {code, message}}.
 *
 * Under load nothing is dropped silently: the listen queue is as long as the kernel allows, requests
 * beyond `maxRequests` are answered 503 EBUSY with Retry-After, sessions beyond `maxSessions` 409,
 * and idle sessions close. A stop lets running calls finish (up to a bound) before it closes.
 */

/** How the server opens a session: the host composes the families (toolbelt passes createToolbelt). */
export type OpenSession = (options: {
  root: string;
  plugins: Plugin[];
  client: ClientInfo;
}) => Promise<Session>;

/**
 * The question store of the family that asks (ui's ask_user_question): questions an earlier server
 * left open still take answers, and late answers are handed over once. Passed in, since a family
 * does not import another.
 */
export type QuestionStore = {
  /** `status` `timed_out`: the call stopped waiting (or an earlier server asked); an answer is a late one. */
  pending(
    session: Session,
  ): Array<Pick<QuestionRequest, "question_id" | "questions"> & { status?: "waiting" | "timed_out" }>;
  answer(
    session: Session,
    questionId: string,
    response: QuestionResponse,
  ): { kind: string; message?: unknown };
  takeLate(session: Session): LateAnswerMessage[];
};

export type HttpServeOptions = {
  root: string;
  openSession: OpenSession;
  questions: QuestionStore;
  /** The bearer token; a random one when absent. */
  token?: string;
  host?: string;
  port?: number;
  /** Interval of SSE keep-alive comments (default 15 s). */
  keepAliveMs?: number;
  /** Events kept per session for replay (default 5000). */
  bufferSize?: number;
  /** An approval nobody answers is denied after this long (default 10 min). */
  approvalTimeoutMs?: number;
  /** The page served at `/` (the console); a plain note when absent or failing. */
  page?: () => Promise<string>;
  /** Sessions held at once, the server's own included (default 64): one more is 409 ESESSION_CAP. */
  maxSessions?: number;
  /**
   * A session with no call running, no event stream open and no request naming it for this long is
   * closed, its processes reaped (default 30 min; 0: never). The server's own session never expires.
   */
  sessionIdleMs?: number;
  /** API requests handled at once, event streams aside (default 4096): one more is 503 EBUSY. */
  maxRequests?: number;
  /** How long close() lets running requests finish before it closes the sessions (default 20 s). */
  stopGraceMs?: number;
};

export type HttpServer = {
  url: string;
  host: string;
  port: number;
  token: string;
  /**
   * Stops: new connections are refused and new requests answered 503 EBUSY (`/api/health` says
   * `stopping`); running requests get `graceMs` (default: the server's stopGraceMs) to finish; then
   * every session closes — its processes reaped, its open questions kept for the next start — and
   * calls still running are cancelled. Called again during a stop with `graceMs: 0`, it stops waiting.
   */
  close(options?: { graceMs?: number }): Promise<void>;
};

/** The default bound on sessions (HttpServeOptions.maxSessions). */
export const MAX_SESSIONS = SERVER_DEFAULTS.max_sessions;
/** How long a stop waits, once the sessions are closed, for the cancelled calls' answers to go out. */
const FINAL_ANSWERS_MS = 2000;
/** What a 503 asks a client to wait, in seconds. */
const RETRY_AFTER_SECONDS = 1;
/** The replay buffer also holds at most this many bytes of event JSON (a tool_result repeats its result). */
const MAX_BUFFER_BYTES = 32 * 1024 * 1024;

/**
 * The abort signal of the HTTP call being run: an approval that call asks for is withdrawn when the
 * caller hangs up. The session's approver gets no signal, and the call's async context is the link.
 */
const callerSignal = new AsyncLocalStorage<AbortSignal>();

const BYTES = Symbol("bytes");

type Hosted = {
  session: Session;
  buffer: Array<ToolbeltEvent & { [BYTES]?: number }>;
  streams: Set<ServerResponse>;
  hub: ClientToolHub;
  pending: PendingRequests;
  calls: Map<string, AbortController>;
  /** Requests naming the session being handled now, and when the last one began or ended. */
  active: number;
  lastActive: number;
};

const STATUS_OF: Record<string, number> = {
  EINVAL_INPUT: 400,
  EDENIED: 403,
  ETOO_LARGE: 413,
  ESESSION_CAP: 409,
  ENOENT: 404,
  EPATH_ESCAPE: 400,
  ECONFLICT: 409,
  EINVAL_CONFIG: 400,
  EPLUGIN: 400,
  EBUSY: 503,
};

/** What a handler answers: a status and JSON body, or `undefined` when it wrote the response itself. */
type Reply<N extends RouteName> = { status?: number; body: RouteTypes[N]["response"] } | undefined;

type Request<N extends RouteName> = {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  params: RouteParams<N>;
};

/** One handler per route: a route added to ROUTES without one does not compile. */
type Handlers = { [N in RouteName]: (request: Request<N>) => Promise<Reply<N>> };

export async function startHttpServer(options: HttpServeOptions): Promise<HttpServer> {
  const root = realpathSync(path.resolve(options.root));
  const token = options.token ?? randomBytes(24).toString("base64url");
  const host = options.host ?? "127.0.0.1";
  const keepAliveMs = options.keepAliveMs ?? 15_000;
  const bufferSize = options.bufferSize ?? 5000;
  const questions = options.questions;
  const maxSessions = options.maxSessions ?? SERVER_DEFAULTS.max_sessions;
  const maxRequests = options.maxRequests ?? SERVER_DEFAULTS.max_requests;
  const idleMs = options.sessionIdleMs ?? SERVER_DEFAULTS.session_idle_seconds * 1000;
  const stopGraceMs = options.stopGraceMs ?? SERVER_DEFAULTS.stop_grace_seconds * 1000;
  const sessions = new Map<string, Hosted>();
  let page: Promise<string> | undefined;
  /** API requests being handled (event streams and health probes aside). */
  let inFlight = 0;
  /** Set once close() is called. */
  let stopping: Promise<void> | undefined;
  /** Resolved whenever no request is in flight (close() waits on them). */
  const quietWaiters = new Set<() => void>();

  /**
   * `declared`: the capabilities of the client that opened the session. A session binds
   * `ask_user_question` and `present_ui` only while some client says it can answer or draw (here, or
   * an attachment such as the console's), never because it is served over HTTP.
   */
  const open = async (sessionRoot: string, declared: readonly string[]): Promise<Hosted> => {
    const capabilities = [...new Set(declared)];
    const pending = new PendingRequests(
      options.approvalTimeoutMs !== undefined ? { approvalTimeoutMs: options.approvalTimeoutMs } : {},
    );
    const buffer: Hosted["buffer"] = [];
    let bufferBytes = 0;
    const streams = new Set<ServerResponse>();
    let mainSession: Session | undefined;
    // A plugin's setup runs before the session announces its first bound set, so the buffer
    // holds every event of the session from seq 0.
    const recorder = definePlugin({
      name: "http-event-buffer",
      setup(session) {
        if (mainSession || !session.isRoot) return;
        mainSession = session;
        session.on("*", (event) => {
          const data = JSON.stringify(event);
          buffer.push({ ...event, [BYTES]: data.length });
          bufferBytes += data.length;
          let drop = Math.max(0, buffer.length - bufferSize);
          while (bufferBytes > MAX_BUFFER_BYTES && drop < buffer.length - 1) drop++;
          for (const gone of buffer.splice(0, drop)) bufferBytes -= gone[BYTES] ?? 0;
          for (const res of streams) writeData(res, event.seq, data);
        });
      },
    });
    const session = await options.openSession({
      root: sessionRoot,
      plugins: [recorder],
      client: {
        name: "http",
        capabilities,
        approve: (prompt) => pending.approve(prompt, callerSignal.getStore()),
        ask: (request, signal) => pending.ask(request, signal),
      },
    });
    const hosted: Hosted = {
      session,
      buffer,
      streams,
      hub: new ClientToolHub(session, { capabilities }),
      pending,
      calls: new Map(),
      active: 0,
      lastActive: Date.now(),
    };
    session.onClose(() => {
      hosted.hub.close();
      pending.close();
      for (const res of streams) res.end();
    });
    sessions.set(session.id, hosted);
    return hosted;
  };

  // The server's own session: no client has declared anything yet (the console attaches with its own).
  const main = await open(root, []);

  const hostedOf = (id: string): Hosted => {
    const hosted = sessions.get(id);
    if (!hosted) throw new HttpError(404, "ENOENT", `no session ${id}`);
    return hosted;
  };
  const lastSeq = (hosted: Hosted): number => hosted.buffer.at(-1)?.seq ?? -1;

  const handlers: Handlers = {
    async health({ req, url }) {
      const serving = stopping === undefined;
      const body: HealthResponse = { ok: serving, status: serving ? "serving" : "stopping" };
      // A probe without credentials learns only that the server is up; a wrong token is still a 401.
      const credentials = req.headers.authorization !== undefined || url.searchParams.has("token");
      if (credentials && !authorised(req, url, token)) throw unauthorised();
      if (credentials) {
        const processes = main.session.processPool.usage();
        let running = 0;
        for (const hosted of sessions.values()) running += hosted.calls.size;
        body.sessions = { open: sessions.size, max: maxSessions, idle_seconds: Math.round(idleMs / 1000) };
        body.requests = { in_flight: inFlight, max: maxRequests };
        body.calls = { running, queued: processes.queued + processes.long_lived.queued };
        body.processes = processes;
      }
      return { status: serving ? 200 : 503, body };
    },
    async console({ res }) {
      // The console page is static and holds no session data; it reads the token from `#token=`,
      // which browsers never send, and every API request it makes carries the token.
      page ??= loadPage(options.page);
      res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" });
      res.end(await page);
      return undefined;
    },
    async listSessions() {
      return { body: [...sessions.values()].map(describe) };
    },
    async openSession({ req }) {
      const body = (await readJson(req)) as { root?: unknown; capabilities?: unknown } | undefined;
      const wanted = body?.root === undefined ? root : body.root;
      if (typeof wanted !== "string") throw new HttpError(400, "EINVAL_INPUT", "root must be a string");
      const declared = capabilitiesSchema.safeParse(body?.capabilities ?? []);
      if (!declared.success)
        throw new HttpError(
          400,
          "EINVAL_INPUT",
          "capabilities must be a list of at most 50 names such as generative_ui or ask_user",
        );
      if (sessions.size >= maxSessions)
        throw new HttpError(
          409,
          "ESESSION_CAP",
          `this server holds ${maxSessions} sessions, its bound (server.max_sessions): close one first`,
        );
      const hosted = await open(insideRoot(root, wanted), declared.data);
      if (stopping) {
        // The server began to stop while the session opened: it does not outlive the stop.
        sessions.delete(hosted.session.id);
        await hosted.session.close();
        throw stoppingError();
      }
      return { status: 201, body: describe(hosted) };
    },
    async closeSession({ params }) {
      const { session } = hostedOf(params.id);
      sessions.delete(session.id);
      await session.close();
      return { body: { closed: session.id } };
    },
    async tools({ params }) {
      return { body: hostedOf(params.id).session.bind() };
    },
    async events({ params, req, res, url }) {
      openStream(hostedOf(params.id), req, res, url, keepAliveMs);
      return undefined;
    },
    async call({ params, req, res }) {
      const hosted = hostedOf(params.id);
      const body = (await readJson(req)) as { tool?: unknown; input?: unknown; call_id?: unknown };
      if (typeof body?.tool !== "string")
        throw new HttpError(400, "EINVAL_INPUT", "calls need {tool, input}");
      const callId = typeof body.call_id === "string" ? body.call_id : randomUUID();
      if (hosted.calls.has(callId))
        throw new HttpError(409, "ECONFLICT", `call ${callId} is already running`);
      const controller = new AbortController();
      hosted.calls.set(callId, controller);
      // A caller that hangs up no longer wants the answer: the call is cancelled, and an approval
      // it waits for is withdrawn (denied, with the reason in approval_resolved).
      res.on("close", () => {
        if (!res.writableFinished)
          controller.abort(new ToolbeltError("ECANCELLED", "the HTTP caller disconnected"));
      });
      try {
        const tool = body.tool;
        const { payload, text } = await callerSignal.run(controller.signal, () =>
          hosted.session.callWithText(tool, body.input ?? {}, { callId, signal: controller.signal }),
        );
        return { body: { call_id: callId, result: payload, text } };
      } finally {
        hosted.calls.delete(callId);
      }
    },
    async cancelCall({ params }) {
      const controller = hostedOf(params.id).calls.get(params.call_id);
      controller?.abort(new ToolbeltError("ECANCELLED", "the call was cancelled over HTTP"));
      return { status: controller ? 200 : 404, body: { cancelled: !!controller } };
    },
    async attach({ params, req }) {
      const hosted = hostedOf(params.id);
      const attachment = hosted.hub.attach(await readJson(req));
      const answer: AttachResponse = {
        attachment_id: attachment.id,
        last_seq: lastSeq(hosted),
        tools: attachment.specs.map((s) => s.name),
      };
      return { status: 201, body: answer };
    },
    async updateAttachment({ params, req }) {
      const hosted = hostedOf(params.id);
      const attachment = hosted.hub.update(params.attachment_id, await readJson(req));
      return {
        body: {
          attachment_id: attachment.id,
          last_seq: lastSeq(hosted),
          tools: attachment.specs.map((s) => s.name),
        },
      };
    },
    async detach({ params }) {
      hostedOf(params.id).hub.detach(params.attachment_id);
      return { body: { detached: true } };
    },
    async clientResult({ params, req }) {
      const hosted = hostedOf(params.id);
      const body = (await readJson(req)) as { attachment_id?: unknown; call_id?: unknown; result?: unknown };
      if (typeof body?.call_id !== "string" || typeof body.attachment_id !== "string")
        throw new HttpError(
          400,
          "EINVAL_INPUT",
          "client-results need {attachment_id, call_id, result}: the attachment the call was sent to",
        );
      if (!hosted.hub.resolve(body.call_id, body.result, body.attachment_id))
        throw new HttpError(
          404,
          "ENOENT",
          `no call ${body.call_id} is waiting (it ended: timeout, cancel or answered)`,
        );
      return { body: { ok: true } };
    },
    async pending({ params }) {
      const hosted = hostedOf(params.id);
      const listing = hosted.pending.list();
      // Questions an earlier server left open have no waiting call here, but still take answers.
      const waiting = new Set(listing.questions.map((q) => q.question_id));
      for (const left of questions.pending(hosted.session))
        if (!waiting.has(left.question_id))
          listing.questions.push({ question_id: left.question_id, questions: left.questions });
      return { body: listing };
    },
    async message({ params, req }) {
      const { session } = hostedOf(params.id);
      const body = (await readJson(req)) as { text?: unknown };
      if (typeof body?.text !== "string")
        throw new HttpError(400, "EINVAL_INPUT", "messages need {text: string}");
      const before = questions.pending(session).map((q) => q.question_id);
      session.userMessage(body.text);
      const left = new Set(questions.pending(session).map((q) => q.question_id));
      return { body: { superseded: before.filter((q) => !left.has(q)) } };
    },
    async lateAnswers({ params }) {
      return { body: { answers: questions.takeLate(hostedOf(params.id).session) } };
    },
    async approve({ params, req }) {
      const hosted = hostedOf(params.id);
      const body = (await readJson(req)) as { approved?: unknown };
      if (typeof body?.approved !== "boolean")
        throw new HttpError(400, "EINVAL_INPUT", "approvals need {approved: boolean}");
      if (!hosted.pending.answerApproval(params.request_id, body.approved))
        throw new HttpError(404, "ENOENT", `no approval ${params.request_id} is waiting`);
      return { body: { ok: true } };
    },
    async answer({ params, req }) {
      const hosted = hostedOf(params.id);
      const questionId = params.question_id;
      const waiting = hosted.pending.list().questions.find((q) => q.question_id === questionId);
      if (!waiting) {
        // Left open by an earlier server: no call waits, so the answer is queued as a late answer.
        const restored = questions.pending(hosted.session).some((q) => q.question_id === questionId);
        if (!restored) throw new HttpError(404, "ENOENT", `no question ${questionId} is waiting`);
        const result = questions.answer(
          hosted.session,
          questionId,
          (await readJson(req)) as QuestionResponse,
        );
        if (result.kind === "error") throw new HttpError(400, "EINVAL_INPUT", String(result.message));
        return { body: { ok: true, late: true } };
      }
      // Checked in full before the waiting call sees it: a refused answer leaves the question open.
      const checked = checkQuestionResponse(waiting, await readJson(req));
      if (typeof checked === "string") throw new HttpError(400, "EINVAL_INPUT", checked);
      // A question whose call already returned (timed out) still has its prompt here; its answer is late.
      const late = questions
        .pending(hosted.session)
        .some((q) => q.question_id === questionId && q.status === "timed_out");
      hosted.pending.answerQuestion(questionId, checked);
      return { body: late ? { ok: true, late: true } : { ok: true } };
    },
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = requestUrl(req);
    const method = req.method ?? "GET";
    const route = matchRoute(method, url.pathname);
    if (route?.spec.auth !== false && !authorised(req, url, token)) throw unauthorised();
    if (!route) throw noRoute(method, url.pathname, (id) => sessions.has(id));
    const handler = handlers[route.name] as (request: Request<RouteName>) => Promise<Reply<RouteName>>;
    const request = { req, res, url, params: route.params as RouteParams<RouteName> };
    // The probe answers whatever the load; an event stream lasts as long as its reader.
    if (route.name === "health") return answer(res, route.spec.status, await handler(request));
    if (stopping) throw stoppingError();
    if (route.name === "events") return answer(res, route.spec.status, await handler(request));
    if (inFlight >= maxRequests)
      throw new HttpError(
        503,
        "EBUSY",
        `the server is handling ${inFlight} requests, its bound (server.max_requests): retry after ${RETRY_AFTER_SECONDS} s`,
      );
    inFlight++;
    const named = "id" in request.params ? sessions.get(request.params.id as string) : undefined;
    if (named) {
      named.active++;
      named.lastActive = Date.now();
    }
    try {
      answer(res, route.spec.status, await handler(request));
    } finally {
      if (named) {
        named.active--;
        named.lastActive = Date.now();
      }
      if (--inFlight === 0) for (const wake of [...quietWaiters]) wake();
    }
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (res.headersSent) {
        res.end();
        return;
      }
      const e = error instanceof HttpError ? error : normaliseError(error);
      const failure = e instanceof HttpError ? e : new HttpError(STATUS_OF[e.code] ?? 500, e.code, e.message);
      if (failure.status === 503) res.setHeader("retry-after", String(RETRY_AFTER_SECONDS));
      // The body a refused request still sends is read first: a socket closed with unread input
      // would reset the connection and could take the answer with it.
      if (req.complete) return sendError(res, failure);
      req.resume();
      req.once("end", () => sendError(res, failure));
      req.once("error", () => res.destroy());
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ port: options.port ?? 0, host, backlog: listenBacklog() }, () => resolve());
  });
  // Sessions nobody uses close; checked often enough that one lingers at most half its idle time more.
  const sweeper =
    idleMs > 0
      ? setInterval(
          () => {
            const now = Date.now();
            for (const hosted of [...sessions.values()]) {
              if (hosted === main || hosted.active > 0 || hosted.calls.size > 0 || hosted.streams.size > 0)
                continue;
              if (now - hosted.lastActive < idleMs) continue;
              // Closing reaps its processes; its open questions stay saved, answerable as late answers.
              sessions.delete(hosted.session.id);
              void hosted.session.close();
            }
          },
          Math.max(250, Math.min(idleMs / 2, 60_000)),
        )
      : undefined;
  sweeper?.unref();

  /** Resolves once no request is in flight, or after `ms` (or when cut short). */
  let cutWait: () => void = () => {};
  const quiet = (ms: number): Promise<void> =>
    new Promise<void>((resolve) => {
      if (inFlight === 0 || ms <= 0) return resolve();
      const done = () => {
        clearTimeout(timer);
        quietWaiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      quietWaiters.add(done);
      cutWait = done;
    });

  const stop = async (graceMs: number): Promise<void> => {
    if (sweeper) clearInterval(sweeper);
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    await quiet(graceMs);
    // Every session closes: its processes are reaped and its open questions stay saved (the
    // question store keeps them across restarts), answerable as late answers after the next start.
    const all = [...sessions.values()];
    sessions.clear();
    await Promise.all(all.map((hosted) => hosted.session.close()));
    // A tool that did not end with its session is cancelled; its caller gets that answer.
    for (const hosted of all)
      for (const controller of hosted.calls.values())
        controller.abort(new ToolbeltError("ECANCELLED", "the server stopped before the call finished"));
    await quiet(FINAL_ANSWERS_MS);
    server.closeAllConnections();
    await closed;
  };
  const address = server.address() as AddressInfo;
  const shownHost = host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${address.port}`,
    host,
    port: address.port,
    token,
    close(closeOptions = {}) {
      if (stopping) {
        if (closeOptions.graceMs === 0) cutWait();
        return stopping;
      }
      stopping = stop(closeOptions.graceMs ?? stopGraceMs);
      return stopping;
    },
  };

  function describe(hosted: Hosted): SessionInfo {
    return { id: hosted.session.id, root: hosted.session.root };
  }
}

function openStream(
  hosted: Hosted,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  keepAliveMs: number,
): void {
  const attachment = url.searchParams.get("attachment");
  // Connect the attachment first: a wrong id is a 404 before any stream starts.
  const detach = attachment ? hosted.hub.connect(attachment) : undefined;
  const after = Number(req.headers["last-event-id"] ?? url.searchParams.get("since") ?? Number.NaN);
  res.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-store",
    connection: "keep-alive",
    "x-accel-buffering": "no",
  });
  res.write(": toolbelt event stream\nretry: 1000\n\n");
  for (const event of hosted.buffer)
    if (!(event.seq <= after)) writeData(res, event.seq, JSON.stringify(event));
  // A reader that vanished mid-write must not take the server down; 'close' cleans up after it.
  res.on("error", () => {});
  hosted.streams.add(res);
  const timer = setInterval(() => res.write(": keep-alive\n\n"), keepAliveMs);
  timer.unref();
  res.on("close", () => {
    clearInterval(timer);
    hosted.streams.delete(res);
    detach?.();
  });
  if (hosted.session.closed) res.end();
}

/** Writes a handler's reply (a handler that answered itself returns nothing). */
function answer<N extends RouteName>(res: ServerResponse, status: number, reply: Reply<N>): void {
  if (reply) sendJson(res, reply.status ?? status, reply.body);
}

function stoppingError(): HttpError {
  return new HttpError(
    503,
    "EBUSY",
    "the server is stopping: retry against another instance or after its restart",
  );
}

/** The longest listen queue the kernel grants (Linux); elsewhere Node's default. */
function listenBacklog(): number {
  try {
    const n = Number.parseInt(readFileSync("/proc/sys/net/core/somaxconn", "latin1"), 10);
    if (Number.isInteger(n) && n > 0) return n;
  } catch {
    // Not Linux, or /proc is not mounted.
  }
  return 511;
}

function writeData(res: ServerResponse, seq: number, data: string): void {
  res.write(`id: ${seq}\ndata: ${data}\n\n`);
}

function insideRoot(root: string, wanted: string): string {
  let resolved: string;
  try {
    resolved = realpathSync(path.resolve(root, wanted));
  } catch {
    throw new HttpError(404, "ENOENT", `no directory ${wanted}`);
  }
  const rel = path.relative(root, resolved);
  if (rel.startsWith("..") || path.isAbsolute(rel))
    throw new HttpError(400, "EPATH_ESCAPE", `${wanted} is outside the server's root ${root}`);
  return resolved;
}

/** The host's page (the console) when it loads; a plain note otherwise. */
async function loadPage(page: (() => Promise<string>) | undefined): Promise<string> {
  try {
    if (page) return await page();
  } catch {
    // Not installed or not built: fall through to the note.
  }
  return [
    "<!doctype html>",
    '<html lang="en"><head><meta charset="utf-8"><title>toolbelt</title></head>',
    "<body><h1>toolbelt serve --http</h1>",
    "<p>The console (@toolbelt/console) is not installed here. The API is at <code>/api/sessions</code>;",
    "its events stream at <code>/api/sessions/:id/events</code>.</p></body></html>",
  ].join("\n");
}
