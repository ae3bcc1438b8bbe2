// `toolbelt serve --mcp --transport http`: MCP over streamable HTTP at /mcp. The MCP SDK's transport
// speaks the protocol (sessions, SSE streams, resumption); this file decides who may talk to it (the
// Host/Origin allowlist and the bearer token, through @toolbelt/bridge's guard, as `serve --http`
// checks its token), bounds what they may send and how many sessions they may hold, and gives each MCP
// session its own toolbelt session, closed when the MCP session ends or idles out.
import { randomBytes, randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import {
  bearerToken,
  HttpError,
  hostAllowlist,
  isLoopbackHost,
  readJson,
  refusedHost,
  requestUrl,
  tokenMatches,
} from "@toolbelt/bridge";
import { BoundedEventStore, DEFAULT_STORE_BYTES, DEFAULT_STORE_EVENTS } from "./mcp-event-store.js";
import { connectMcp, type McpConnection, type McpServeOptions, maxMessageBytesOf } from "./serve-mcp.js";

export const MCP_PATH = "/mcp";
export const DEFAULT_MAX_MCP_SESSIONS = 64;
export const DEFAULT_SESSION_IDLE_MS = 30 * 60_000;
/** How long a client waits before it reconnects a stream the server closed (the SSE `retry` field). */
const RETRY_MS = 1000;

export type McpHttpOptions = McpServeOptions & {
  /** Address to listen on (default 127.0.0.1). */
  host?: string;
  /** Port (default 0: a free one). */
  port?: number;
  /**
   * The bearer token every request must carry; a random one when absent; `false` for none, which
   * only a loopback host accepts.
   */
  token?: string | false;
  /** Host names besides loopback and the listening address that requests may name (DNS rebinding). */
  allowedHosts?: readonly string[];
  /** Web origins whose pages may call the server (browser-based clients); none by default. */
  allowedOrigins?: readonly string[];
  /** MCP sessions held at once (default 64); an initialize beyond it is answered 503. */
  maxSessions?: number;
  /** A session with no request and no open stream for this long is closed (default 30 min). */
  sessionIdleMs?: number;
  /** Messages kept per session for resumption (default 1000 / 8 MiB). */
  storeEvents?: number;
  storeBytes?: number;
};

export type McpHttpServer = {
  /** The endpoint, `http://host:port/mcp`. */
  url: string;
  host: string;
  port: number;
  /** The bearer token; undefined with `token: false`. */
  token: string | undefined;
  /** MCP sessions held now. */
  sessions(): number;
  /** Ends every session (their processes too) and stops listening. */
  close(): Promise<void>;
};

type Hosted = {
  transport: StreamableHTTPServerTransport;
  connection: McpConnection;
  /** Requests and streams of this session open now: a session with one is not idle. */
  open: number;
  lastSeen: number;
};

const JSON_HEADERS = { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" };
const CORS_HEADERS = {
  "access-control-allow-methods": "GET, POST, DELETE, OPTIONS",
  "access-control-allow-headers":
    "authorization, content-type, accept, mcp-session-id, mcp-protocol-version, last-event-id",
  "access-control-max-age": "600",
};

/** A JSON-RPC error as the HTTP answer: MCP clients read both the status and the body. */
function rpcError(res: ServerResponse, status: number, code: number, message: string, headers = {}): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.writeHead(status, { ...JSON_HEADERS, ...headers });
  res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code, message } }));
}

export async function startMcpHttpServer(options: McpHttpOptions): Promise<McpHttpServer> {
  const {
    host = "127.0.0.1",
    port = 0,
    token: tokenOption,
    allowedHosts,
    allowedOrigins,
    maxSessions = DEFAULT_MAX_MCP_SESSIONS,
    sessionIdleMs = DEFAULT_SESSION_IDLE_MS,
    storeEvents = DEFAULT_STORE_EVENTS,
    storeBytes = DEFAULT_STORE_BYTES,
    ...serveOptions
  } = options;
  if (tokenOption === false && !isLoopbackHost(host))
    throw new Error(
      `no token (--no-auth) is accepted only on a loopback host; ${host} is reachable from other machines`,
    );
  const token = tokenOption === false ? undefined : (tokenOption ?? randomBytes(24).toString("base64url"));
  const maxMessageBytes = maxMessageBytesOf(serveOptions);
  const sessions = new Map<string, Hosted>();
  // Sessions being opened (their initialize in flight) count against the bound too.
  let opening = 0;
  let closing = false;
  // Filled in once the port is known (the allowlist names it).
  let allow = hostAllowlist({ host, port, allowedHosts, allowedOrigins });

  const openSession = async (req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> => {
    if (sessions.size + opening >= maxSessions)
      return rpcError(
        res,
        503,
        -32000,
        `this server holds ${maxSessions} MCP sessions: end one (DELETE ${MCP_PATH}) or wait for an idle one to close`,
      );
    opening++;
    let hosted: Hosted | undefined;
    try {
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        eventStore: new BoundedEventStore(storeEvents, storeBytes),
        retryInterval: RETRY_MS,
        maxRequestBodySize: maxMessageBytes,
        onsessioninitialized: (id) => {
          if (hosted) sessions.set(id, hosted);
        },
      });
      const connection = await connectMcp(serveOptions, transport);
      hosted = { transport, connection, open: 0, lastSeen: Date.now() };
      void connection.closed.then(() => {
        const id = transport.sessionId;
        if (id !== undefined && sessions.get(id) === hosted) sessions.delete(id);
      });
      await serve(hosted, req, res, body);
    } finally {
      opening--;
    }
    // An initialize the SDK refused (a bad protocol header...) leaves no session behind.
    if (hosted && hosted.transport.sessionId === undefined) await hosted.connection.close();
  };

  const serve = async (hosted: Hosted, req: IncomingMessage, res: ServerResponse, body: unknown) => {
    hosted.open++;
    res.once("close", () => {
      hosted.open--;
      hosted.lastSeen = Date.now();
    });
    await hosted.transport.handleRequest(req, res, body);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    // First who may ask at all (a page rebinding a name to this machine is refused before anything).
    const refused = refusedHost(req, allow);
    if (refused) return rpcError(res, 403, -32000, refused);
    const origin = req.headers.origin;
    if (origin !== undefined) {
      // Only an allowed origin gets here: its page may read the answers (and the session id).
      res.setHeader("access-control-allow-origin", origin);
      res.setHeader(
        "access-control-expose-headers",
        "mcp-session-id, mcp-protocol-version, www-authenticate",
      );
      res.setHeader("vary", "origin");
    }
    const url = requestUrl(req);
    if (url.pathname !== MCP_PATH)
      return rpcError(res, 404, -32000, `nothing at ${url.pathname}: MCP is served at ${MCP_PATH}`);
    if (req.method === "OPTIONS") {
      res.writeHead(204, CORS_HEADERS);
      res.end();
      return;
    }
    // The token only from the header: a token in a URL ends up in logs and browser history.
    if (token !== undefined && !tokenMatches(bearerToken(req), token))
      return rpcError(res, 401, -32000, "missing or wrong token: send Authorization: Bearer <token>", {
        "www-authenticate": 'Bearer realm="toolbelt"',
      });
    if (closing) return rpcError(res, 503, -32000, "the server is stopping");
    const body = req.method === "POST" ? await readJson(req, maxMessageBytes) : undefined;
    const sid = req.headers["mcp-session-id"];
    if (typeof sid === "string") {
      const hosted = sessions.get(sid);
      // 404 tells a client its session is gone: it starts a new one with initialize.
      if (!hosted) return rpcError(res, 404, -32001, "Session not found: start a new one with initialize");
      return serve(hosted, req, res, body);
    }
    if (req.method !== "POST" || !isInitializeRequest(body))
      return rpcError(
        res,
        400,
        -32000,
        "Bad Request: no Mcp-Session-Id: start a session with an initialize request, then send its Mcp-Session-Id",
      );
    return openSession(req, res, body);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (error instanceof HttpError) {
        // A body over the bound, too deep, or not JSON: the JSON-RPC answer to each.
        const code = error.status === 413 ? -32600 : error.message.includes("not JSON") ? -32700 : -32600;
        return rpcError(res, error.status, code, error.message);
      }
      process.stderr.write(`toolbelt: mcp http: ${(error as Error).message}\n`);
      rpcError(res, 500, -32603, "internal error");
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const bound = (server.address() as AddressInfo).port;
  allow = hostAllowlist({ host, port: bound, allowedHosts, allowedOrigins });

  // Idle sessions close: a client that vanished without DELETE leaves nothing running for long.
  const sweep = setInterval(
    () => {
      const now = Date.now();
      for (const hosted of sessions.values())
        if (hosted.open === 0 && now - hosted.lastSeen > sessionIdleMs) void hosted.connection.close();
    },
    Math.max(250, Math.min(sessionIdleMs / 4, 30_000)),
  );
  sweep.unref();

  const shownHost = host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${bound}${MCP_PATH}`,
    host,
    port: bound,
    token,
    sessions: () => sessions.size,
    async close() {
      closing = true;
      clearInterval(sweep);
      await Promise.all([...sessions.values()].map((hosted) => hosted.connection.close()));
      sessions.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
