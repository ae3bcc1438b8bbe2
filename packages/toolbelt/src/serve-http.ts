import { AsyncLocalStorage } from "node:async_hooks";
import { randomBytes, randomUUID, timingSafeEqual } from "node:crypto";
import { realpathSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import {
  type AttachResponse,
  ClientToolHub,
  checkQuestionResponse,
  type LateAnswersResponse,
  PendingRequests,
  type UserMessageResponse,
} from "@toolbelt/bridge";
import {
  definePlugin,
  normaliseError,
  type Session,
  ToolbeltError,
  type ToolbeltEvent,
} from "@toolbelt/core";
import { answerQuestion, pendingQuestions, takeLateAnswers } from "@toolbelt/ui";
import type { QuestionResponse } from "@toolbelt/ui/contrib";
import { createToolbelt, type ToolbeltOptions } from "./create.js";
import { MAX_JSON_DEPTH, nestsDeeperThan } from "./json-depth.js";

/*
 * `toolbelt serve --http`: sessions over HTTP, their events as Server-Sent Events, client-brought
 * tools, and approvals/questions answered by POST. Every request needs the bearer token
 * (`Authorization: Bearer <token>`, or `?token=` where headers cannot be set, as with EventSource).
 *
 *   GET    /                                       the console page (text/html; no token needed:
 *                                                  it is static and reads `#token=` itself)
 *   GET    /api/sessions                           [{id, root}]
 *   POST   /api/sessions {root?}                   {id, root}   (root inside the server's --root)
 *   DELETE /api/sessions/:id                       closes a session
 *   GET    /api/sessions/:id/tools                 {tools, deferred} as session.bind() returns them
 *   GET    /api/sessions/:id/events                SSE: `id: <seq>` + `data: <event JSON>`; replays the
 *                                                  buffer after Last-Event-ID or ?since=<seq>;
 *                                                  ?attachment=<id> keeps that attachment alive
 *   POST   /api/sessions/:id/calls {tool, input, call_id?}        {result, text}
 *   POST   /api/sessions/:id/calls/:call_id/cancel                {cancelled}
 *   POST   /api/sessions/:id/attach {client?, tools, capabilities?, timeout_ms?}
 *                                                  {attachment_id, last_seq, tools}
 *   PUT    /api/sessions/:id/attach/:attachment_id  same body: what the client permits now
 *   DELETE /api/sessions/:id/attach/:attachment_id  detaches
 *   POST   /api/sessions/:id/client-results {attachment_id, call_id, result}   {ok: true}
 *                                                  (403 from any attachment but the one asked)
 *   GET    /api/sessions/:id/pending               {questions, approvals}
 *   POST   /api/sessions/:id/approvals/:request_id {approved}
 *   POST   /api/sessions/:id/questions/:question_id {answers: [{options?, text?}], notes?}
 *                                                  (also a question left open by an earlier server)
 *   POST   /api/sessions/:id/messages {text}       {superseded}: a new user message closes open questions
 *   POST   /api/sessions/:id/late-answers          {answers}: takes the late answers, each once
 * Errors: {error: {code, message}} with 400/401/403/404/409/413/500.
 */

export type HttpServeOptions = {
  root: string;
  /** The bearer token; a random one when absent. */
  token?: string;
  host?: string;
  port?: number;
  /** What every session is created with besides its root and client. */
  session?: Omit<ToolbeltOptions, "root" | "client">;
  /** Interval of SSE keep-alive comments (default 15 s). */
  keepAliveMs?: number;
  /** Events kept per session for replay (default 5000). */
  bufferSize?: number;
  /** An approval nobody answers is denied after this long (default 10 min). */
  approvalTimeoutMs?: number;
};

export type HttpServer = {
  url: string;
  host: string;
  port: number;
  token: string;
  close(): Promise<void>;
};

/** The capabilities an HTTP session's client has: its console answers questions and draws UI. */
const HTTP_CAPABILITIES = ["ask_user", "generative_ui"];
const MAX_BODY_BYTES = 4 * 1024 * 1024;
const MAX_SESSIONS = 64;
/** The replay buffer also holds at most this many bytes of event JSON (a tool_result repeats its result). */
const MAX_BUFFER_BYTES = 32 * 1024 * 1024;

/**
 * The abort signal of the HTTP call being run: an approval that call asks for is withdrawn when the
 * caller hangs up. The session's approver gets no signal, and the call's async context is the link.
 */
const callerSignal = new AsyncLocalStorage<AbortSignal>();

type Hosted = {
  session: Session;
  buffer: Array<ToolbeltEvent & { [BYTES]?: number }>;
  streams: Set<ServerResponse>;
  hub: ClientToolHub;
  pending: PendingRequests;
  calls: Map<string, AbortController>;
};

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const BYTES = Symbol("bytes");

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

export async function startHttpServer(options: HttpServeOptions): Promise<HttpServer> {
  const root = realpathSync(path.resolve(options.root));
  const token = options.token ?? randomBytes(24).toString("base64url");
  const host = options.host ?? "127.0.0.1";
  const keepAliveMs = options.keepAliveMs ?? 15_000;
  const bufferSize = options.bufferSize ?? 5000;
  const sessions = new Map<string, Hosted>();
  let consoleHtml: Promise<string> | undefined;

  const open = async (sessionRoot: string): Promise<Hosted> => {
    const capabilities = [...HTTP_CAPABILITIES];
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
    const session = await createToolbelt({
      ...options.session,
      root: sessionRoot,
      plugins: [...(options.session?.plugins ?? []), recorder],
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

  await open(root);

  const hostedOf = (id: string | undefined): Hosted => {
    const hosted = id ? sessions.get(decodePart(id)) : undefined;
    if (!hosted) throw new HttpError(404, "ENOENT", `no session ${id ?? ""}`);
    return hosted;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    let url: URL;
    try {
      url = new URL(req.url ?? "/", "http://localhost");
    } catch {
      throw new HttpError(400, "EINVAL_INPUT", "the request target is not a URL path");
    }
    const method = req.method ?? "GET";
    const parts = url.pathname.split("/").filter(Boolean);
    // The console page is static and holds no session data; it reads the token from `#token=`,
    // which browsers never send, and every API request it makes carries the token.
    if (method === "GET" && parts.length === 0) {
      consoleHtml ??= loadConsolePage();
      res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" });
      res.end(await consoleHtml);
      return;
    }
    if (!authorised(req, url, token)) {
      res.setHeader("www-authenticate", 'Bearer realm="toolbelt"');
      throw new HttpError(
        401,
        "EDENIED",
        "missing or wrong token: send Authorization: Bearer <token> or ?token=",
      );
    }
    if (parts[0] !== "api" || parts[1] !== "sessions")
      throw new HttpError(404, "ENOENT", `no route ${url.pathname}`);
    const [, , id, sub, arg, extra] = parts;
    const route = `${method} ${[sub ?? "", arg === undefined ? "" : ":arg", extra ?? ""].filter(Boolean).join("/")}`;

    if (id === undefined) {
      if (method === "GET") return sendJson(res, 200, [...sessions.values()].map(describe));
      if (method === "POST") {
        const body = (await readJson(req)) as { root?: unknown } | undefined;
        const wanted = body?.root === undefined ? root : body.root;
        if (typeof wanted !== "string") throw new HttpError(400, "EINVAL_INPUT", "root must be a string");
        if (sessions.size >= MAX_SESSIONS)
          throw new HttpError(
            409,
            "ESESSION_CAP",
            `this server holds ${MAX_SESSIONS} sessions: close one first`,
          );
        const hosted = await open(insideRoot(root, wanted));
        return sendJson(res, 201, describe(hosted));
      }
      throw new HttpError(405, "EINVAL_INPUT", `${method} /api/sessions is not supported`);
    }

    const hosted = hostedOf(id);
    const { session } = hosted;
    switch (route) {
      case "DELETE ": {
        sessions.delete(session.id);
        await session.close();
        return sendJson(res, 200, { closed: session.id });
      }
      case "GET tools":
        return sendJson(res, 200, session.bind());
      case "GET events":
        return openStream(hosted, req, res, url, keepAliveMs);
      case "POST calls": {
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
        const onClose = () => {
          if (!res.writableFinished)
            controller.abort(new ToolbeltError("ECANCELLED", "the HTTP caller disconnected"));
        };
        res.on("close", onClose);
        try {
          const tool = body.tool;
          const { payload, text } = await callerSignal.run(controller.signal, () =>
            session.callWithText(tool, body.input ?? {}, { callId, signal: controller.signal }),
          );
          return sendJson(res, 200, { call_id: callId, result: payload, text });
        } finally {
          hosted.calls.delete(callId);
        }
      }
      case "POST calls/:arg/cancel": {
        const controller = hosted.calls.get(decodePart(arg));
        controller?.abort(new ToolbeltError("ECANCELLED", "the call was cancelled over HTTP"));
        return sendJson(res, controller ? 200 : 404, { cancelled: !!controller });
      }
      case "POST attach": {
        const attachment = hosted.hub.attach(await readJson(req));
        const answer: AttachResponse = {
          attachment_id: attachment.id,
          last_seq: hosted.buffer.at(-1)?.seq ?? -1,
          tools: attachment.specs.map((s) => s.name),
        };
        return sendJson(res, 201, answer);
      }
      case "PUT attach/:arg": {
        const attachment = hosted.hub.update(decodePart(arg), await readJson(req));
        return sendJson(res, 200, {
          attachment_id: attachment.id,
          last_seq: hosted.buffer.at(-1)?.seq ?? -1,
          tools: attachment.specs.map((s) => s.name),
        });
      }
      case "DELETE attach/:arg": {
        hosted.hub.detach(decodePart(arg));
        return sendJson(res, 200, { detached: true });
      }
      case "POST client-results": {
        const body = (await readJson(req)) as {
          attachment_id?: unknown;
          call_id?: unknown;
          result?: unknown;
        };
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
        return sendJson(res, 200, { ok: true });
      }
      case "GET pending": {
        const listing = hosted.pending.list();
        // Questions an earlier server left open have no waiting call here, but still take answers.
        const waiting = new Set(listing.questions.map((q) => q.question_id));
        for (const open of pendingQuestions(session))
          if (!waiting.has(open.question_id))
            listing.questions.push({ question_id: open.question_id, questions: open.questions });
        return sendJson(res, 200, listing);
      }
      case "POST messages": {
        const body = (await readJson(req)) as { text?: unknown };
        if (typeof body?.text !== "string")
          throw new HttpError(400, "EINVAL_INPUT", "messages need {text: string}");
        const open = pendingQuestions(session).map((q) => q.question_id);
        session.userMessage(body.text);
        const left = new Set(pendingQuestions(session).map((q) => q.question_id));
        const answer: UserMessageResponse = { superseded: open.filter((q) => !left.has(q)) };
        return sendJson(res, 200, answer);
      }
      case "POST late-answers": {
        const answer: LateAnswersResponse = { answers: takeLateAnswers(session) };
        return sendJson(res, 200, answer);
      }
      case "POST approvals/:arg": {
        const body = (await readJson(req)) as { approved?: unknown };
        if (typeof body?.approved !== "boolean")
          throw new HttpError(400, "EINVAL_INPUT", "approvals need {approved: boolean}");
        const requestId = decodePart(arg);
        if (!hosted.pending.answerApproval(requestId, body.approved))
          throw new HttpError(404, "ENOENT", `no approval ${requestId} is waiting`);
        return sendJson(res, 200, { ok: true });
      }
      case "POST questions/:arg": {
        const questionId = decodePart(arg);
        const waiting = hosted.pending.list().questions.find((q) => q.question_id === questionId);
        if (!waiting) {
          // Left open by an earlier server: no call waits, so the answer is queued as a late answer.
          const restored = pendingQuestions(session).some((q) => q.question_id === questionId);
          if (!restored) throw new HttpError(404, "ENOENT", `no question ${questionId} is waiting`);
          const result = answerQuestion(session, questionId, (await readJson(req)) as QuestionResponse);
          if (result.kind === "error") throw new HttpError(400, "EINVAL_INPUT", String(result.message));
          return sendJson(res, 200, { ok: true, late: true });
        }
        const checked = checkQuestionResponse(waiting, await readJson(req));
        if (typeof checked === "string") throw new HttpError(400, "EINVAL_INPUT", checked);
        hosted.pending.answerQuestion(questionId, checked);
        return sendJson(res, 200, { ok: true });
      }
      default:
        throw new HttpError(404, "ENOENT", `no route ${method} ${url.pathname}`);
    }
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (res.headersSent) {
        res.end();
        return;
      }
      if (error instanceof HttpError)
        return sendJson(res, error.status, errorBody(error.code, error.message));
      const e = normaliseError(error);
      return sendJson(res, STATUS_OF[e.code] ?? 500, errorBody(e.code, e.message));
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

  function describe(hosted: Hosted): { id: string; root: string } {
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
  for (const event of hosted.buffer) if (!(event.seq <= after)) writeEvent(res, event);
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

function writeEvent(res: ServerResponse, event: ToolbeltEvent): void {
  writeData(res, event.seq, JSON.stringify(event));
}

function writeData(res: ServerResponse, seq: number, data: string): void {
  res.write(`id: ${seq}\ndata: ${data}\n\n`);
}

/** One path segment, percent-decoded; a malformed escape is the caller's mistake (400), not ours. */
function decodePart(part: string | undefined): string {
  try {
    return decodeURIComponent(part ?? "");
  } catch {
    throw new HttpError(
      400,
      "EINVAL_INPUT",
      `malformed percent-encoding in the path: ${part?.slice(0, 100)}`,
    );
  }
}

function authorised(req: IncomingMessage, url: URL, token: string): boolean {
  const header = req.headers.authorization;
  const given = header?.startsWith("Bearer ")
    ? header.slice("Bearer ".length).trim()
    : url.searchParams.get("token");
  if (!given) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
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

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES)
      throw new HttpError(413, "ETOO_LARGE", `the body is over ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString("utf8");
  if (text.trim() === "") return undefined;
  if (nestsDeeperThan(text))
    throw new HttpError(400, "EINVAL_INPUT", `the body nests deeper than ${MAX_JSON_DEPTH} levels`);
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new HttpError(400, "EINVAL_INPUT", `the body is not JSON: ${(error as Error).message}`);
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" });
  res.end(text);
}

function errorBody(code: string, message: string): { error: { code: string; message: string } } {
  return { error: { code, message } };
}

/** The console page from @toolbelt/console when it is installed; a plain note otherwise. */
async function loadConsolePage(): Promise<string> {
  // A computed specifier keeps the bundler from inlining an optional package.
  const specifier = ["@toolbelt", "console"].join("/");
  try {
    const mod = (await import(specifier)) as { consolePage?: () => string };
    if (typeof mod.consolePage === "function") return mod.consolePage();
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
