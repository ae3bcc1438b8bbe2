// A scripted stand-in for `toolbelt serve --http`'s session API, for the page's browser tests:
// the same routes, real events from core's EventStream, and a record of what the page sent.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { type EventInput, EventStream, type ToolbeltEvent } from "@toolbelt/core";
import { consolePage } from "../index.js";

export type Received = { method: string; path: string; authorization?: string; body?: unknown };

export type FakeServer = {
  url: string;
  token: string;
  sessionId: string;
  stream: EventStream;
  /** Every API request the page made, in order. */
  received: Received[];
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

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  return text ? JSON.parse(text) : undefined;
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

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

  stream.on("*", (event) => {
    history.push(event);
    for (const res of clients) res.write(`id: ${event.seq}\ndata: ${JSON.stringify(event)}\n\n`);
  });

  const handler = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? "/", "http://localhost");
    if (req.method === "GET" && url.pathname === "/") {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(consolePage());
      return;
    }
    const authorised =
      req.headers.authorization === `Bearer ${token}` || url.searchParams.get("token") === token;
    const body = req.method === "POST" ? await readBody(req) : undefined;
    received.push({
      method: req.method ?? "GET",
      path: url.pathname,
      ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
      ...(body !== undefined ? { body } : {}),
    });
    if (!authorised) return json(res, 401, { kind: "error", code: "EDENIED", message: "bad token" });
    const parts = url.pathname.split("/").filter(Boolean).map(decodeURIComponent);
    if (parts[0] !== "api" || parts[1] !== "sessions") return json(res, 404, { message: "not found" });
    if (parts.length === 2) return json(res, 200, [{ id: sessionId, root: options.root ?? "/work/demo" }]);
    if (parts[2] !== sessionId) return json(res, 404, { message: "no such session" });
    if (parts[3] === "events" && req.method === "GET") {
      res.writeHead(200, {
        "content-type": "text/event-stream",
        "cache-control": "no-cache",
        connection: "keep-alive",
      });
      for (const event of history) res.write(`id: ${event.seq}\ndata: ${JSON.stringify(event)}\n\n`);
      clients.add(res);
      req.on("close", () => clients.delete(res));
      return;
    }
    if (parts[3] === "pending" && req.method === "GET") {
      return json(res, 200, {
        questions: [...questions.values()].map((q) => q.event),
        approvals: [...approvals.values()].map((a) => a.event),
      });
    }
    if (parts[3] === "questions" && parts[4] && req.method === "POST") {
      const pending = questions.get(parts[4]);
      if (!pending) return json(res, 404, { message: "no such question" });
      questions.delete(parts[4]);
      const answer = body as { answers: unknown[]; notes?: string };
      stream.emit({
        type: "question_answered",
        question_id: parts[4],
        answers: answer.answers,
        ...(answer.notes ? { notes: answer.notes } : {}),
      });
      pending.resolve(body);
      return json(res, 200, { ok: true });
    }
    if (parts[3] === "approvals" && parts[4] && req.method === "POST") {
      const pending = approvals.get(parts[4]);
      if (!pending) return json(res, 404, { message: "no such approval" });
      approvals.delete(parts[4]);
      const approved = (body as { approved?: unknown }).approved === true;
      stream.emit({ type: "approval_resolved", request_id: parts[4], approved, by: "console" });
      pending.resolve(approved);
      return json(res, 200, { ok: true });
    }
    return json(res, 404, { message: "not found" });
  };

  const server: Server = createServer((req, res) => {
    handler(req, res).catch((error: Error) => json(res, 500, { message: error.message }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/`,
    token,
    sessionId,
    stream,
    received,
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
