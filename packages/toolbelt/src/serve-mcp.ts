import { AsyncLocalStorage } from "node:async_hooks";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  CallToolRequestSchema,
  ElicitResultSchema,
  ListToolsRequestSchema,
  McpError,
  ErrorCode as McpErrorCode,
  SetLevelRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import {
  type ApprovalPrompt,
  type ClientInfo,
  escapeText,
  type Payload,
  payloadImages,
  type Session,
  ToolbeltError,
  toMcpTool,
  visibleText,
} from "@toolbelt/core";
import { ENV, readEnv } from "@toolbelt/core/internal";
import type { QuestionRequest, QuestionResponse } from "@toolbelt/ui/contrib";
import { openToolbelt, type ToolbeltOptions } from "./create.js";
import { DEFAULT_MAX_MESSAGE_BYTES, LineTransport } from "./mcp-stdio.js";
import { APPROVAL_META, QUESTION_META } from "./workspace-protocol.js";
import {
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
   * The largest JSON-RPC message read from stdin (default 16 MiB, or TOOLBELT_MCP_MAX_MESSAGE_BYTES);
   * a bigger one is skipped and answered with a -32600 error.
   */
  maxMessageBytes?: number;
};

type FormSchema = {
  type: "object";
  properties: Record<string, Record<string, unknown>>;
  required?: string[];
};

/**
 * `toolbelt serve --mcp`: the session's bound tools over MCP. The session is created after the
 * initialize handshake, because what the client can do (elicitation) decides which tools are bound.
 * Resolves when the transport closes.
 */
export async function serveMcp(
  options: McpServeOptions,
  transport: Transport = new LineTransport(process.stdin, process.stdout, {
    maxMessageBytes: maxMessageBytesOf(options),
  }),
): Promise<void> {
  const {
    version = "0.0.0",
    elicitationTimeoutMs = 10 * 60_000,
    maxMessageBytes: _max,
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

  const elicit = async (
    message: string,
    requestedSchema: FormSchema,
    signal?: AbortSignal,
    meta?: Record<string, unknown>,
  ): Promise<{ action: string; content?: Record<string, unknown> }> => {
    const result = await server.request(
      {
        method: "elicitation/create",
        params: { message, requestedSchema, ...(meta ? { _meta: meta } : {}) },
      },
      ElicitResultSchema,
      { timeout: elicitationTimeoutMs, ...(signal ? { signal } : {}) },
    );
    return result as { action: string; content?: Record<string, unknown> };
  };

  // The tools/call being run, so an approval it asks for is withdrawn (the elicitation cancelled)
  // when the client cancels the call: the session's approver itself gets no signal.
  const callSignal = new AsyncLocalStorage<AbortSignal>();
  const elicitForCall: Elicit = (message, schema, signal, meta) =>
    elicit(message, schema, signal ?? callSignal.getStore(), meta);

  let logLevel: string | undefined;
  server.setRequestHandler(SetLevelRequestSchema, async (request) => {
    logLevel = request.params.level;
    return {};
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
                : { approve: (prompt: ApprovalPrompt) => approveByElicitation(elicitForCall, prompt) }),
              ask: (request: QuestionRequest, signal: AbortSignal) =>
                askByElicitation(elicit, request, signal),
            }
          : {}),
      };
      const created = await openToolbelt({
        ...toolbeltOptions,
        client,
        ...(host?.policy ? { hostPolicy: host.policy } : {}),
        ...(host?.events ? { plugins: [...(toolbeltOptions.plugins ?? []), eventsToHost(server)] } : {}),
      });
      // tool_search (or a plugin, or a switched project) changed the bound set: the client re-lists.
      created.on("tools_bound", () => {
        server.sendToolListChanged().catch(() => {});
      });
      // The event stream goes out as debug log messages, only to a client that asked for debug
      // logs: a tool_result event repeats the whole result, which nobody else should pay for.
      created.on("*", (event) => {
        if (logLevel !== "debug") return;
        server.sendLoggingMessage({ level: "debug", logger: "toolbelt", data: event }).catch(() => {});
      });
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

  server.setRequestHandler(ListToolsRequestSchema, async () => {
    const s = await sessionOrError();
    return { tools: s.bind().tools.map(toMcpTool) };
  });

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const s = await sessionOrError();
    const callId = hostCallId(request.params._meta);
    const { payload, text } = await callSignal.run(extra.signal, () =>
      s.callWithText(request.params.name, request.params.arguments ?? {}, {
        signal: extra.signal,
        ...(callId ? { callId } : {}),
      }),
    );
    return {
      content: [{ type: "text" as const, text }, ...imageBlocks(payload)],
      structuredContent: payload,
      isError: payload.kind === "error",
    };
  });

  server.oninitialized = () => {
    ensureSession().catch((error: unknown) => {
      process.stderr.write(`toolbelt: ${(error as Error).message}\n`);
    });
  };

  const closed = new Promise<void>((resolve) => {
    server.onclose = () => resolve();
  });
  await server.connect(transport);
  await closed;
  if (session) await (await session.catch(() => undefined))?.close();
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

function maxMessageBytesOf(options: McpServeOptions): number {
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
