import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  type CallToolResult,
  CallToolResultSchema,
  type ElicitRequest,
  ElicitRequestSchema,
  type ElicitResult,
  ErrorCode,
  McpError,
  type Notification,
  type Tool,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import {
  type ApprovalPrompt,
  type ClientInfo,
  ERROR_CODES,
  type ErrorPayload,
  errorPayload,
  type Payload,
  ToolbeltError,
  type ErrorCode as ToolbeltErrorCode,
  z,
} from "@toolbelt/core";
import type { QuestionRequest, QuestionResponse } from "@toolbelt/ui/contrib";
import type { Channel, WorkspaceDriver } from "@toolbelt/workspace";
import { LineTransport } from "./mcp-stdio.js";
import {
  APPROVAL_META,
  CALL_ID_META,
  CHECKPOINTS_REQUEST,
  type CheckpointsRequest,
  checkpointsAnswerSchema,
  EVENT_NOTIFICATION,
  type HostRequest,
  QUESTION_META,
  serverInfoSchema,
  WORKSPACE_CAPABILITY,
} from "./workspace-protocol.js";

// The host end of a workspace: `toolbelt serve --mcp` started inside it through the driver's byte
// stream, driven as an MCP client. Calls go out as tools/call (with the host's call id), events
// and tool-list changes come back as notifications, approvals and questions as elicitations, a
// cancelled call as notifications/cancelled. A connection that drops fails the pending calls with
// EWORKSPACE; the next call starts toolbelt there again, after ending what was left of the old one.

/** How long toolbelt in the workspace may take to start and list its tools. */
const START_TIMEOUT_MS = 60_000;
/**
 * A call's bound on the host: the workspace enforces its own limits (a shell command's timeout, a
 * question's), and a dropped connection fails the call at once; this only stops a wedged peer.
 */
const CALL_TIMEOUT_MS = 24 * 60 * 60_000;
/** How long toolbelt in the workspace may take to close its session once its stdin ends. */
const CLOSE_GRACE_MS = 10_000;
/** The largest message read from the workspace: a result carries its payload and its text. */
const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;
const NOISE_CHARS = 2_000;
/** How long a lost link's far end may take to say why it ended, before the call is answered without it. */
const END_WAIT_MS = 2_000;

export interface LinkOptions {
  driver: WorkspaceDriver;
  /** `serve --mcp …` flags after the driver's toolbelt command. */
  serveArgs: string[];
  /** The project's root in the workspace (the command's working directory). */
  root: string;
  /** What the host asks of the workspace's server (events, capabilities, policy). */
  request: HostRequest;
  /** The host session's client: it answers approvals and questions from the workspace. */
  client: ClientInfo;
  version: string;
  onEvent: (event: Record<string, unknown>) => void;
  onTools: (tools: Tool[]) => void;
}

type State = "idle" | "up" | "down" | "closed";

/** One link to toolbelt in a workspace. */
export class WorkspaceLink {
  readonly #options: LinkOptions;
  #state: State = "idle";
  #client: Client | undefined;
  #channel: Channel | undefined;
  #serverPid: number | undefined;
  #downWhy = "";
  #relisting: Promise<void> = Promise.resolve();
  #noise = "";
  tools: Tool[] = [];

  constructor(options: LinkOptions) {
    this.#options = options;
  }

  get label(): string {
    return this.#options.driver.label;
  }

  /** Starts toolbelt in the workspace and lists its tools; throws EWORKSPACE saying why it could not. */
  async connect(): Promise<void> {
    const { driver, serveArgs, root, request, client: host, version } = this.#options;
    const argv = [...driver.toolbelt.command, ...serveArgs];
    const channel = await driver.start(argv, root);
    this.#noise = "";
    const transport = new LineTransport(channel.stdout, channel.stdin, {
      maxMessageBytes: MAX_MESSAGE_BYTES,
      log: (line) => {
        this.#noise = `${this.#noise}${line}\n`.slice(-NOISE_CHARS);
      },
    });
    const elicits = host.approve !== undefined || host.ask !== undefined;
    const client = new Client(
      { name: "toolbelt workspace host", version },
      {
        capabilities: {
          ...(elicits ? { elicitation: {} } : {}),
          experimental: { [WORKSPACE_CAPABILITY]: request },
        },
      },
    );
    client.fallbackNotificationHandler = async (notification: Notification) => {
      if (notification.method !== EVENT_NOTIFICATION) return;
      const event = (notification.params as { event?: unknown } | undefined)?.event;
      if (
        typeof event === "object" &&
        event !== null &&
        typeof (event as { type?: unknown }).type === "string"
      )
        this.#options.onEvent(event as Record<string, unknown>);
    };
    // The list is fetched again at once; a call's result waits for it (see call), so a tool bound by
    // that call (tool_search) is callable as soon as the result is read.
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      this.#relisting = this.#list(client).catch(() => {});
    });
    if (elicits)
      client.setRequestHandler(ElicitRequestSchema, (req, extra) => answer(host, req.params, extra.signal));
    client.onclose = () => {
      if (this.#client !== client) return;
      if (this.#state === "up") this.#state = "down";
      void channel.ended.then((end) => {
        this.#downWhy = this.#why(end, channel);
      });
    };
    this.#channel = channel;
    this.#client = client;
    try {
      await withTimeout(
        (async () => {
          await client.connect(transport);
          await this.#list(client);
        })(),
        START_TIMEOUT_MS,
      );
    } catch (error) {
      channel.destroy();
      const end = await within(channel.ended, END_WAIT_MS);
      this.#state = "down";
      throw this.#startError(error, end, channel, argv);
    }
    const info = serverInfoSchema.safeParse(
      client.getServerCapabilities()?.experimental?.[WORKSPACE_CAPABILITY],
    );
    this.#serverPid = info.success ? info.data.pid : undefined;
    this.#state = "up";
  }

  #startError(
    error: unknown,
    end: { code?: number | null; reason: string } | undefined,
    channel: Channel,
    argv: string[],
  ): ToolbeltError {
    const { driver } = this.#options;
    const stderr = channel.stderrTail();
    const noise = this.#noise.trim();
    const said = [stderr, noise].filter(Boolean).join(" | ");
    const missing = end?.code === 126 || end?.code === 127 || /not found|no such file/i.test(said);
    const timedOut = error instanceof TimeoutError;
    const what = timedOut
      ? `toolbelt in ${driver.label} did not answer within ${START_TIMEOUT_MS / 1000} s`
      : `toolbelt did not start in ${driver.label}`;
    // 126/127 (or the shell's "cannot execute", "not found"): the command is missing or cannot run
    // there, as a host's Node mounted into an image without its libc (the container may still have
    // looked alive a moment before).
    const hint =
      missing || /cannot exec|exec format|GLIBC/i.test(said)
        ? `: no usable Node or toolbelt there (${JSON.stringify(argv.slice(0, driver.toolbelt.command.length))}, ${driver.toolbelt.how}, was not found or cannot run: a Node built for another libc or architecture, or none); use an image with glibc for the host's Node, or one with toolbelt installed (docs/workspaces.md)`
        : "";
    const exit = end
      ? ` (${end.reason}${end.code !== undefined && end.code !== null ? `, exit code ${end.code}` : ""})`
      : "";
    const tail = said ? `; it said: ${lastLines(said)}` : "";
    return new ToolbeltError("EWORKSPACE", `${what}${exit}${hint}${tail}`, {
      cause: error,
      details: { workspace: driver.label },
    });
  }

  async #list(client: Client): Promise<void> {
    const tools: Tool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 100; page++) {
      const result = await client.listTools(cursor ? { cursor } : undefined);
      tools.push(...result.tools);
      cursor = result.nextCursor;
      if (!cursor) break;
    }
    this.tools = tools;
    this.#options.onTools(tools);
  }

  #why(end: { code?: number | null; reason: string }, channel: Channel): string {
    const tail = channel.stderrTail();
    return `${end.reason}${end.code !== undefined && end.code !== null ? `, exit code ${end.code}` : ""}${tail ? `; it said: ${lastLines(tail)}` : ""}`;
  }

  /**
   * Calls a tool of the workspace by its bound name. Resolves to its payload and model-facing text;
   * a lost connection, a call after close, or a workspace that cannot be started again is EWORKSPACE.
   */
  async call(
    name: string,
    input: unknown,
    callId: string,
    signal: AbortSignal,
  ): Promise<{ payload: Payload; text: string | undefined }> {
    const client = await this.#ready();
    let result: CallToolResult;
    try {
      result = (await client.request(
        {
          method: "tools/call",
          params: { name, arguments: input as Record<string, unknown>, _meta: { [CALL_ID_META]: callId } },
        },
        CallToolResultSchema,
        { signal, timeout: CALL_TIMEOUT_MS },
      )) as CallToolResult;
    } catch (error) {
      if (signal.aborted) throw new ToolbeltError("ECANCELLED", "the call was cancelled", { cause: error });
      throw await this.#failure(name, error);
    }
    // A tool list changed by this call is known before its result is.
    await this.#relisting;
    return resultOf(name, result);
  }

  /**
   * Asks toolbelt in the workspace about the checkpoints it recorded (CHECKPOINTS_REQUEST) and
   * returns its answer's value; the error it answered with is thrown with the same code and details.
   * A lost connection, or a toolbelt there that does not answer such requests, is EWORKSPACE.
   */
  async checkpoints(request: CheckpointsRequest): Promise<unknown> {
    const client = await this.#ready();
    const what = `checkpoints ${request.action}`;
    let answer: z.output<typeof checkpointsAnswerSchema>;
    try {
      answer = await client.request(
        { method: CHECKPOINTS_REQUEST, params: request } as unknown as Parameters<Client["request"]>[0],
        checkpointsAnswerSchema,
        { timeout: CALL_TIMEOUT_MS },
      );
    } catch (error) {
      if (error instanceof McpError && error.code === ErrorCode.MethodNotFound)
        throw this.#error(
          `toolbelt in ${this.label} does not answer checkpoint requests (a version older than this one): update it there, or run toolbelt checkpoints in the workspace`,
        );
      throw await this.#failure(what, error);
    }
    if (answer.ok) return answer.value;
    const { code, message, kind: _kind, ...details } = answer.error;
    const known = (ERROR_CODES as readonly string[]).includes(code);
    throw new ToolbeltError(known ? (code as ToolbeltErrorCode) : "EWORKSPACE", message, {
      details: known ? details : { ...details, workspace: this.label, code },
    });
  }

  /** The connected client, after starting toolbelt there again if the link went down. */
  async #ready(): Promise<Client> {
    if (this.#state === "closed") throw this.#error(`the session's link to ${this.label} is closed`);
    if (this.#state !== "up") await this.#reconnect();
    return this.#client as Client;
  }

  /** The EWORKSPACE error a request that failed on the link is answered with: a lost connection, named. */
  async #failure(what: string, error: unknown): Promise<ToolbeltError> {
    const closed = error instanceof McpError && error.code === ErrorCode.ConnectionClosed;
    if (closed || this.#state !== "up") {
      this.#markDown();
      // Why it ended, when the far end says so soon; the request is answered either way.
      const end = this.#channel ? await within(this.#channel.ended, END_WAIT_MS) : undefined;
      const why = end && this.#channel ? this.#why(end, this.#channel) : "the connection closed";
      return this.#error(
        `the connection to ${this.label} was lost during ${what} (${why}): it may or may not have run there. The next call starts toolbelt in the workspace again; its session there (shell sessions, todos, what was read) starts over`,
      );
    }
    return this.#error(`${this.label} failed on ${what}: ${(error as Error).message}`);
  }

  /** A link found broken goes down, unless it was closed meanwhile (a closed one never reconnects). */
  #markDown(): void {
    if (this.#state === "up") this.#state = "down";
  }

  #error(message: string): ToolbeltError {
    return new ToolbeltError("EWORKSPACE", message, { details: { workspace: this.label } });
  }

  /** Ends what may be left of the last toolbelt there, then starts it again. */
  async #reconnect(): Promise<void> {
    const { driver, root } = this.#options;
    const before = this.#downWhy;
    this.#channel?.destroy();
    await this.#endServer(driver, root);
    try {
      await this.connect();
    } catch (error) {
      const e = error as ToolbeltError;
      throw this.#error(
        `${this.label} cannot be reached again${before ? ` (the link ended: ${before})` : ""}: ${e.message}`,
      );
    }
  }

  /** Kills the workspace's server by the pid it reported (its process group first), if it still runs. */
  async #endServer(driver: WorkspaceDriver, root: string): Promise<void> {
    const pid = this.#serverPid;
    this.#serverPid = undefined;
    if (!pid) return;
    await driver
      .run(["sh", "-c", `kill -KILL -${pid} 2>/dev/null || kill -KILL ${pid} 2>/dev/null; exit 0`], root)
      .catch(() => undefined);
  }

  /**
   * Ends the link: the workspace's toolbelt sees its stdin close and closes its session (its
   * commands, language servers); one that does not end in time is killed there.
   */
  async close(): Promise<void> {
    if (this.#state === "closed") return;
    const wasUp = this.#state === "up";
    this.#state = "closed";
    const channel = this.#channel;
    try {
      await this.#client?.close();
    } catch {
      // Closing a link that is already down.
    }
    if (!channel) return;
    channel.stdin.end();
    const ended = await within(channel.ended, CLOSE_GRACE_MS);
    if (!ended || !wasUp) await this.#endServer(this.#options.driver, this.#options.root);
    channel.destroy();
  }
}

class TimeoutError extends Error {}

/** The promise's value if it settles within `ms`, else undefined. */
function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new TimeoutError(`timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function lastLines(text: string, lines = 5): string {
  return text.split("\n").slice(-lines).join(" | ");
}

const payloadShape = z.looseObject({ kind: z.string() });

/** A tools/call result as the payload the workspace's session returned, and its text. */
function resultOf(name: string, result: CallToolResult): { payload: Payload; text: string | undefined } {
  const text = result.content?.find((c) => c.type === "text");
  const parsed = payloadShape.safeParse(result.structuredContent);
  if (parsed.success)
    return { payload: parsed.data as Payload, text: text?.type === "text" ? text.text : undefined };
  // Not toolbelt's answer (a server that failed before a session existed says so in text).
  const message = text?.type === "text" ? text.text : "no result";
  return {
    payload: errorPayload(
      "EWORKSPACE",
      `the workspace answered ${name} without a payload: ${message.slice(0, 500)}`,
    ) as ErrorPayload,
    text: undefined,
  };
}

const approvalShape = z.object({
  request_id: z.string(),
  tool: z.string(),
  family: z.string(),
  access: z.string(),
  summary: z.string(),
  input: z.unknown().optional(),
});

const questionShape = z.object({
  question_id: z.string(),
  questions: z
    .array(
      z.object({
        question: z.string(),
        options: z.array(z.string()),
        multiple: z.boolean().optional(),
        header: z.string().optional(),
      }),
    )
    .min(1),
  timeout_seconds: z.number().optional(),
});

/**
 * Answers an elicitation of the workspace with the host's own client: an approval by its approver,
 * a question by its `ask`, each given as data in the elicitation's `_meta`. Anything else (or a
 * client that cannot) is declined: nobody on the host was asked.
 */
async function answer(
  client: ClientInfo,
  params: ElicitRequest["params"],
  signal: AbortSignal,
): Promise<ElicitResult> {
  const meta = (params._meta ?? {}) as Record<string, unknown>;
  const approval = approvalShape.safeParse(meta[APPROVAL_META]);
  if (approval.success && client.approve) {
    let approved = false;
    try {
      approved = (await client.approve(approval.data as ApprovalPrompt)) === true;
    } catch {
      // An approver that fails has not approved.
    }
    return { action: "accept", content: { allow: approved } };
  }
  const question = questionShape.safeParse(meta[QUESTION_META]);
  if (question.success && client.ask) {
    const request = question.data as QuestionRequest;
    try {
      return { action: "accept", content: questionForm(request, await client.ask(request, signal)) };
    } catch {
      return { action: "cancel" };
    }
  }
  return { action: "decline" };
}

/**
 * An answer as the form `serve --mcp` asks questions with (askByElicitation): `q<N>` the chosen
 * option (or options, or the text when a question has none), `q<N>_other` a typed answer, `notes`.
 */
export function questionForm(
  request: QuestionRequest,
  response: QuestionResponse,
): Record<string, string | string[]> {
  const content: Record<string, string | string[]> = {};
  request.questions.forEach((q, i) => {
    const key = `q${i + 1}`;
    const given = response.answers[i];
    if (!given) return;
    const picked = (given.options ?? []).map((n) => q.options[n]).filter((o): o is string => o !== undefined);
    if (q.options.length === 0) {
      if (given.text !== undefined) content[key] = given.text;
      return;
    }
    const [first] = picked;
    if (first !== undefined) content[key] = q.multiple ? picked : first;
    if (given.text !== undefined) content[`${key}_other`] = given.text;
  });
  if (response.notes !== undefined) content.notes = response.notes;
  return content;
}
