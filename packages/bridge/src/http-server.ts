import { AsyncLocalStorage } from "node:async_hooks";
import { randomBytes, randomUUID } from "node:crypto";
import { realpathSync } from "node:fs";
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
import { checkQuestionResponse, type QuestionRequest, type QuestionResponse } from "@toolbelt/ui/contrib";
import { authorised, readJson, requestUrl, sendError, sendJson, unauthorised } from "./http-io.js";
import { ClientToolHub, capabilitiesSchema } from "./hub.js";
import { PendingRequests } from "./pending.js";
import {
  type AttachResponse,
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
 * the console page needs the bearer token (`Authorization: Bearer <token>`, or `?token=` where
 * headers cannot be set, as with EventSource). Errors: {error: {code, message}}.
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
};

export type HttpServer = {
  url: string;
  host: string;
  port: number;
  token: string;
  close(): Promise<void>;
};

export const MAX_SESSIONS = 64;
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
  const sessions = new Map<string, Hosted>();
  let page: Promise<string> | undefined;

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
  await open(root, []);

  const hostedOf = (id: string): Hosted => {
    const hosted = sessions.get(id);
    if (!hosted) throw new HttpError(404, "ENOENT", `no session ${id}`);
    return hosted;
  };
  const lastSeq = (hosted: Hosted): number => hosted.buffer.at(-1)?.seq ?? -1;

  const handlers: Handlers = {
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
      if (sessions.size >= MAX_SESSIONS)
        throw new HttpError(
          409,
          "ESESSION_CAP",
          `this server holds ${MAX_SESSIONS} sessions: close one first`,
        );
      return { status: 201, body: describe(await open(insideRoot(root, wanted), declared.data)) };
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
    const reply = await handler({ req, res, url, params: route.params as RouteParams<RouteName> });
    if (reply) sendJson(res, reply.status ?? route.spec.status, reply.body);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (res.headersSent) {
        res.end();
        return;
      }
      if (error instanceof HttpError) return sendError(res, error);
      const e = normaliseError(error);
      return sendError(res, new HttpError(STATUS_OF[e.code] ?? 500, e.code, e.message));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shownHost = host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${address.port}`,
    host,
    port: address.port,
    token,
    async close() {
      for (const hosted of sessions.values()) await hosted.session.close();
      sessions.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
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
