import { ENV, readEnv } from "@toolbelt/core/internal";
import type { Argv } from "yargs";
import { resolveSessionConfig } from "../create.js";
import { version } from "../version.js";
import { EXIT_OK, EXIT_TOOL_ERROR, UsageError } from "./exit.js";
import { type ArgsOf, sessionOptions } from "./options.js";
import { checkEnvironment, checkProfile, reportIgnored, sessionOptionsOf, sessionRoot } from "./session.js";

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
    });
}

export type ServeArgs = ArgsOf<typeof options>;

/** `toolbelt serve --mcp | --http`: sessions open per client, with these options. */
export async function serve(args: ServeArgs): Promise<number> {
  checkEnvironment();
  if (!!args.mcp === !!args.http) throw new UsageError("serve needs exactly one of --mcp or --http");
  // Sessions open per client later: only the built-in profiles (and those plugins in config may
  // declare) can be checked here.
  const { root, workspace } = await sessionRoot(args);
  const session = { ...sessionOptionsOf(args), ...(workspace !== undefined ? { workspace } : {}) };
  if (workspace === undefined) {
    // A broken config is a usage error before any client connects; what trust dropped is said once here.
    const resolved = await resolveSessionConfig(root, session);
    if (resolved.config.plugins.length === 0) checkProfile(args.profile);
    reportIgnored(resolved.trust, resolved.config);
  }
  if (args.mcp) {
    const { serveMcp } = await import("../serve-mcp.js");
    await serveMcp({ root, version: version(), ...session });
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
      session,
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
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  await server.close();
  return EXIT_OK;
}
