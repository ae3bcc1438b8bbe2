import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  type CallToolResult,
  ErrorCode,
  McpError,
  type Tool,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { ToolbeltError } from "@toolbelt/core";
import { ENV, readEnv } from "@toolbelt/core/internal";
import type { ServerSpec } from "./server-config.js";

export type ServerState = "starting" | "ready" | "failed" | "crashed" | "closed";

/** How long a server may take to start and list its tools (TOOLBELT_MCP_START_TIMEOUT_MS). */
export const DEFAULT_START_TIMEOUT_MS = 20_000;
/** How long one call may take (TOOLBELT_MCP_CALL_TIMEOUT_MS); progress notifications extend it. */
export const DEFAULT_CALL_TIMEOUT_MS = 120_000;

const STDERR_TAIL_CHARS = 2_000;
/** Tools kept from one server's listing; the registered ones are fewer still (MCP_LIMITS). */
const MAX_LISTED_TOOLS = 1_000;
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

export type ConnectionHooks = {
  /** After notifications/tools/list_changed, once the new list is in `tools`. */
  onToolsChanged?: (connection: McpConnection) => void;
  /** When a server that was ready stops. */
  onDown?: (connection: McpConnection) => void;
};

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
  readonly #hooks: ConnectionHooks;

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
    if (spec.transport === "sse") {
      const { SSEClientTransport } = await import("@modelcontextprotocol/sdk/client/sse.js");
      return new SSEClientTransport(new URL(spec.url), { requestInit });
    }
    const { StreamableHTTPClientTransport } = await import(
      "@modelcontextprotocol/sdk/client/streamableHttp.js"
    );
    return new StreamableHTTPClientTransport(new URL(spec.url), { requestInit });
  }

  /** Connects and lists the tools within `timeoutMs`; never throws (the state says what happened). */
  async start(
    timeoutMs = readEnv(ENV.TOOLBELT_MCP_START_TIMEOUT_MS) ?? DEFAULT_START_TIMEOUT_MS,
  ): Promise<void> {
    const started = performance.now();
    const client = new Client({ name: "toolbelt", version: "0.1.0" }, { capabilities: {} });
    this.#client = client;
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
      this.error = this.#explain(`failed to start: ${(error as Error).message}`);
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

  /** Calls one of the server's tools; failures of the server become ToolbeltErrors naming it. */
  async callTool(tool: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<CallToolResult> {
    const client = this.#client;
    if (this.state !== "ready" || !client) throw this.unavailable();
    const timeout = readEnv(ENV.TOOLBELT_MCP_CALL_TIMEOUT_MS) ?? DEFAULT_CALL_TIMEOUT_MS;
    try {
      const result = await client.callTool({ name: tool, arguments: args }, undefined, {
        timeout,
        resetTimeoutOnProgress: true,
        maxTotalTimeout: timeout * 10,
        ...(signal ? { signal } : {}),
      });
      return result as CallToolResult;
    } catch (error) {
      throw this.#callError(tool, error, timeout, signal);
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
