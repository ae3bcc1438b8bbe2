import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";
import { realpathSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  CallToolRequestParamsSchema,
  type ElicitRequestFormParams,
  ElicitResultSchema,
  type JSONRPCRequest,
  ListRootsResultSchema,
  McpError,
  ErrorCode as McpErrorCode,
  PaginatedRequestParamsSchema,
  RootsListChangedNotificationSchema,
  type ServerNotification,
  type ServerRequest,
  SetLevelRequestParamsSchema,
} from "@modelcontextprotocol/sdk/types.js";
import {
  type ApprovalPrompt,
  type BeforeToolCallHook,
  type ClientInfo,
  definePlugin,
  escapeText,
  type Payload,
  payloadImages,
  type Session,
  ToolbeltError,
  type ToolbeltEvent,
  toMcpTool,
  visibleText,
} from "@toolbelt/core";
import { ENV, readEnv } from "@toolbelt/core/internal";
import type { QuestionRequest, QuestionResponse } from "@toolbelt/ui/contrib";
import type { z } from "zod";
import { commandDidNotRun, commandFailure } from "./command-failure.js";
import { openToolbelt, type ToolbeltOptions } from "./create.js";
import {
  atLeast,
  DEFAULT_LOG_LEVEL,
  type LogLevel,
  type LogNotice,
  progressOf,
  SessionNotices,
} from "./mcp-notices.js";
import { DEFAULT_MAX_MESSAGE_BYTES, LineTransport } from "./mcp-stdio.js";
import {
  APPROVAL_META,
  CHECKPOINTS_REQUEST,
  checkpointsRequestSchema,
  QUESTION_META,
} from "./workspace-protocol.js";
import {
  answerCheckpoints,
  capabilitiesFor,
  eventsToHost,
  hostCallId,
  hostRequestOf,
  workspaceServerCapability,
} from "./workspace-serve.js";

export type McpServeOptions = Omit<ToolbeltOptions, "client"> & {
  /** The server's version as told to clients. */
  version?: string;
  /** How long a person may take to answer an elicitation (default 10 min). */
  elicitationTimeoutMs?: number;
  /**
   * The largest JSON-RPC message read (default 16 MiB, or TOOLBELT_MCP_MAX_MESSAGE_BYTES); a bigger
   * one is skipped and answered with a -32600 error (stdio), or 413 (HTTP).
   */
  maxMessageBytes?: number;
  /**
   * Whether a shell command that exits non-zero or is killed by a signal is `isError: true` (default
   * true, as `--fail-on-command-error` makes it a failure for run and exec). A timeout and a command
   * the shell could not start (126, 127) are `isError: true` either way.
   */
  failOnCommandError?: boolean;
};

type FormSchema = ElicitRequestFormParams["requestedSchema"];

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/**
 * The tools/call being run: its request's channel back to the client (so what the call asks or
 * tells goes out on that request's stream, which over HTTP is the one the client is reading), its
 * signal (an approval it asks for is withdrawn when the client cancels), and its progress token.
 * Found through the async context: the session's approver and event listeners get no call handle.
 */
type CallContext = {
  callId: string;
  extra: Extra;
  progressToken: string | number | undefined;
  progress: number;
  /** Set when the call answered: a process it started may still emit, but no longer as its progress. */
  done: boolean;
};

/** One MCP connection: its session (opened after the handshake) lives until `closed`. */
export interface McpConnection {
  /** Resolves once the transport closed and the session was closed (its processes ended). */
  closed: Promise<void>;
  /** Closes the transport, then the session. */
  close(): Promise<void>;
}

/**
 * `toolbelt serve --mcp` on stdio: the session's bound tools over MCP. Resolves when the client
 * goes (stdin closes).
 */
export async function serveMcp(
  options: McpServeOptions,
  transport: Transport = new LineTransport(process.stdin, process.stdout, {
    maxMessageBytes: maxMessageBytesOf(options),
  }),
): Promise<void> {
  await (await connectMcp(options, transport)).closed;
}

/**
 * Serves one toolbelt session over one MCP transport (stdio, or one streamable-HTTP MCP session).
 * The session is created from the capabilities the client's `initialize` request declares, because
 * what the client can do (elicitation) decides which tools are bound.
 */
export async function connectMcp(options: McpServeOptions, transport: Transport): Promise<McpConnection> {
  const {
    version = "0.0.0",
    elicitationTimeoutMs = 10 * 60_000,
    maxMessageBytes: _max,
    failOnCommandError = true,
    ...toolbeltOptions
  } = options;
  const server = new Server(
    { name: "toolbelt", version },
    {
      capabilities: {
        tools: { listChanged: true },
        logging: {},
        // A toolbelt host driving this one as its workspace: see workspace-serve.ts.
        experimental: workspaceServerCapability(),
      },
      instructions:
        "toolbelt: file, search, edit and shell tools working inside one project root. When tool_search is listed, more tools exist: call it to bind them (the tool list then changes).",
    },
  );
  const calls = new AsyncLocalStorage<CallContext>();
  const running = (): CallContext | undefined => {
    const call = calls.getStore();
    return call && !call.done ? call : undefined;
  };

  // A notification about a call goes on that call's stream; anything else, and anything after the
  // client cancelled the call (the SDK drops what a cancelled request sends), on the session's own.
  const notify = (notification: ServerNotification): void => {
    const call = running();
    const sent =
      call && !call.extra.signal.aborted
        ? call.extra.sendNotification(notification)
        : server.notification(notification);
    sent.catch(() => {});
  };

  let logLevel: LogLevel = DEFAULT_LOG_LEVEL;
  const log = (notice: LogNotice | { level: LogLevel; data: unknown }): void => {
    if (!atLeast(notice.level, logLevel)) return;
    notify({
      method: "notifications/message",
      params: { level: notice.level, logger: "toolbelt", data: notice.data },
    });
  };

  // Withdrawn when the call is cancelled, or when what asked stops waiting (a question's own timeout).
  const elicit: Elicit = async (message, requestedSchema, signal, meta) => {
    const request = {
      method: "elicitation/create" as const,
      params: { message, requestedSchema, ...(meta ? { _meta: meta } : {}) },
    };
    const call = running();
    const signals = [call?.extra.signal, signal].filter((s): s is AbortSignal => s !== undefined);
    const options = {
      timeout: elicitationTimeoutMs,
      ...(signals.length > 0 ? { signal: AbortSignal.any(signals) } : {}),
    };
    const result = call
      ? await call.extra.sendRequest(request, ElicitResultSchema, options)
      : await server.request(request, ElicitResultSchema, options);
    return result as { action: string; content?: Record<string, unknown> };
  };

  const roots = new ClientRoots(server);
  server.setNotificationHandler(RootsListChangedNotificationSchema, () => roots.changed());

  const notices = new SessionNotices();
  let ready = false;
  const onEvent = (event: ToolbeltEvent): void => {
    const call = running();
    if (call?.progressToken !== undefined) {
      const message = progressOf(event, call.callId);
      if (message !== undefined)
        notify({
          method: "notifications/progress",
          params: { progressToken: call.progressToken, progress: ++call.progress, message },
        });
    }
    const notice = notices.of(event);
    if (notice) log(notice);
    // The full event (a tool_result repeats the whole result) only for a client that asked for debug.
    if (logLevel === "debug") log({ level: "debug", data: event });
    // tool_search (or a plugin, or a switched project) changed the bound set: the client re-lists.
    if (event.type === "tools_bound" && ready) notify({ method: "notifications/tools/list_changed" });
  };
  // Subscribed while the session starts, so the notices of its start (settings an untrusted project
  // lost) go out too.
  const listener = definePlugin({
    name: "mcp-notices",
    tools: [],
    setup(session) {
      if (session.isRoot) session.on("*", onEvent);
    },
  });

  let session: Promise<Session> | undefined;
  const ensureSession = (): Promise<Session> => {
    session ??= (async () => {
      const canElicit = server.getClientCapabilities()?.elicitation !== undefined;
      // A toolbelt host (workspace-serve.ts) says what its client can do, and whether anyone approves.
      const host = hostRequestOf(server.getClientCapabilities());
      const client: ClientInfo = {
        name: server.getClientVersion()?.name ?? "mcp client",
        // ask_user_question is bound only when a person can be asked.
        capabilities: capabilitiesFor(host, canElicit),
        ...(canElicit
          ? {
              ...(host && !host.approve
                ? {}
                : { approve: (prompt: ApprovalPrompt) => approveByElicitation(elicit, prompt) }),
              ask: (request: QuestionRequest, signal: AbortSignal) =>
                askByElicitation(elicit, request, signal),
            }
          : {}),
      };
      const rootsHook: BeforeToolCallHook = async (call) => {
        const refused = await roots.refusal(call.root, running()?.extra);
        return refused === undefined ? undefined : { decision: "deny", message: refused };
      };
      const created = await openToolbelt({
        ...toolbeltOptions,
        client,
        ...(host?.policy ? { hostPolicy: host.policy } : {}),
        plugins: [
          ...(toolbeltOptions.plugins ?? []),
          listener,
          ...(host?.events ? [eventsToHost(server)] : []),
        ],
        hooks: {
          ...toolbeltOptions.hooks,
          beforeToolCall: [rootsHook, ...(toolbeltOptions.hooks?.beforeToolCall ?? [])],
        },
      });
      ready = true;
      return created;
    })();
    return session;
  };

  const sessionOrError = async (): Promise<Session> => {
    try {
      return await ensureSession();
    } catch (error) {
      throw new McpError(
        McpErrorCode.InternalError,
        `toolbelt could not start a session: ${(error as Error).message}`,
      );
    }
  };

  const handlers: { [method: string]: RequestHandler } = {
    "tools/list": handler(PaginatedRequestParamsSchema.optional(), async () => {
      const s = await sessionOrError();
      return { tools: s.bind().tools.map(toMcpTool) };
    }),
    "tools/call": handler(CallToolRequestParamsSchema, async (params, extra) => {
      const s = await sessionOrError();
      const name = params.name;
      const binding = s.bindings().find((b) => b.name === name);
      const call: CallContext = {
        // A toolbelt host driving this one names the call, so its events and approvals match its own.
        callId: hostCallId(params._meta) ?? randomUUID(),
        extra,
        progressToken: params._meta?.progressToken,
        progress: 0,
        done: false,
      };
      let outcome: { payload: Payload; text: string };
      try {
        outcome = await calls.run(call, () =>
          s.callWithText(name, params.arguments ?? {}, { signal: extra.signal, callId: call.callId }),
        );
      } finally {
        call.done = true;
      }
      const { payload, text } = outcome;
      // A tool that is not there (or not bound yet) is the client's protocol mistake, not a result.
      if ((!binding || binding.deferred) && payload.kind === "error" && payload.code === "EUNKNOWN_TOOL")
        throw new McpError(McpErrorCode.InvalidParams, String(payload.message));
      const isError =
        payload.kind === "error" ||
        commandDidNotRun(payload) ||
        (failOnCommandError && commandFailure(payload) !== undefined);
      return {
        content: [{ type: "text" as const, text }, ...imageBlocks(payload)],
        structuredContent: payload,
        isError,
      };
    }),
    // A toolbelt host asks for the checkpoints recorded here; to any other client the method does not
    // exist (checked before its params, so nothing about it is told).
    [CHECKPOINTS_REQUEST]: async (method, params, extra) => {
      if (!hostRequestOf(server.getClientCapabilities()))
        throw new McpError(McpErrorCode.MethodNotFound, `Method not found: ${method}`);
      return checkpointsHandler(method, params, extra);
    },
    "logging/setLevel": handler(SetLevelRequestParamsSchema, async (params) => {
      logLevel = params.level;
      return {};
    }),
  };
  const checkpointsHandler = handler(checkpointsRequestSchema, async (params, extra) => {
    const s = await sessionOrError();
    // A restore that asks for approval asks on this request's stream, withdrawn if it is cancelled.
    const call: CallContext = {
      callId: randomUUID(),
      extra,
      progressToken: undefined,
      progress: 0,
      done: false,
    };
    try {
      return await calls.run(call, () => answerCheckpoints(s, params));
    } finally {
      call.done = true;
    }
  });

  // Every request but initialize and ping comes here, so each is checked alike: the handshake first,
  // then its params (a one-line -32602 naming the field, not the SDK's dump of the whole schema).
  server.removeRequestHandler("logging/setLevel");
  server.fallbackRequestHandler = async (request: JSONRPCRequest, extra: Extra) => {
    const run = handlers[request.method];
    if (!run) throw new McpError(McpErrorCode.MethodNotFound, `Method not found: ${request.method}`);
    if (server.getClientCapabilities() === undefined)
      throw new McpError(
        McpErrorCode.InvalidRequest,
        `${request.method} came before the handshake: send initialize first (then notifications/initialized)`,
      );
    return run(request.method, request.params, extra);
  };

  server.oninitialized = () => {
    // The session starts now, while the client reads the answer. A client that sent initialized
    // without waiting for that answer may get here before initialize was handled: its session then
    // starts with its first request instead, never without the capabilities it declared.
    if (server.getClientCapabilities() === undefined) return;
    ensureSession().catch((error: unknown) => {
      const message = `toolbelt could not start a session: ${(error as Error).message}`;
      process.stderr.write(`toolbelt: ${message}\n`);
      log({ level: "error", data: { message } });
    });
  };

  const closed = new Promise<void>((resolve) => {
    server.onclose = () => {
      // A session that failed to start has nothing to close.
      void (session ?? Promise.resolve(undefined))
        .catch(() => undefined)
        .then((s) => s?.close())
        .finally(resolve);
    };
  });
  await server.connect(transport);
  return {
    closed,
    async close() {
      await server.close();
      await closed;
    },
  };
}

type RequestHandler = (method: string, params: unknown, extra: Extra) => Promise<Record<string, unknown>>;

/** A request handler whose params are checked first: the first problem, on one line, as -32602. */
function handler<S extends z.ZodType>(
  schema: S,
  run: (params: z.output<S>, extra: Extra) => Promise<Record<string, unknown>>,
): RequestHandler {
  return (method, params, extra) => {
    const parsed = schema.safeParse(params);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where = issue?.path.length ? issue.path.join(".") : "params";
      throw new McpError(
        McpErrorCode.InvalidParams,
        `invalid ${method} params: ${where}: ${escapeText(issue?.message ?? "not valid", { reversible: false })}`,
      );
    }
    return run(parsed.data, extra);
  };
}

/**
 * The roots a client declares (`roots/list`), asked on the first call and again after
 * `notifications/roots/list_changed`, and the check that the served root is inside one of them.
 */
class ClientRoots {
  #roots: Promise<string[]> | undefined;
  constructor(private readonly server: Server) {}

  changed(): void {
    this.#roots = undefined;
  }

  /** Why a call in `root` is refused, or undefined when the client declares no roots or one holds it. */
  async refusal(root: string, extra: Extra | undefined): Promise<string | undefined> {
    if (this.server.getClientCapabilities()?.roots === undefined) return undefined;
    const request = { method: "roots/list" as const };
    this.#roots ??= (
      extra ? extra.sendRequest(request, ListRootsResultSchema) : this.server.listRoots()
    ).then((answer) => answer.roots.map((r) => r.uri));
    let uris: string[];
    try {
      uris = await this.#roots;
    } catch (error) {
      this.#roots = undefined;
      return `the client declares roots but did not list them (${(error as Error).message}); the call was not run`;
    }
    const dirs = uris.filter((uri) => uri.startsWith("file:")).flatMap((uri) => directoryOf(uri));
    // No directory named: the client does not narrow the filesystem, and the served root stands.
    if (dirs.length === 0) return undefined;
    if (dirs.some((dir) => inside(dir, root))) return undefined;
    return `this server works in ${root}, which is outside the roots the client allows (${uris.join(", ")}): add the project to the client's roots, or start toolbelt serve --mcp with --root inside one of them`;
  }
}

function directoryOf(uri: string): string[] {
  try {
    const dir = fileURLToPath(uri);
    try {
      return [realpathSync(dir)];
    } catch {
      return [path.resolve(dir)];
    }
  } catch {
    return [];
  }
}

function inside(dir: string, target: string): boolean {
  const rel = path.relative(dir, target);
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

/**
 * The images a result carries (read_file of a .png, a notebook's image outputs) as MCP image blocks,
 * so clients show them, not only their base64.
 */
function imageBlocks(payload: Payload): Array<{ type: "image"; data: string; mimeType: string }> {
  return payloadImages(payload).map((image) => ({
    type: "image",
    data: image.base64,
    mimeType: image.mime_type,
  }));
}

export function maxMessageBytesOf(options: Pick<McpServeOptions, "maxMessageBytes">): number {
  if (options.maxMessageBytes !== undefined) return options.maxMessageBytes;
  return readEnv(ENV.TOOLBELT_MCP_MAX_MESSAGE_BYTES) ?? DEFAULT_MAX_MESSAGE_BYTES;
}

type Elicit = (
  message: string,
  schema: FormSchema,
  signal?: AbortSignal,
  /** What is asked, as data, for a toolbelt host that answers it in kind (workspace-protocol.ts). */
  meta?: Record<string, unknown>,
) => Promise<{ action: string; content?: Record<string, unknown> }>;

async function approveByElicitation(elicit: Elicit, prompt: ApprovalPrompt): Promise<boolean> {
  // The whole call, never cut (a client shows or scrolls it): the summary arrives escaped from
  // core; the input is JSON, which leaves bidi and zero-width characters and space runs as they are.
  const summary = escapeText(prompt.summary, { reversible: false });
  const json = prompt.input === undefined ? undefined : JSON.stringify(prompt.input);
  const input = json === undefined ? "" : `\ninput: ${visibleText(json, { reversible: false }).text}`;
  const result = await elicit(
    `toolbelt wants to run ${prompt.tool} (${prompt.access}): ${summary}${input}`,
    {
      type: "object",
      properties: {
        allow: { type: "boolean", title: "Allow this call", description: summary, default: false },
      },
      required: ["allow"],
    },
    undefined,
    { [APPROVAL_META]: prompt },
  );
  return result.action === "accept" && result.content?.allow === true;
}

async function askByElicitation(
  elicit: Elicit,
  request: QuestionRequest,
  signal: AbortSignal,
): Promise<QuestionResponse> {
  const properties: FormSchema["properties"] = {};
  request.questions.forEach((q, i) => {
    const key = `q${i + 1}`;
    const title = q.header ?? `Question ${i + 1}`;
    if (q.options.length === 0) properties[key] = { type: "string", title, description: q.question };
    else if (q.multiple)
      properties[key] = {
        type: "array",
        title,
        description: q.question,
        items: { type: "string", enum: q.options },
      };
    else properties[key] = { type: "string", title, description: q.question, enum: q.options };
    if (q.options.length > 0)
      properties[`${key}_other`] = {
        type: "string",
        title: `${title}: other answer`,
        description: "optional",
      };
  });
  properties.notes = { type: "string", title: "Notes", description: "optional" };
  const message = request.questions.map((q) => q.question).join("\n");
  const result = await elicit(message, { type: "object", properties }, signal, { [QUESTION_META]: request });
  if (result.action !== "accept")
    throw new ToolbeltError("ECANCELLED", `the user chose ${result.action} instead of answering`);
  const content = result.content ?? {};
  const answers = request.questions.map((q, i) => {
    const key = `q${i + 1}`;
    const value = content[key];
    const picked = (Array.isArray(value) ? value : value === undefined ? [] : [value])
      .map((v) => q.options.indexOf(String(v)))
      .filter((index) => index >= 0);
    const text = q.options.length === 0 ? content[key] : content[`${key}_other`];
    return {
      ...(picked.length ? { options: picked } : {}),
      ...(typeof text === "string" && text !== "" ? { text } : {}),
    };
  });
  const notes = content.notes;
  return typeof notes === "string" && notes !== "" ? { answers, notes } : { answers };
}
