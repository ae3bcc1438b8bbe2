import { auth, UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolbeltError } from "@toolbelt/core";
import {
  type LoopbackRedirect,
  listenForRedirect,
  pendingStepUp,
  readSignIn,
  StoredOAuthProvider,
} from "./oauth.js";
import type { HttpServerSpec } from "./server-config.js";

// `toolbelt mcp login NAME`: the browser sign-in to an HTTP MCP server. The SDK's transport meets the
// server's 401, discovers its authorization server, registers toolbelt and builds the PKCE
// authorization URL; the user's browser comes back to a loopback listener with the code, which is
// exchanged for tokens; a second connection proves them by listing the server's tools.
//
// A step-up (a call was refused with 403 insufficient_scope, see oauth.ts) asks the authorization
// server directly for the scopes the sign-in already had joined with the ones the call needed: the
// stored tokens still work for what they grant, so the transport would never meet the refusal.

export interface LoginOptions {
  /** Shows the authorization URL to the user: opens a browser, or prints it. */
  authorize: (url: URL) => void | Promise<void>;
  /** How long to wait for the browser to come back. */
  timeoutMs: number;
  /** The loopback port of the redirect (default: any free port). */
  port?: number;
  env?: NodeJS.ProcessEnv;
}

/** `not_needed`: the server answered without asking for a sign-in; `stepped_up`: it granted `scope`. */
export type LoginResult = {
  outcome: "signed_in" | "stepped_up" | "already_signed_in" | "not_needed";
  tools: number;
  scope?: string;
};

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

/** Waits for the browser to come back to the redirect with a code, at most `timeoutMs`. */
async function awaitCode(
  spec: HttpServerSpec,
  redirect: LoopbackRedirect,
  timeoutMs: number,
): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new ToolbeltError(
            "ETIMEOUT",
            `MCP server "${spec.name}": nobody came back from the sign-in page within ${Math.round(timeoutMs / 1000)}s; run \`toolbelt mcp login ${spec.name}\` again`,
            { details: { server: spec.name } },
          ),
        ),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([redirect.code, timedOut]);
  } catch (error) {
    if (error instanceof ToolbeltError) throw error;
    throw failed(spec, error);
  } finally {
    clearTimeout(timer);
  }
}

function failed(spec: HttpServerSpec, error: unknown): ToolbeltError {
  if (ToolbeltError.isInstance(error)) return error;
  return new ToolbeltError(
    "EUNAVAILABLE",
    `MCP server "${spec.name}": sign-in failed: ${(error as Error).message}`,
    {
      details: { server: spec.name },
    },
  );
}

/** Signs in to `spec`'s server and stores the tokens (see oauth.ts); throws a ToolbeltError on failure. */
export async function login(spec: HttpServerSpec, options: LoginOptions): Promise<LoginResult> {
  const redirect = await listenForRedirect(options.port);
  let asked = false;
  const stepUp = pendingStepUp(readSignIn(spec.url, options.env));
  const provider = new StoredOAuthProvider(spec, {
    redirectUrl: redirect.url,
    state: redirect.state,
    ...(stepUp ? { reauthorize: true } : {}),
    ...(options.env ? { env: options.env } : {}),
    authorize: async (url) => {
      asked = true;
      await options.authorize(url);
    },
  });
  try {
    if (stepUp) {
      const serverUrl = new URL(spec.url);
      try {
        // Discovery, registration for this redirect, and the authorization URL for the joined scopes.
        if ((await auth(provider, { serverUrl, scope: stepUp })) === "REDIRECT") {
          const code = await awaitCode(spec, redirect, options.timeoutMs);
          await auth(provider, { serverUrl, scope: stepUp, authorizationCode: code });
        }
      } catch (error) {
        throw failed(spec, error);
      }
      const tokens = await countTools(
        transportFor(spec, new StoredOAuthProvider(spec, options.env ? { env: options.env } : {})),
      );
      return { outcome: "stepped_up", tools: tokens, scope: stepUp };
    }
    // The transport that meets the 401 keeps the resource metadata and scope it names, for finishAuth.
    const transport = transportFor(spec, provider);
    try {
      const tools = await countTools(transport);
      return { outcome: provider.tokens() ? "already_signed_in" : "not_needed", tools };
    } catch (error) {
      if (!(error instanceof UnauthorizedError) || !asked) throw failed(spec, error);
    }
    const code = await awaitCode(spec, redirect, options.timeoutMs);
    await transport.finishAuth(code);
    return { outcome: "signed_in", tools: await countTools(transportFor(spec, provider)) };
  } finally {
    await redirect.close();
  }
}
