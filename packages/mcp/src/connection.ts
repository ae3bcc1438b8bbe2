import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  type CallToolResult,
  ElicitRequestSchema,
  ErrorCode,
  McpError,
  type Tool,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { ToolbeltError } from "@toolbelt/core";
import { ENV, readEnv } from "@toolbelt/core/internal";
import type { ElicitationResult } from "./contrib.js";
import type { Elicited } from "./elicitation.js";
import { type ServerSpec, unattendedGrant } from "./server-config.js";

export type ServerState = "starting" | "ready" | "failed" | "crashed" | "closed";

/** How long a server may take to start and list its tools (TOOLBELT_MCP_START_TIMEOUT_MS). */
export const DEFAULT_START_TIMEOUT_MS = 20_000;
/** How long one call may take (TOOLBELT_MCP_CALL_TIMEOUT_MS); progress notifications extend it. */
export const DEFAULT_CALL_TIMEOUT_MS = 120_000;

const STDERR_TAIL_CHARS = 2_000;
/** Tools kept from one server's listing; the registered ones are fewer still (MCP_LIMITS). */
const MAX_LISTED_TOOLS = 1_000;
/** Elicitations remembered per server for call results. */
const MAX_ELICITED = 50;
// Tools of a list_changed burst are fetched once.
const RELIST_DEBOUNCE_MS = 50;

/** The environment a stdio server gets: ours (minus nesting state), then the entry's env on top. */
function childEnv(spec: ServerSpec & { transport: "stdio" }): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) if (value !== undefined) env[key] = value;
  // A toolbelt started as a server counts how deep it is, so a project naming itself cannot recurse forever.
  env[ENV.TOOLBELT_MCP_DEPTH.name] = String(mcpDepth() + 1);
  return { ...env, ...spec.env };
}

/** How many toolbelt MCP clients started this process (0 for a toolbelt started by a person). */
export function mcpDepth(): number {
  return readEnv(ENV.TOOLBELT_MCP_DEPTH) ?? 0;
}

function withTimeout<T>(promise: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(onTimeout()), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Answers a server's `elicitation/create` (form mode); the result is already checked against the form. */
export type ElicitHandler = (
  params: { message: string; requestedSchema: unknown },
  signal: AbortSignal,
) => Promise<ElicitationResult & { by: Elicited["by"] }>;

export type ConnectionHooks = {
  /**
   * Offers elicitation (form mode) to the server and answers its requests. Without it the capability
   * is not advertised.
   */
  elicit?: ElicitHandler;
  /** After notifications/tools/list_changed, once the new list is in `tools`. */
  onToolsChanged?: (connection: McpConnection) => void;
  /** When a server that was ready stops. */
  onDown?: (connection: McpConnection) => void;
};

/** What a failed start says, with the login command when the server asked for a sign-in. */
function signInHint(spec: ServerSpec, error: Error): string {
  if (spec.transport === "stdio") return error.message;
  if (spec.oauth?.grant === "client_credentials")
    // The SDK's OAuth errors are named after the OAuth error code (InvalidClientError, ...).
    return /^(InvalidClient|UnauthorizedClient|InvalidGrant|UnauthorizedError)/.test(error.name) ||
      /\b40[13]\b/.test(error.message)
      ? `its authorization server refused toolbelt's client credentials (${error.message}): check oauth.client_id and the secret or key`
      : error.message;
  if (spec.oauth?.grant === "cross_app_access")
    return /^(InvalidClient|UnauthorizedClient|InvalidGrant|UnauthorizedError)/.test(error.name)
      ? `its authorization server refused the identity assertion grant or toolbelt's client (${error.message}): check oauth.client_id, its secret and oauth.idp_* (is the ID token still valid?)`
      : error.message;
  const status = (error as { code?: unknown }).code;
  if (error.name === "UnauthorizedError" || status === 401 || /\b401\b|invalid_token/.test(error.message))
    return `it asks for a sign-in (${error.message}): run \`toolbelt mcp login ${spec.name}\``;
  return error.message;
}

/** One configured MCP server: its process or HTTP endpoint, its state and its tools. */
export class McpConnection {
  readonly spec: ServerSpec;
  state: ServerState = "starting";
  /** Why the server is not ready, in words that name it. */
  error: string | undefined;
  /** The server's tools as listed, at most MAX_LISTED_TOOLS of them. */
  tools: Tool[] = [];
  /** How many tools the server listed, including those beyond MAX_LISTED_TOOLS. */
  listed = 0;
  serverVersion: string | undefined;
  startedInMs: number | undefined;
  #client: Client | undefined;
  #transport: Transport | undefined;
  #stderr = "";
  #closing = false;
  #relistTimer: NodeJS.Timeout | undefined;
  /** A signed-in HTTP server's pending step-up, as the error a refused call reports. */
  #stepUp: (() => ToolbeltError | undefined) | undefined;
  readonly #hooks: ConnectionHooks;
  /** Elicitations being answered now, and when the server last showed life (progress, an answer). */
  #asking = 0;
  #touched = 0;
  /** What the server asked the user lately and what it got, for the results of the calls it asked in. */
  readonly #elicited: Array<Elicited & { seq: number }> = [];
  #elicitedSeq = 0;

  constructor(spec: ServerSpec, hooks: ConnectionHooks = {}) {
    this.spec = spec;
    this.#hooks = hooks;
  }

  get name(): string {
    return this.spec.name;
  }

  /** The last lines the server wrote to stderr (stdio servers), for crash reports. */
  get stderrTail(): string {
    return this.#stderr.trim();
  }

  // Each transport is imported when a server uses it: a stdio server does not load the HTTP ones
  // (their SSE and OAuth dependencies), nor an HTTP server the process-spawning one.
  async #transportFor(spec: ServerSpec): Promise<Transport> {
    if (spec.transport === "stdio") {
      const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
      const transport = new StdioClientTransport({
        command: spec.command,
        args: spec.args,
        env: childEnv(spec),
        cwd: spec.cwd,
        stderr: "pipe",
      });
      transport.stderr?.on("data", (chunk: Buffer) => {
        this.#stderr = (this.#stderr + chunk.toString("utf8")).slice(-STDERR_TAIL_CHARS);
      });
      return transport;
    }
    const requestInit = { headers: spec.headers };
    // Signed in with `toolbelt mcp login`: the stored tokens go with every request, refreshed and
    // stepped up by the SDK. Not signed in: no provider, so a server that asks for OAuth fails with a
    // message naming the login command instead of registering a client at every session start.
    // A call refused for want of scope (403 insufficient_scope) is remembered as the sign-in's
    // step-up: nobody can approve a wider grant mid-session, so the call fails naming the login that can.
    // A client_credentials or cross_app_access server needs no sign-in: toolbelt gets its own token,
    // unattended.
    const {
      clientCredentialsProvider,
      crossAppAccessProvider,
      readSignIn,
      StoredOAuthProvider,
      stepUpNeeded,
      stepUpRecordingFetch,
    } = await import("./oauth.js");
    const oauth = unattendedGrant(spec.oauth) ? spec.oauth : undefined;
    const signedIn = !oauth && readSignIn(spec.url)?.tokens !== undefined;
    if (signedIn) this.#stepUp = () => stepUpNeeded(spec);
    const auth = oauth
      ? {
          authProvider:
            oauth.grant === "client_credentials"
              ? await clientCredentialsProvider({ ...oauth, grant: oauth.grant })
              : crossAppAccessProvider({ ...oauth, grant: oauth.grant }, spec.url),
        }
      : signedIn
        ? { authProvider: new StoredOAuthProvider(spec), fetch: stepUpRecordingFetch(spec) }
        : {};
    if (spec.transport === "sse") {
      const { SSEClientTransport } = await import("@modelcontextprotocol/sdk/client/sse.js");
      return new SSEClientTransport(new URL(spec.url), { requestInit, ...auth });
    }
    const { StreamableHTTPClientTransport } = await import(
      "@modelcontextprotocol/sdk/client/streamableHttp.js"
    );
    return new StreamableHTTPClientTransport(new URL(spec.url), { requestInit, ...auth });
  }

  /** Connects and lists the tools within `timeoutMs`; never throws (the state says what happened). */
  async start(
    timeoutMs = readEnv(ENV.TOOLBELT_MCP_START_TIMEOUT_MS) ?? DEFAULT_START_TIMEOUT_MS,
  ): Promise<void> {
    const started = performance.now();
    const elicit = this.#hooks.elicit;
    const client = new Client(
      { name: "toolbelt", version: "0.1.0" },
      { capabilities: elicit ? { elicitation: { form: {} } } : {} },
    );
    this.#client = client;
    if (elicit)
      client.setRequestHandler(ElicitRequestSchema, async (request, extra) => {
        const params = request.params as { message: string; requestedSchema?: unknown };
        // A person answering is no idle server: the calls waiting on it do not time out meanwhile.
        this.#asking++;
        try {
          const result = await elicit(
            { message: params.message, requestedSchema: params.requestedSchema },
            extra.signal,
          );
          this.#elicited.push({
            seq: this.#elicitedSeq++,
            message: params.message,
            action: result.action,
            by: result.by,
            ...(result.reason ? { reason: result.reason } : {}),
          });
          if (this.#elicited.length > MAX_ELICITED)
            this.#elicited.splice(0, this.#elicited.length - MAX_ELICITED);
          return result.action === "accept"
            ? { action: "accept", content: result.content ?? {} }
            : { action: result.action };
        } finally {
          this.#asking--;
          this.#touched = performance.now();
        }
      });
    try {
      const transport = await this.#transportFor(this.spec);
      // Closed while the transport module loaded: nothing was spawned or connected yet.
      if (this.#closing) return;
      this.#transport = transport;
      client.onclose = () => this.#closed();
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => this.#scheduleRelist());
      await withTimeout(
        (async () => {
          await client.connect(transport);
          await this.#listAll();
        })(),
        timeoutMs,
        () => new Error(`did not start within ${Math.round(timeoutMs / 100) / 10}s`),
      );
      if (this.state !== "starting") return;
      this.serverVersion = client.getServerVersion()?.version;
      this.startedInMs = Math.round(performance.now() - started);
      this.state = "ready";
    } catch (error) {
      this.state = "failed";
      this.error = this.#explain(`failed to start: ${signInHint(this.spec, error as Error)}`);
      await this.#shutdown();
    }
  }

  async #listAll(): Promise<void> {
    const client = this.#client;
    if (!client) return;
    const tools: Tool[] = [];
    let listed = 0;
    let cursor: string | undefined;
    // A server paging forever must not hang the session, nor one listing a million tools fill memory.
    for (let page = 0; page < 100; page++) {
      const result = await client.listTools(cursor ? { cursor } : undefined);
      listed += result.tools.length;
      for (const tool of result.tools) if (tools.length < MAX_LISTED_TOOLS) tools.push(tool);
      cursor = result.nextCursor;
      if (!cursor) break;
    }
    this.tools = tools;
    this.listed = listed;
  }

  #scheduleRelist(): void {
    clearTimeout(this.#relistTimer);
    this.#relistTimer = setTimeout(() => void this.relist(), RELIST_DEBOUNCE_MS);
    this.#relistTimer.unref?.();
  }

  /** Fetches the tool list again (after notifications/tools/list_changed) and reports it. */
  async relist(): Promise<void> {
    if (this.state !== "ready") return;
    try {
      await this.#listAll();
      this.#hooks.onToolsChanged?.(this);
    } catch {
      // A failed re-list keeps the previous tools; a dead server is reported by onclose.
    }
  }

  #closed(): void {
    if (this.#closing || this.state === "closed") return;
    if (this.state === "ready") {
      this.state = "crashed";
      this.error = this.#explain("stopped unexpectedly (its connection closed)");
      this.#hooks.onDown?.(this);
    }
  }

  #explain(what: string): string {
    const tail = this.stderrTail;
    const last = tail ? `; its stderr ends with: ${tail.split("\n").slice(-5).join(" | ")}` : "";
    return `MCP server "${this.name}" ${what}${last}`;
  }

  /** A ToolbeltError (EUNAVAILABLE) naming this server when it is not ready. */
  unavailable(): ToolbeltError {
    return new ToolbeltError("EUNAVAILABLE", this.error ?? `MCP server "${this.name}" is ${this.state}`, {
      details: { server: this.name, server_state: this.state },
    });
  }

  /**
   * Calls one of the server's tools; failures of the server become ToolbeltErrors naming it. The call
   * times out after TOOLBELT_MCP_CALL_TIMEOUT_MS without a sign of life (progress counts), never while
   * the server waits for a person to answer its question; `elicited` says what it asked meanwhile.
   */
  async callTool(
    tool: string,
    args: Record<string, unknown>,
    signal?: AbortSignal,
  ): Promise<{ result: CallToolResult; elicited: Elicited[] }> {
    const client = this.#client;
    if (this.state !== "ready" || !client) throw this.unavailable();
    const timeout = readEnv(ENV.TOOLBELT_MCP_CALL_TIMEOUT_MS) ?? DEFAULT_CALL_TIMEOUT_MS;
    const firstElicited = this.#elicitedSeq;
    const started = performance.now();
    this.#touched = started;
    const idle = new AbortController();
    const timedOut = new Error("timed out");
    let timer: NodeJS.Timeout | undefined;
    const arm = (ms: number) => {
      timer = setTimeout(() => {
        const now = performance.now();
        const quiet = now - this.#touched;
        if (now - started >= timeout * 10) idle.abort(timedOut);
        else if (this.#asking > 0 || quiet < timeout) arm(this.#asking > 0 ? timeout : timeout - quiet);
        else idle.abort(timedOut);
      }, ms);
      timer.unref?.();
    };
    arm(timeout);
    const combined = signal ? AbortSignal.any([signal, idle.signal]) : idle.signal;
    try {
      const result = await client.callTool({ name: tool, arguments: args }, undefined, {
        // The bound is the idle timer above; the SDK's own would fire while a person answers.
        timeout: 2 ** 31 - 1,
        onprogress: () => {
          this.#touched = performance.now();
        },
        signal: combined,
      });
      const elicited = this.#elicited.filter((e) => e.seq >= firstElicited).map(({ seq: _seq, ...e }) => e);
      return { result: result as CallToolResult, elicited };
    } catch (error) {
      const timeoutHit = idle.signal.aborted && !signal?.aborted;
      throw this.#callError(
        tool,
        timeoutHit ? new McpError(ErrorCode.RequestTimeout, "timed out") : error,
        timeout,
        signal,
      );
    } finally {
      clearTimeout(timer);
    }
  }

  #callError(tool: string, error: unknown, timeout: number, signal?: AbortSignal): ToolbeltError {
    const details = { server: this.name, server_tool: tool };
    if (signal?.aborted)
      return new ToolbeltError(
        "ECANCELLED",
        `the call to ${tool} on MCP server "${this.name}" was cancelled`,
        {
          cause: error,
          details,
        },
      );
    // Refused for want of scope (the SDK's refresh cannot widen it, and no one here can approve it).
    const refused =
      ToolbeltError.isInstance(error) ||
      (error as { code?: unknown } | undefined)?.code === 403 ||
      (error as Error | undefined)?.name === "UnauthorizedError";
    const stepUp = refused ? this.#stepUp?.() : undefined;
    if (stepUp)
      return new ToolbeltError(stepUp.code, stepUp.message, {
        cause: error,
        details: { ...details, ...stepUp.details },
      });
    if (this.state === "crashed" || this.state === "closed") {
      const down = this.unavailable();
      return new ToolbeltError("EUNAVAILABLE", down.message, {
        cause: error,
        details: { ...details, ...down.details },
      });
    }
    if (error instanceof McpError) {
      if (error.code === ErrorCode.RequestTimeout)
        return new ToolbeltError(
          "ETIMEOUT",
          `MCP server "${this.name}" did not answer ${tool} within ${Math.round(timeout / 1000)}s`,
          { cause: error, details },
        );
      if (error.code === ErrorCode.ConnectionClosed) {
        this.#closed();
        return new ToolbeltError(
          "EUNAVAILABLE",
          this.error ?? `MCP server "${this.name}" closed the connection`,
          {
            cause: error,
            details: { ...details, server_state: this.state },
          },
        );
      }
      if (error.code === ErrorCode.InvalidParams)
        return new ToolbeltError(
          "EINVAL_INPUT",
          `MCP server "${this.name}" refused the input of ${tool}: ${error.message}`,
          {
            cause: error,
            details,
          },
        );
      if (error.code === ErrorCode.MethodNotFound)
        return new ToolbeltError(
          "EUNKNOWN_TOOL",
          `MCP server "${this.name}" has no tool ${tool}: ${error.message}`,
          {
            cause: error,
            details,
          },
        );
    }
    return new ToolbeltError(
      "EUNAVAILABLE",
      `MCP server "${this.name}" failed on ${tool}: ${(error as Error).message ?? String(error)}`,
      { cause: error, details },
    );
  }

  async #shutdown(): Promise<void> {
    this.#closing = true;
    clearTimeout(this.#relistTimer);
    try {
      await this.#client?.close();
    } catch {
      // Closing a half-started client may fail; the transport is closed next anyway.
    }
    try {
      await this.#transport?.close();
    } catch {
      // Already gone.
    }
  }

  /** Stops the server (stdio: end stdin, then SIGTERM, then SIGKILL, as the SDK does). */
  async close(): Promise<void> {
    if (this.state === "closed") return;
    await this.#shutdown();
    this.state = "closed";
  }
}
