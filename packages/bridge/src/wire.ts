// The HTTP API between `toolbelt serve --http` and a client: its routes and JSON shapes. The server,
// connectClient(), the console page and its test fake all build on this file (no Node imports: the page bundles it).

import type { ApprovalPrompt } from "@toolbelt/core";
import type { QuestionRequest } from "@toolbelt/ui/contrib";

/** A tool a client brings: the server runs no code for it, it forwards calls to the client. */
export type ClientToolSpec = {
  name: string;
  description: string;
  /** JSON Schema of the input (an object schema). */
  input_schema: Record<string, unknown>;
  /** Offered by name only until tool_search binds it, when the session defers tools (default true). */
  deferrable?: boolean;
};

/** POST /api/sessions/:id/attach (and PUT /api/sessions/:id/attach/:attachment_id to update). */
export type AttachRequest = {
  client?: string;
  tools: ClientToolSpec[];
  /** Client capabilities added to the session while attached (e.g. `generative_ui`). */
  capabilities?: string[];
  /** How long a call may wait for this client's answer (default 60 000 ms). */
  timeout_ms?: number;
};

export type AttachResponse = {
  attachment_id: string;
  /** The session's last event sequence number: open the stream with `since=last_seq`. */
  last_seq: number;
  tools: string[];
};

/** POST /api/sessions/:id/client-results */
export type ClientResultRequest = {
  /** The attachment the call was sent to: an answer from any other attachment is refused (403). */
  attachment_id: string;
  call_id: string;
  result: unknown;
};

/** POST /api/sessions/:id/calls */
export type CallRequest = {
  tool: string;
  input?: unknown;
  call_id?: string;
};

/** GET /api/sessions/:id/pending */
export type PendingListing = {
  questions: QuestionRequest[];
  approvals: ApprovalPrompt[];
};

/**
 * POST /api/sessions/:id/messages: a new user message. It supersedes the questions a call still
 * waits on (those calls return `question_superseded`); a question that already timed out stays
 * answerable, its answer a late one. The host still sends the text to its model.
 */
export type UserMessageRequest = { text: string };

export type UserMessageResponse = {
  /** The questions the message closed (those whose calls were still waiting). */
  superseded: string[];
};

/** One answer that came after its question timed out (or after a restart), for the model as a new message. */
export type LateAnswerMessage = {
  question_id: string;
  answers: Array<{ question: string; options?: number[]; selected?: string[]; text?: string }>;
  notes?: string;
  /** The model-facing text to send as a user message. */
  text: string;
};

/** POST /api/sessions/:id/late-answers: takes the late answers not yet taken (each is handed over once). */
export type LateAnswersResponse = { answers: LateAnswerMessage[] };

/**
 * GET /api/health: whether the server takes requests (200 `serving`, 503 `stopping`), for a load
 * balancer's probe, which needs no token. With the token it also says what the server holds.
 */
export type HealthResponse = {
  ok: boolean;
  status: "serving" | "stopping";
  /** Only with the token: */
  sessions?: { open: number; max: number; idle_seconds: number };
  requests?: { in_flight: number; max: number };
  /** Calls running now, and those waiting for a process slot. */
  calls?: { running: number; queued: number };
  /** The process pool the sessions share: calls' processes, and long-lived ones. */
  processes?: {
    max: number;
    running: number;
    queued: number;
    long_lived: { max: number; running: number; queued: number };
    sessions_waiting: number;
  };
};

/** Every non-2xx answer of the API. */
export type ApiError = { error: { code: string; message: string } };

/** GET /api/sessions, POST /api/sessions */
export type SessionInfo = { id: string; root: string };

/**
 * POST /api/sessions: a new session, its root inside the server's root (the server's root when left
 * out). `capabilities` are those of the client opening it (`generative_ui`, `ask_user`): a session
 * binds present_ui and ask_user_question only when a client declares them, here or when it attaches.
 */
export type OpenSessionRequest = { root?: string; capabilities?: string[] };

/** POST /api/sessions/:id/calls answers the payload and its model-facing text. */
export type CallResponse = { call_id: string; result: unknown; text: string };

/** POST /api/sessions/:id/approvals/:request_id */
export type ApprovalAnswer = { approved: boolean };

/** POST /api/sessions/:id/questions/:question_id: one answer per question (option indices and/or text). */
export type QuestionAnswerRequest = {
  answers: Array<{ options?: number[]; text?: string }>;
  notes?: string;
};

export type Ok = { ok: true };

type Method = "GET" | "POST" | "PUT" | "DELETE";

/**
 * One route: what it answers on success, and whether it needs the token (the static page does not,
 * nor the health probe, which says more to a caller that sends it).
 */
export type RouteSpec = { method: Method; path: string; status: 200 | 201; auth?: false };

/**
 * Every route of `toolbelt serve --http`, written down once. The server dispatches on it, the
 * clients (connectClient, the console page) build their URLs from it, the console's test fake
 * answers it, and a test holds the package README's route table to it.
 */
export const ROUTES = {
  console: { method: "GET", path: "/", status: 200, auth: false },
  health: { method: "GET", path: "/api/health", status: 200, auth: false },
  listSessions: { method: "GET", path: "/api/sessions", status: 200 },
  openSession: { method: "POST", path: "/api/sessions", status: 201 },
  closeSession: { method: "DELETE", path: "/api/sessions/:id", status: 200 },
  tools: { method: "GET", path: "/api/sessions/:id/tools", status: 200 },
  events: { method: "GET", path: "/api/sessions/:id/events", status: 200 },
  call: { method: "POST", path: "/api/sessions/:id/calls", status: 200 },
  cancelCall: { method: "POST", path: "/api/sessions/:id/calls/:call_id/cancel", status: 200 },
  attach: { method: "POST", path: "/api/sessions/:id/attach", status: 201 },
  updateAttachment: { method: "PUT", path: "/api/sessions/:id/attach/:attachment_id", status: 200 },
  detach: { method: "DELETE", path: "/api/sessions/:id/attach/:attachment_id", status: 200 },
  clientResult: { method: "POST", path: "/api/sessions/:id/client-results", status: 200 },
  pending: { method: "GET", path: "/api/sessions/:id/pending", status: 200 },
  approve: { method: "POST", path: "/api/sessions/:id/approvals/:request_id", status: 200 },
  answer: { method: "POST", path: "/api/sessions/:id/questions/:question_id", status: 200 },
  message: { method: "POST", path: "/api/sessions/:id/messages", status: 200 },
  lateAnswers: { method: "POST", path: "/api/sessions/:id/late-answers", status: 200 },
} as const satisfies Record<string, RouteSpec>;

export type RouteName = keyof typeof ROUTES;

/** What each route takes as its JSON body and answers with on success. */
export interface RouteTypes {
  console: { body: undefined; response: string };
  health: { body: undefined; response: HealthResponse };
  listSessions: { body: undefined; response: SessionInfo[] };
  openSession: { body: OpenSessionRequest | undefined; response: SessionInfo };
  closeSession: { body: undefined; response: { closed: string } };
  tools: { body: undefined; response: unknown };
  /** Server-Sent Events: `id: <seq>` and `data: <event JSON>`. */
  events: { body: undefined; response: ReadableStream<Uint8Array> };
  call: { body: CallRequest; response: CallResponse };
  cancelCall: { body: undefined; response: { cancelled: boolean } };
  attach: { body: AttachRequest; response: AttachResponse };
  updateAttachment: { body: AttachRequest; response: AttachResponse };
  detach: { body: undefined; response: { detached: true } };
  clientResult: { body: ClientResultRequest; response: Ok };
  pending: { body: undefined; response: PendingListing };
  approve: { body: ApprovalAnswer; response: Ok };
  answer: { body: QuestionAnswerRequest; response: Ok & { late?: true } };
  message: { body: UserMessageRequest; response: UserMessageResponse };
  lateAnswers: { body: undefined; response: LateAnswersResponse };
}

type ParamsOf<P extends string> = P extends `${string}:${infer Name}/${infer Rest}`
  ? { [K in Name | keyof ParamsOf<`/${Rest}`>]: string }
  : P extends `${string}:${infer Name}`
    ? { [K in Name]: string }
    : Record<never, string>;

/** The path parameters of a route, by name: `{id, call_id}` for cancelCall. */
export type RouteParams<N extends RouteName> = ParamsOf<(typeof ROUTES)[N]["path"]>;

/** A non-2xx answer: thrown by the server's handlers, answered as {@link ApiError}. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export function errorBody(code: string, message: string): ApiError {
  return { error: { code, message } };
}

/** A route's path with its parameters filled in, each percent-encoded. */
export function routePath<N extends RouteName>(name: N, params: RouteParams<N>): string {
  const values = params as Record<string, string>;
  return ROUTES[name].path.replace(/:([a-z_]+)/g, (_m, key: string) => encodeURIComponent(values[key] ?? ""));
}

/** One path segment, percent-decoded; a malformed escape is the caller's mistake (400). */
export function decodePart(part: string | undefined): string {
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

const SPLIT_ROUTES = Object.entries(ROUTES).map(([name, spec]) => ({
  name: name as RouteName,
  spec: spec as RouteSpec,
  segments: spec.path.split("/").filter(Boolean),
}));

/**
 * The route a request names, with its parameters decoded (400 for a malformed escape); undefined
 * when none matches. Empty segments are ignored, so `/api/sessions/` is `/api/sessions`.
 */
export function matchRoute(
  method: string,
  pathname: string,
): { name: RouteName; spec: RouteSpec; params: Record<string, string> } | undefined {
  const parts = pathname.split("/").filter(Boolean);
  for (const route of SPLIT_ROUTES) {
    if (route.spec.method !== method || route.segments.length !== parts.length) continue;
    if (!route.segments.every((s, i) => s.startsWith(":") || s === parts[i])) continue;
    const params: Record<string, string> = {};
    route.segments.forEach((s, i) => {
      if (s.startsWith(":")) params[s.slice(1)] = decodePart(parts[i]);
    });
    return { name: route.name, spec: route.spec, params };
  }
  return undefined;
}

/**
 * Why no route matched, as the error the server answers: an unknown session comes first (404, or
 * 400 for a malformed id), then a method `/api/sessions` does not take (405), else 404.
 */
export function noRoute(method: string, pathname: string, hasSession: (id: string) => boolean): HttpError {
  const parts = pathname.split("/").filter(Boolean);
  if (parts[0] === "api" && parts[1] === "sessions") {
    if (parts.length === 2)
      return new HttpError(405, "EINVAL_INPUT", `${method} /api/sessions is not supported`);
    const id = decodePart(parts[2]);
    if (!hasSession(id)) return new HttpError(404, "ENOENT", `no session ${parts[2]}`);
  }
  return new HttpError(404, "ENOENT", `no route ${method} ${pathname}`);
}

/** Bodies over this many bytes are refused (413). */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;
