// A scripted stand-in for `toolbelt serve --http`'s session API, for the page's browser tests:
// the same route table, body checks and error answers as the real server (@toolbelt/bridge), real
// events from core's EventStream, and a record of what the page sent.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import {
  authorised,
  HttpError,
  matchRoute,
  noRoute,
  type RouteName,
  readJson,
  sendError,
  sendJson,
  unauthorised,
} from "@toolbelt/bridge";
import type { EventInput, ToolbeltEvent } from "@toolbelt/core";
import { EventStream } from "@toolbelt/core/internal";
import { consolePage } from "../index.js";

export type Received = { method: string; path: string; authorization?: string; body?: unknown };

export type FakeServer = {
  url: string;
  token: string;
  sessionId: string;
  stream: EventStream;
  /** Every API request the page made, in order. */
  received: Received[];
  /** The attachments whose event stream is connected now (the page attaches to follow a session). */
  attached(): Array<{ client?: string; capabilities: string[] }>;
  /** Ends every open event stream, as a server restart or a network drop would. */
  dropStreams(): void;
  emit(input: EventInput): ToolbeltEvent;
  /** A question the page can answer; resolves with the POSTed body. */
  ask(questionId: string, questions: unknown[]): Promise<unknown>;
  /** An approval the page can resolve; resolves with the decision. */
  requestApproval(
    requestId: string,
    prompt: { tool: string; summary: string; input?: unknown },
  ): Promise<boolean>;
  close(): Promise<void>;
};

export async function startFakeServer(
  options: { token?: string; sessionId?: string; root?: string } = {},
): Promise<FakeServer> {
  const token = options.token ?? "test-token";
  const sessionId = options.sessionId ?? "s1";
  const stream = new EventStream(sessionId);
  const history: ToolbeltEvent[] = [];
  const clients = new Set<ServerResponse>();
  const received: Received[] = [];
  const questions = new Map<string, { event: unknown; resolve: (body: unknown) => void }>();
  const approvals = new Map<string, { event: unknown; resolve: (approved: boolean) => void }>();
  const attachments = new Map<string, { client?: string; capabilities: string[]; connected: boolean }>();
  let attachmentIds = 0;

  stream.on("*", (event) => {
    history.push(event);
    for (const res of clients) res.write(`id: ${event.seq}\ndata: ${JSON.stringify(event)}\n\n`);
  });

  /** The routes the page uses; any other route is answered as the real server answers one it cannot serve here. */
  const served: Partial<
    Record<
      RouteName,
      (id: string, arg: string, body: unknown, req: IncomingMessage, res: ServerResponse) => void
    >
  > = {
    console: (_id, _arg, _body, _req, res) => {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(consolePage());
    },
    listSessions: (_id, _arg, _body, _req, res) =>
      sendJson(res, 200, [{ id: sessionId, root: options.root ?? "/work/demo" }]),
    attach: (_id, _arg, body, _req, res) => {
      const request = body as { client?: unknown; tools?: unknown; capabilities?: unknown } | undefined;
      if (!Array.isArray(request?.tools))
        throw new HttpError(400, "EINVAL_INPUT", "attach: tools: expected array");
      const capabilities = Array.isArray(request.capabilities) ? request.capabilities.map(String) : [];
      const id = `att-${++attachmentIds}`;
      attachments.set(id, {
        ...(typeof request.client === "string" ? { client: request.client } : {}),
        capabilities,
        connected: false,
      });
      sendJson(res, 201, { attachment_id: id, last_seq: history.at(-1)?.seq ?? -1, tools: [] });
    },
    detach: (_id, attachmentId, _body, _req, res) => {
      attachments.delete(attachmentId);
      sendJson(res, 200, { detached: true });
    },
    events: (_id, _arg, _body, req, res) => {
      // As the real server: an attachment's stream connects it, and its end detaches it.
      const url = new URL(req.url ?? "/", "http://localhost");
      const attachmentId = url.searchParams.get("attachment");
      const attachment = attachmentId ? attachments.get(attachmentId) : undefined;
      if (attachmentId && !attachment)
        throw new HttpError(
          404,
          "ENOENT",
          `no attachment ${attachmentId} (it disconnected or never existed)`,
        );
      if (attachment) attachment.connected = true;
      const since = Number(req.headers["last-event-id"] ?? url.searchParams.get("since") ?? Number.NaN);
      res.writeHead(200, {
        "content-type": "text/event-stream",
        "cache-control": "no-cache",
        connection: "keep-alive",
      });
      // As the real server: a comment first, so the stream opens even with nothing to replay.
      res.write(": fake event stream\n\n");
      for (const event of history)
        if (!(event.seq <= since)) res.write(`id: ${event.seq}\ndata: ${JSON.stringify(event)}\n\n`);
      clients.add(res);
      req.on("close", () => {
        clients.delete(res);
        if (attachmentId) attachments.delete(attachmentId);
      });
    },
    pending: (_id, _arg, _body, _req, res) =>
      sendJson(res, 200, {
        questions: [...questions.values()].map((q) => q.event),
        approvals: [...approvals.values()].map((a) => a.event),
      }),
    answer: (_id, questionId, body, _req, res) => {
      const pending = questions.get(questionId);
      if (!pending) throw new HttpError(404, "ENOENT", `no question ${questionId} is waiting`);
      const answer = body as { answers?: unknown; notes?: string } | undefined;
      if (!Array.isArray(answer?.answers))
        throw new HttpError(400, "EINVAL_INPUT", "answers need {answers: [{options?, text?}]}");
      questions.delete(questionId);
      stream.emit({
        type: "question_answered",
        question_id: questionId,
        answers: answer.answers,
        ...(answer.notes ? { notes: answer.notes } : {}),
      });
      pending.resolve(body);
      sendJson(res, 200, { ok: true });
    },
    approve: (_id, requestId, body, _req, res) => {
      const approved = (body as { approved?: unknown } | undefined)?.approved;
      if (typeof approved !== "boolean")
        throw new HttpError(400, "EINVAL_INPUT", "approvals need {approved: boolean}");
      const pending = approvals.get(requestId);
      if (!pending) throw new HttpError(404, "ENOENT", `no approval ${requestId} is waiting`);
      approvals.delete(requestId);
      stream.emit({ type: "approval_resolved", request_id: requestId, approved, by: "console" });
      pending.resolve(approved);
      sendJson(res, 200, { ok: true });
    },
  };

  const handler = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? "/", "http://localhost");
    const method = req.method ?? "GET";
    const body =
      method === "POST" || method === "PUT" ? await readJson(req).catch((e: unknown) => e) : undefined;
    if (url.pathname !== "/")
      received.push({
        method,
        path: url.pathname,
        ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
        ...(body !== undefined && !(body instanceof HttpError) ? { body } : {}),
      });
    const route = matchRoute(method, url.pathname);
    if (route?.spec.auth !== false && !authorised(req, url, token)) throw unauthorised();
    const hasSession = (id: string) => id === sessionId;
    if (!route) throw noRoute(method, url.pathname, hasSession);
    const { id, ...rest } = route.params;
    if (id !== undefined && !hasSession(id)) throw new HttpError(404, "ENOENT", `no session ${id}`);
    if (body instanceof HttpError) throw body;
    const serve = served[route.name];
    if (!serve) throw new HttpError(404, "ENOENT", `the fake server does not serve ${route.name}`);
    serve(id ?? "", Object.values(rest)[0] ?? "", body, req, res);
  };

  const server: Server = createServer((req, res) => {
    handler(req, res).catch((error: unknown) =>
      sendError(
        res,
        error instanceof HttpError ? error : new HttpError(500, "EINTERNAL", (error as Error).message),
      ),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/`,
    token,
    sessionId,
    stream,
    received,
    attached: () =>
      [...attachments.values()]
        .filter((a) => a.connected)
        .map(({ connected: _c, ...a }) => ({ ...a, capabilities: [...a.capabilities] })),
    dropStreams() {
      for (const res of clients) res.end();
    },
    emit: (input) => stream.emit(input),
    ask(questionId, list) {
      return new Promise((resolve) => {
        const event = stream.emit({ type: "question", question_id: questionId, questions: list });
        questions.set(questionId, { event, resolve });
      });
    },
    requestApproval(requestId, prompt) {
      return new Promise((resolve) => {
        const event = stream.emit({
          type: "approval_requested",
          request_id: requestId,
          tool: prompt.tool,
          family: "shell",
          access: "execute",
          summary: prompt.summary,
          input: prompt.input,
        });
        approvals.set(requestId, { event, resolve });
      });
    },
    async close() {
      for (const res of clients) res.end();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
