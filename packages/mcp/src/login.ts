import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolbeltError } from "@toolbelt/core";
import { listenForRedirect, StoredOAuthProvider } from "./oauth.js";
import type { HttpServerSpec } from "./server-config.js";

// `toolbelt mcp login NAME`: the browser sign-in to an HTTP MCP server. The SDK's transport meets the
// server's 401, discovers its authorization server, registers toolbelt and builds the PKCE
// authorization URL; the user's browser comes back to a loopback listener with the code, which is
// exchanged for tokens; a second connection proves them by listing the server's tools.

export interface LoginOptions {
  /** Shows the authorization URL to the user: opens a browser, or prints it. */
  authorize: (url: URL) => void | Promise<void>;
  /** How long to wait for the browser to come back. */
  timeoutMs: number;
  /** The loopback port of the redirect (default: any free port). */
  port?: number;
  env?: NodeJS.ProcessEnv;
}

/** `not_needed`: the server answered without asking for a sign-in. */
export type LoginResult = { outcome: "signed_in" | "already_signed_in" | "not_needed"; tools: number };

function transportFor(spec: HttpServerSpec, provider: StoredOAuthProvider): StreamableHTTPClientTransport {
  return new StreamableHTTPClientTransport(new URL(spec.url), {
    authProvider: provider,
    requestInit: { headers: spec.headers },
  });
}

/** Connects with what is stored, lists the tools (the proof the sign-in works) and disconnects. */
async function countTools(transport: StreamableHTTPClientTransport): Promise<number> {
  const client = new Client({ name: "toolbelt", version: "0.1.0" });
  await client.connect(transport);
  try {
    return (await client.listTools()).tools.length;
  } finally {
    await client.close();
  }
}

/** Signs in to `spec`'s server and stores the tokens (see oauth.ts); throws a ToolbeltError on failure. */
export async function login(spec: HttpServerSpec, options: LoginOptions): Promise<LoginResult> {
  const redirect = await listenForRedirect(options.port);
  let asked = false;
  const provider = new StoredOAuthProvider(spec, {
    redirectUrl: redirect.url,
    state: redirect.state,
    ...(options.env ? { env: options.env } : {}),
    authorize: async (url) => {
      asked = true;
      await options.authorize(url);
    },
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    // The transport that meets the 401 keeps the resource metadata and scope it names, for finishAuth.
    const transport = transportFor(spec, provider);
    try {
      const tools = await countTools(transport);
      return { outcome: provider.tokens() ? "already_signed_in" : "not_needed", tools };
    } catch (error) {
      if (!(error instanceof UnauthorizedError) || !asked)
        throw new ToolbeltError(
          "EUNAVAILABLE",
          `MCP server "${spec.name}": sign-in failed: ${(error as Error).message}`,
          {
            details: { server: spec.name },
          },
        );
    }
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new ToolbeltError(
              "ETIMEOUT",
              `MCP server "${spec.name}": nobody came back from the sign-in page within ${Math.round(options.timeoutMs / 1000)}s; run \`toolbelt mcp login ${spec.name}\` again`,
              { details: { server: spec.name } },
            ),
          ),
        options.timeoutMs,
      );
    });
    let code: string;
    try {
      code = await Promise.race([redirect.code, timedOut]);
    } catch (error) {
      if (error instanceof ToolbeltError) throw error;
      throw new ToolbeltError(
        "EUNAVAILABLE",
        `MCP server "${spec.name}": sign-in failed: ${(error as Error).message}`,
        {
          details: { server: spec.name },
        },
      );
    }
    await transport.finishAuth(code);
    return { outcome: "signed_in", tools: await countTools(transportFor(spec, provider)) };
  } finally {
    clearTimeout(timer);
    await redirect.close();
  }
}
