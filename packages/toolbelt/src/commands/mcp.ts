import { spawn } from "node:child_process";
import path from "node:path";
import type { Argv } from "yargs";
import { resolveSessionConfig } from "../create.js";
import { EXIT_OK, UsageError } from "./exit.js";
import { type ArgsOf, trustOption } from "./options.js";

export const command = "mcp <action> <server>";
export const describe =
  "sign in to a project's HTTP MCP server that asks for OAuth (login), or forget the sign-in (logout)";

export function options(y: Argv) {
  return y
    .positional("action", { choices: ["login", "logout"] as const, demandOption: true })
    .positional("server", {
      type: "string",
      demandOption: true,
      describe: "the server's name in .mcp.json or mcpServers",
    })
    .option("root", { type: "string", default: process.cwd(), defaultDescription: "current directory" })
    .option("config", { type: "string", describe: "config file layered over <root>/configs/app.json" })
    .option("trust", trustOption)
    .option("browser", {
      type: "boolean",
      default: true,
      describe: "open the sign-in page in a browser (--no-browser only prints its URL)",
    })
    .option("timeout", {
      type: "number",
      default: 300,
      describe: "seconds to wait for the browser to come back from the sign-in page",
    })
    .option("port", {
      type: "number",
      describe: "the loopback port of the sign-in redirect (default: any free port)",
    });
}

export type McpArgs = ArgsOf<typeof options>;

/** Opens `url` in the desktop's browser; false when there is none to open. */
function openBrowser(url: string): Promise<boolean> {
  const opener =
    process.platform === "darwin" ? "open" : process.platform === "win32" ? "explorer" : "xdg-open";
  return new Promise((resolve) => {
    const child = spawn(opener, [url], { stdio: "ignore", detached: true });
    child.once("error", () => resolve(false));
    child.once("spawn", () => {
      child.unref();
      resolve(true);
    });
  });
}

const LOGIN_VERB = {
  signed_in: "signed in to",
  stepped_up: "signed in again (step-up) to",
  already_signed_in: "already signed in to",
} as const;

/** `toolbelt mcp login|logout SERVER`: the OAuth sign-in of an HTTP MCP server, kept in the user config folder. */
export async function mcp(args: McpArgs): Promise<number> {
  if (!Number.isFinite(args.timeout) || args.timeout <= 0)
    throw new UsageError("--timeout must be a positive number of seconds");
  const root = path.resolve(args.root);
  const { config, trust } = await resolveSessionConfig(root, {
    ...(args.config ? { configFile: args.config } : {}),
    ...(args.trust !== undefined ? { trustProject: args.trust } : {}),
  });
  const { login, readServerSpecs, removeSignIn, oauthDir } = await import("@toolbelt/mcp");
  const { servers, problems } = readServerSpecs(root, config, { projectTrusted: trust.trusted });
  const spec = servers.find((s) => s.name === args.server);
  if (!spec) {
    const problem = problems.find((p) => p.name === args.server);
    const known = servers.map((s) => s.name).join(", ") || "none";
    throw new UsageError(
      problem ? problem.error : `no MCP server named "${args.server}" here (servers: ${known})`,
    );
  }
  if (spec.transport === "stdio")
    throw new UsageError(
      `MCP server "${spec.name}" runs a command (stdio): only HTTP servers sign in with OAuth`,
    );
  if (spec.oauth?.grant === "client_credentials" || spec.oauth?.grant === "cross_app_access")
    throw new UsageError(
      `MCP server "${spec.name}" authenticates with oauth.grant "${spec.oauth.grant}": nobody signs in, toolbelt gets its token by itself`,
    );
  if (args.action === "logout") {
    const removed = await removeSignIn(spec.url);
    process.stderr.write(
      removed
        ? `toolbelt: signed out of MCP server "${spec.name}" (${spec.url})\n`
        : `toolbelt: MCP server "${spec.name}" (${spec.url}) had no sign-in\n`,
    );
    return EXIT_OK;
  }
  const result = await login(spec, {
    timeoutMs: args.timeout * 1000,
    ...(args.port !== undefined ? { port: args.port } : {}),
    authorize: async (url) => {
      const opened = args.browser && (await openBrowser(url.href));
      process.stderr.write(
        `toolbelt: ${opened ? "opened your browser to sign in to" : "to sign in to"} MCP server "${spec.name}"${opened ? "; if it did not open, visit" : ", open this URL in a browser"}:\n${url.href}\n`,
      );
    },
  });
  const where = path.join(oauthDir(), "…");
  process.stderr.write(
    result.outcome === "not_needed"
      ? `toolbelt: MCP server "${spec.name}" did not ask for a sign-in (${result.tools} tools)\n`
      : `toolbelt: ${LOGIN_VERB[result.outcome]} MCP server "${spec.name}"${result.scope ? ` for scope "${result.scope}"` : ""} (${result.tools} tools); tokens kept in ${where}\n`,
  );
  return EXIT_OK;
}
