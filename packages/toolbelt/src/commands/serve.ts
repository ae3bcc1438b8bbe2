import { ProcessPool } from "@toolbelt/core";
import { ENV, readEnv, type ServerSettings, serverSettings } from "@toolbelt/core/internal";
import type { Argv } from "yargs";
import { resolveSessionConfig } from "../create.js";
import { version } from "../version.js";
import { EXIT_OK, EXIT_TOOL_ERROR, UsageError } from "./exit.js";
import { type ArgsOf, failOnCommandOption, sessionOptions } from "./options.js";
import { checkEnvironment, checkProfile, reportIgnored, sessionOptionsOf, sessionRoot } from "./session.js";

export const command = "serve";
export const describe =
  "serve the session's tools: --mcp (MCP on stdio, or streamable HTTP with --transport http) or --http (HTTP + SSE, client-brought tools, approvals)";

export function options(y: Argv) {
  return sessionOptions(y)
    .option("mcp", { type: "boolean", describe: "MCP server (stdio, or --transport http)" })
    .option("http", { type: "boolean", describe: "HTTP + Server-Sent Events server" })
    .option("transport", {
      choices: ["stdio", "http"] as const,
      default: "stdio" as const,
      describe: "with --mcp: stdio, or streamable HTTP at /mcp",
    })
    .option("port", { type: "number", default: 4317, describe: "HTTP port (0 picks a free one)" })
    .option("host", { type: "string", default: "127.0.0.1", describe: "HTTP address to listen on" })
    .option("token", {
      type: "string",
      describe: "bearer token for HTTP (default: $TOOLBELT_TOKEN, else a random one printed at start)",
    })
    .option("max-sessions", {
      type: "number",
      describe: "--http and --mcp --transport http: sessions held at once; one more is refused",
      defaultDescription: "server.max_sessions, else 64",
    })
    .option("session-idle-seconds", {
      type: "number",
      describe:
        "--http and --mcp --transport http: a session unused this long is closed, its processes reaped (0: never)",
      defaultDescription: "server.session_idle_seconds, else 1800",
    })
    .option("max-requests", {
      type: "number",
      describe: "HTTP: API requests handled at once; one more is answered 503 EBUSY with Retry-After",
      defaultDescription: "server.max_requests, else 4096",
    })
    .option("stop-grace-seconds", {
      type: "number",
      describe: "HTTP: how long SIGTERM lets running calls finish before the sessions close",
      defaultDescription: "server.stop_grace_seconds, else 20",
    })
    .option("max-processes", {
      type: "number",
      describe: "processes of calls (searches, shell commands) at once; more wait their turn",
      defaultDescription: "server.max_processes, else from the machine",
    })
    .option("auth", {
      type: "boolean",
      default: true,
      describe: "with --mcp --transport http: --no-auth asks no token (loopback hosts only)",
    })
    .option("allowed-host", {
      type: "string",
      array: true,
      describe:
        "with --mcp --transport http: a host name requests may name besides loopback and --host (repeatable)",
    })
    .option("allowed-origin", {
      type: "string",
      array: true,
      describe:
        "with --mcp --transport http: a web origin whose pages may call the server, e.g. http://localhost:6274 (repeatable)",
    })
    .option("fail-on-command-error", {
      ...failOnCommandOption,
      describe:
        "with --mcp: a shell command that exits non-zero or is killed by a signal is isError: true (a timeout and a command that could not start always are)",
    });
}

/** The server settings: config's `server` section, then the flags over it. */
function settingsOf(args: ServeArgs, config: Parameters<typeof serverSettings>[0]): ServerSettings {
  const flags: Array<[keyof ServerSettings, number | undefined, boolean]> = [
    ["max_sessions", args.maxSessions, false],
    ["session_idle_seconds", args.sessionIdleSeconds, true],
    ["max_requests", args.maxRequests, false],
    ["stop_grace_seconds", args.stopGraceSeconds, true],
    ["max_processes", args.maxProcesses, false],
  ];
  const settings = serverSettings(config);
  for (const [key, value, zeroOk] of flags) {
    if (value === undefined) continue;
    if (!Number.isInteger(value) || value < (zeroOk ? 0 : 1))
      throw new UsageError(
        `--${key.replaceAll("_", "-")} needs a whole number of at least ${zeroOk ? 0 : 1}, not ${value}`,
      );
    settings[key] = value;
  }
  return settings;
}

export type ServeArgs = ArgsOf<typeof options>;

/** Flags only MCP over HTTP reads are a usage error anywhere else (none of them has a default). */
async function checkModeFlags(args: ServeArgs): Promise<void> {
  if (args.http && args.transport !== "stdio")
    throw new UsageError("--transport is for serve --mcp; serve --http is HTTP already");
  const given = [
    args.auth === false && "--no-auth",
    args.allowedHost !== undefined && "--allowed-host",
    args.allowedOrigin !== undefined && "--allowed-origin",
  ].filter((flag): flag is string => typeof flag === "string");
  if (given.length > 0 && !(args.mcp && args.transport === "http"))
    throw new UsageError(
      `${given.join(", ")}: only serve --mcp --transport http reads ${given.length === 1 ? "it" : "them"}`,
    );
  if (!(args.mcp && args.transport === "http")) return;
  // Loaded only here: the bridge is not needed to start any other command.
  const { isLoopbackHost, originOf } = await import("@toolbelt/bridge");
  if (args.auth === false && !isLoopbackHost(args.host))
    throw new UsageError(
      `--no-auth is accepted only on a loopback host (127.0.0.1, ::1, localhost): ${args.host} is reachable from other machines`,
    );
  for (const origin of args.allowedOrigin ?? [])
    try {
      originOf(origin);
    } catch (error) {
      throw new UsageError(`--allowed-origin ${(error as Error).message}`);
    }
}

/** `toolbelt serve --mcp | --http`: sessions open per client, with these options. */
export async function serve(args: ServeArgs): Promise<number> {
  checkEnvironment();
  if (!!args.mcp === !!args.http) throw new UsageError("serve needs exactly one of --mcp or --http");
  await checkModeFlags(args);
  // Sessions open per client later: only the built-in profiles (and those plugins in config may
  // declare) can be checked here.
  const { root, workspace } = await sessionRoot(args);
  const session = { ...sessionOptionsOf(args), ...(workspace !== undefined ? { workspace } : {}) };
  let serverConfig: Parameters<typeof serverSettings>[0];
  if (workspace === undefined) {
    // A broken config is a usage error before any client connects; what trust dropped is said once here.
    const resolved = await resolveSessionConfig(root, session);
    if (resolved.config.plugins.length === 0) checkProfile(args.profile);
    reportIgnored(resolved.trust, resolved.config);
    serverConfig = resolved.config.server;
  }
  const settings = settingsOf(args, serverConfig);
  // One pool for every session this server opens, sized by the server's own settings.
  const processPool = new ProcessPool({
    max: settings.max_processes,
    maxLongLived: settings.max_long_lived_processes,
    maxWaitMs: settings.process_wait_seconds * 1000,
  });
  if (args.mcp && args.transport === "stdio") {
    const { serveMcp } = await import("../serve-mcp.js");
    await serveMcp({
      root,
      version: version(),
      failOnCommandError: args.failOnCommandError,
      ...session,
      processPool,
    });
    return EXIT_OK;
  }
  const given = args.token ?? readEnv(ENV.TOOLBELT_TOKEN);
  let server: { close(options?: { graceMs?: number }): Promise<void> };
  try {
    server = args.mcp
      ? await startMcpHttp(args, root, { ...session, processPool }, given, settings)
      : await startHttp(args, root, { ...session, processPool }, given, settings);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EADDRINUSE") throw error;
    process.stderr.write(
      `toolbelt: port ${args.port} on ${args.host} is already in use: pick another with --port N, or --port 0 for a free one\n`,
    );
    return EXIT_TOOL_ERROR;
  }
  if (!["127.0.0.1", "::1", "localhost"].includes(args.host))
    process.stderr.write(`toolbelt: warning: listening on ${args.host}, reachable from other machines\n`);
  // SIGTERM (or SIGINT) stops gracefully: running calls may finish within the grace; a second
  // signal stops waiting for them.
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  const again = () => void server.close({ graceMs: 0 });
  process.once("SIGINT", again);
  process.once("SIGTERM", again);
  await server.close();
  process.off("SIGINT", again);
  process.off("SIGTERM", again);
  return EXIT_OK;
}

type SessionOptions = ReturnType<typeof sessionOptionsOf> & { processPool?: ProcessPool };

async function startHttp(
  args: ServeArgs,
  root: string,
  session: SessionOptions,
  token: string | undefined,
  settings: ServerSettings,
) {
  const { startHttpServer } = await import("../serve-http.js");
  const http = await startHttpServer({
    root,
    host: args.host,
    port: args.port,
    ...(token ? { token } : {}),
    maxSessions: settings.max_sessions,
    sessionIdleMs: settings.session_idle_seconds * 1000,
    maxRequests: settings.max_requests,
    stopGraceMs: settings.stop_grace_seconds * 1000,
    session,
  });
  process.stdout.write(
    `toolbelt serve --http listening on ${http.url}\ntoken: ${http.token}\nconsole: ${http.url}/#token=${encodeURIComponent(http.token)}\n`,
  );
  return http;
}

async function startMcpHttp(
  args: ServeArgs,
  root: string,
  session: SessionOptions,
  token: string | undefined,
  settings: ServerSettings,
) {
  const { startMcpHttpServer } = await import("../serve-mcp-http.js");
  const mcp = await startMcpHttpServer({
    root,
    version: version(),
    failOnCommandError: args.failOnCommandError,
    ...session,
    host: args.host,
    port: args.port,
    ...(args.auth ? (token ? { token } : {}) : { token: false }),
    ...(args.allowedHost ? { allowedHosts: args.allowedHost } : {}),
    ...(args.allowedOrigin ? { allowedOrigins: args.allowedOrigin } : {}),
    maxSessions: settings.max_sessions,
    // 0: never closed for idleness, as for --http.
    sessionIdleMs:
      settings.session_idle_seconds > 0 ? settings.session_idle_seconds * 1000 : Number.POSITIVE_INFINITY,
  });
  process.stdout.write(`toolbelt serve --mcp listening on ${mcp.url}\n`);
  if (!args.auth)
    process.stderr.write(
      "toolbelt: warning: --no-auth: requests need no token; any program on this machine can call the tools\n",
    );
  // A token the user gave is never printed (it would end up in their logs); one made here is.
  else if (token)
    process.stdout.write(`token: (the one from ${args.token ? "--token" : "TOOLBELT_TOKEN"})\n`);
  else process.stdout.write(`token: ${mcp.token}\n`);
  return mcp;
}
