import path from "node:path";
import { ProcessPool } from "@toolbelt/core";
import { ENV, readEnv, type ServerSettings, serverSettings } from "@toolbelt/core/internal";
import type { Argv } from "yargs";
import { resolveSessionConfig } from "../create.js";
import { version } from "../version.js";
import { EXIT_OK, EXIT_TOOL_ERROR, UsageError } from "./exit.js";
import { type ArgsOf, sessionOptions } from "./options.js";
import { checkEnvironment, checkProfile, reportIgnored, sessionOptionsOf } from "./session.js";

export const command = "serve";
export const describe =
  "serve the session's tools: --mcp (MCP on stdio) or --http (HTTP + SSE, client-brought tools, approvals)";

export function options(y: Argv) {
  return sessionOptions(y)
    .option("mcp", { type: "boolean", describe: "MCP server on stdio" })
    .option("http", { type: "boolean", describe: "HTTP + Server-Sent Events server" })
    .option("port", { type: "number", default: 4317, describe: "HTTP port (0 picks a free one)" })
    .option("host", { type: "string", default: "127.0.0.1", describe: "HTTP address to listen on" })
    .option("token", {
      type: "string",
      describe: "bearer token for HTTP (default: $TOOLBELT_TOKEN, else a random one printed at start)",
    })
    .option("max-sessions", {
      type: "number",
      describe: "HTTP: sessions held at once; one more is refused (409 ESESSION_CAP)",
      defaultDescription: "server.max_sessions, else 64",
    })
    .option("session-idle-seconds", {
      type: "number",
      describe: "HTTP: a session unused this long is closed, its processes reaped (0: never)",
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

/** `toolbelt serve --mcp | --http`: sessions open per client, with these options. */
export async function serve(args: ServeArgs): Promise<number> {
  checkEnvironment();
  if (!!args.mcp === !!args.http) throw new UsageError("serve needs exactly one of --mcp or --http");
  // Sessions open per client later: only the built-in profiles (and those plugins in config may
  // declare) can be checked here.
  const root = path.resolve(args.root);
  const session = sessionOptionsOf(args);
  // A broken config is a usage error before any client connects; what trust dropped is said once here.
  const resolved = await resolveSessionConfig(root, session);
  if (resolved.config.plugins.length === 0) checkProfile(args.profile);
  reportIgnored(resolved.trust, resolved.config);
  const settings = settingsOf(args, resolved.config.server);
  // One pool for every session this server opens, sized by the server's own settings.
  const processPool = new ProcessPool({
    max: settings.max_processes,
    maxLongLived: settings.max_long_lived_processes,
    maxWaitMs: settings.process_wait_seconds * 1000,
  });
  if (args.mcp) {
    const { serveMcp } = await import("../serve-mcp.js");
    await serveMcp({ root, version: version(), ...session, processPool });
    return EXIT_OK;
  }
  const { startHttpServer } = await import("../serve-http.js");
  const token = args.token ?? readEnv(ENV.TOOLBELT_TOKEN);
  let server: Awaited<ReturnType<typeof startHttpServer>>;
  try {
    server = await startHttpServer({
      root,
      host: args.host,
      port: args.port,
      ...(token ? { token } : {}),
      maxSessions: settings.max_sessions,
      sessionIdleMs: settings.session_idle_seconds * 1000,
      maxRequests: settings.max_requests,
      stopGraceMs: settings.stop_grace_seconds * 1000,
      session: { ...session, processPool },
    });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EADDRINUSE") throw error;
    process.stderr.write(
      `toolbelt: port ${args.port} on ${args.host} is already in use: pick another with --port N, or --port 0 for a free one\n`,
    );
    return EXIT_TOOL_ERROR;
  }
  process.stdout.write(
    `toolbelt serve --http listening on ${server.url}\ntoken: ${server.token}\nconsole: ${server.url}/#token=${encodeURIComponent(server.token)}\n`,
  );
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
