/// <reference lib="dom" />
// The HTTP API of `toolbelt serve --http`, as the page uses it: routes from @toolbelt/bridge's one
// table. Requests carry the bearer token; EventSource cannot send headers, so the stream gets it as `?token=`.
import {
  ROUTES,
  type RouteName,
  type RouteParams,
  type RouteTypes,
  routePath,
  type SessionInfo,
} from "@toolbelt/bridge/wire";
import type { QuestionAnswer } from "./model.js";

export type { SessionInfo };

/** Event types the stream may name in an `event:` field (unnamed messages arrive as `message`). */
const EVENT_NAMES = [
  "tool_call",
  "tool_result",
  "todos",
  "generative_ui",
  "question",
  "question_answered",
  "approval_requested",
  "approval_resolved",
  "shell_output",
  "tools_bound",
  "project_switched",
  "client_tool_call",
  "client_tool_result",
];

/** `#token=…&session=…` in the fragment (kept out of server logs), or the same in the query. */
export function readLocationParams(location: Location): { token?: string; session?: string } {
  const fromHash = new URLSearchParams(location.hash.replace(/^#/, ""));
  const fromQuery = new URLSearchParams(location.search);
  const token = fromHash.get("token") ?? fromQuery.get("token") ?? undefined;
  const session = fromHash.get("session") ?? fromQuery.get("session") ?? undefined;
  return { ...(token ? { token } : {}), ...(session ? { session } : {}) };
}

/**
 * What the console does for the session it follows: it draws present_ui panels and answers questions.
 * It says so by attaching with these capabilities, so the session binds present_ui and
 * ask_user_question exactly while a console is open.
 */
export const CONSOLE_CAPABILITIES = ["generative_ui", "ask_user"] as const;

/** How long the page waits before attaching again after its stream dropped. */
const RECONNECT_MS = 1000;

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export class ConsoleApi {
  constructor(
    readonly token: string,
    readonly base: string = new URL(".", location.href).href,
  ) {}

  /** Relative to the page, so a console served under a path prefix still reaches its server. */
  #url<N extends RouteName>(name: N, params: RouteParams<N>): URL {
    return new URL(routePath(name, params).replace(/^\//, ""), this.base);
  }

  async #request<N extends RouteName>(
    name: N,
    params: RouteParams<N>,
    body?: RouteTypes[N]["body"],
  ): Promise<unknown> {
    const response = await fetch(this.#url(name, params).href, {
      method: ROUTES[name].method,
      headers: {
        authorization: `Bearer ${this.token}`,
        ...(body !== undefined ? { "content-type": "application/json" } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // Not JSON: keep the text for the error message.
    }
    if (!response.ok) {
      // The server answers errors as {error: {code, message}}.
      const error = (parsed as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
      const message =
        typeof error?.message === "string"
          ? `${typeof error.code === "string" ? `${error.code}: ` : ""}${error.message}`
          : `${response.status} ${response.statusText}`;
      throw new ApiError(response.status, message);
    }
    return parsed;
  }

  async sessions(): Promise<SessionInfo[]> {
    const list = await this.#request("listSessions", {});
    return Array.isArray(list)
      ? list
          .filter((s): s is SessionInfo => typeof s?.id === "string")
          .map((s) => ({ id: s.id, root: String(s.root ?? "") }))
      : [];
  }

  pending(session: string): Promise<unknown> {
    return this.#request("pending", { id: session });
  }

  answer(session: string, questionId: string, answers: QuestionAnswer[], notes?: string): Promise<unknown> {
    return this.#request(
      "answer",
      { id: session, question_id: questionId },
      { answers, ...(notes ? { notes } : {}) },
    );
  }

  resolve(session: string, requestId: string, approved: boolean): Promise<unknown> {
    return this.#request("approve", { id: session, request_id: requestId }, { approved });
  }

  /**
   * Follows the session's event stream as an attached client declaring CONSOLE_CAPABILITIES; the
   * returned function closes it (and the server drops the attachment with its stream). The server
   * ends an attachment when its stream drops, so a dropped stream attaches again and resumes after
   * the last event seen, instead of letting EventSource retry a URL whose attachment is gone.
   */
  follow(
    session: string,
    onEvent: (event: unknown) => void,
    onStatus: (status: "open" | "reconnecting" | "closed") => void,
  ): () => void {
    let stopped = false;
    let source: EventSource | undefined;
    let retry: ReturnType<typeof setTimeout> | undefined;
    let lastSeq: string | undefined;
    const again = (): void => {
      onStatus("reconnecting");
      retry = setTimeout(() => void connect(), RECONNECT_MS);
    };
    const connect = async (): Promise<void> => {
      let attachment: string;
      try {
        const answer = (await this.#request(
          "attach",
          { id: session },
          { client: "console", tools: [], capabilities: [...CONSOLE_CAPABILITIES] },
        )) as { attachment_id?: unknown } | undefined;
        attachment = String(answer?.attachment_id ?? "");
      } catch (error) {
        if (stopped) return;
        // A refusal (no such session, a bad token) stays a refusal; a server that is away is retried.
        if (error instanceof ApiError && error.status < 500) onStatus("closed");
        else again();
        return;
      }
      if (stopped) {
        // Closed while attaching: let go of the attachment rather than leave it to the server's grace period.
        void this.#request("detach", { id: session, attachment_id: attachment }).catch(() => {});
        return;
      }
      const url = this.#url("events", { id: session });
      url.searchParams.set("token", this.token);
      url.searchParams.set("attachment", attachment);
      if (lastSeq !== undefined) url.searchParams.set("since", lastSeq);
      const current = new EventSource(url.href);
      source = current;
      const handle = (message: MessageEvent): void => {
        if (message.lastEventId) lastSeq = message.lastEventId;
        try {
          onEvent(JSON.parse(String(message.data)));
        } catch {
          // A line that is not JSON (a comment, a keep-alive) carries no event.
        }
      };
      current.addEventListener("message", handle);
      for (const name of EVENT_NAMES) current.addEventListener(name, handle as EventListener);
      current.onopen = () => onStatus("open");
      current.onerror = () => {
        current.close();
        if (!stopped) again();
      };
    };
    void connect();
    return () => {
      stopped = true;
      clearTimeout(retry);
      source?.close();
    };
  }
}
