import { createHash, randomBytes } from "node:crypto";
import { promises as fs, readFileSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import {
  extractWWWAuthenticateParams,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
} from "@modelcontextprotocol/sdk/client/auth.js";
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from "@modelcontextprotocol/sdk/shared/auth.js";
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ToolbeltError } from "@toolbelt/core";
import { readStreamBounded, userConfigDir, writeFileAtomic } from "@toolbelt/core/internal";
import {
  type HttpServerSpec,
  type IdentityProvider,
  type ResolvedOAuth,
  readIdTokenFile,
} from "./server-config.js";

// OAuth 2.1 for a project's HTTP MCP servers. The MCP SDK does the protocol (protected-resource and
// authorization-server metadata discovery, dynamic client registration, PKCE S256, the `resource`
// parameter, scope selection, step-up on `insufficient_scope`, refresh); this file keeps what it
// learns — the registered client and the tokens — in the user's config folder, one 0600 file per
// server URL, and runs the browser sign-in of `toolbelt mcp login` on a loopback redirect.
//
// Tokens are keyed by the server's URL, not by the name a config gives it: a project that names its
// own server like one the user signed in to never gets that server's tokens sent to its URL.

/** The folder of the stored sign-ins: `<user config>/mcp-oauth`, 0700. */
export function oauthDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(userConfigDir(env), "mcp-oauth");
}

/** The file holding the sign-in for one server URL. */
export function oauthFile(url: string, env: NodeJS.ProcessEnv = process.env): string {
  const key = createHash("sha256").update(url).digest("hex").slice(0, 32);
  return path.join(oauthDir(env), `${key}.json`);
}

/** What is kept per server URL. Never logged, never in events or results. */
export interface StoredSignIn {
  url: string;
  client?: OAuthClientInformationMixed;
  tokens?: OAuthTokens;
  /** When the tokens were saved (ms since the epoch), to tell their expiry from `expires_in`. */
  saved_at?: number;
  /**
   * The scopes a call was refused for (403 `insufficient_scope`) joined with those already granted:
   * what the next `toolbelt mcp login` asks for (step-up). Dropped once a sign-in grants them.
   */
  step_up_scope?: string;
}

// RFC 6749 §3.3: a scope token is printable ASCII without space, `"` or `\`. A server's challenge
// naming anything else (a newline, an escape sequence) is not repeated into a message or a request.
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/;

/** The scope tokens of a space-separated scope string, in order, without repeats or invalid ones. */
export function scopeTokens(scope: string | undefined): string[] {
  return [...new Set((scope ?? "").split(" ").filter((t) => SCOPE_TOKEN.test(t)))];
}

/** The scopes a step-up still has to ask for, or undefined when the tokens already grant them. */
export function pendingStepUp(stored: StoredSignIn | undefined): string | undefined {
  const wanted = scopeTokens(stored?.step_up_scope);
  if (wanted.length === 0) return undefined;
  const granted = new Set(scopeTokens(stored?.tokens?.scope));
  return wanted.every((t) => granted.has(t)) ? undefined : wanted.join(" ");
}

export function readSignIn(url: string, env: NodeJS.ProcessEnv = process.env): StoredSignIn | undefined {
  let text: string;
  try {
    text = readFileSync(oauthFile(url, env), "utf8");
  } catch {
    return undefined;
  }
  try {
    const stored = JSON.parse(text) as StoredSignIn;
    // A file that names another URL (a hash collision, a hand edit) is never used for this one.
    return stored.url === url ? stored : undefined;
  } catch {
    return undefined;
  }
}

async function writeSignIn(stored: StoredSignIn, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const dir = oauthDir(env);
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  await fs.chmod(dir, 0o700);
  const file = oauthFile(stored.url, env);
  await writeFileAtomic(file, `${JSON.stringify(stored, null, 2)}\n`, { mode: 0o600 });
  // An existing file keeps its mode through the rename: make sure it is the owner's alone.
  await fs.chmod(file, 0o600);
}

/** Removes the sign-in of a server URL; whether there was one. */
export async function removeSignIn(url: string, env: NodeJS.ProcessEnv = process.env): Promise<boolean> {
  try {
    await fs.unlink(oauthFile(url, env));
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw error;
  }
}

/** How a server's sign-in stands, for `doctor` and `mcp_status` (never the tokens themselves). */
export function signInState(url: string, env: NodeJS.ProcessEnv = process.env): string {
  const stored = readSignIn(url, env);
  if (!stored?.tokens) return "not signed in";
  const expires =
    stored.tokens.expires_in !== undefined && stored.saved_at !== undefined
      ? stored.saved_at + stored.tokens.expires_in * 1000
      : undefined;
  const refresh = stored.tokens.refresh_token ? ", refreshable" : "";
  const scope = stored.tokens.scope ? `, scope "${stored.tokens.scope}"` : "";
  if (expires === undefined) return `signed in${scope}${refresh}`;
  const when = new Date(expires).toISOString();
  return expires > Date.now()
    ? `signed in until ${when}${scope}${refresh}`
    : `sign-in expired at ${when}${scope}${refresh}`;
}

/**
 * The error of a server that wants a sign-in toolbelt cannot do by itself in a session; `scope`
 * (a step-up) is what the sign-in must grant, named so the user knows what they approve.
 */
export function needsLogin(server: string, why: string, scope?: string): ToolbeltError {
  const grant = scope ? ` (to grant scope "${scope}")` : "";
  return new ToolbeltError(
    "EUNAVAILABLE",
    `MCP server "${server}" ${why}: run \`toolbelt mcp login ${server}\`${grant}`,
    {
      details: { server, ...(scope ? { scope } : {}) },
    },
  );
}

/** The error of a call refused for want of scopes, when a step-up is pending for the server. */
export function stepUpNeeded(
  spec: HttpServerSpec,
  env: NodeJS.ProcessEnv = process.env,
): ToolbeltError | undefined {
  const scope = pendingStepUp(readSignIn(spec.url, env));
  return scope ? needsLogin(spec.name, "needs more permission for this call", scope) : undefined;
}

/**
 * A fetch for a server's transport that remembers a 403 `insufficient_scope` challenge of the
 * server's own endpoint (never another URL's): the scopes it names, joined with those granted, are
 * kept as the sign-in's step-up for `toolbelt mcp login`. The response goes on to the SDK unchanged.
 */
export function stepUpRecordingFetch(spec: HttpServerSpec, env: NodeJS.ProcessEnv = process.env): FetchLike {
  const endpoint = new URL(spec.url).href;
  return async (input, init) => {
    const response = await fetch(input, init);
    if (response.status !== 403 || new URL(String(input)).href !== endpoint) return response;
    const { error, scope } = extractWWWAuthenticateParams(response);
    const challenged = scopeTokens(scope);
    if (error !== "insufficient_scope" || challenged.length === 0) return response;
    const stored = readSignIn(spec.url, env);
    // Only a sign-in's own tokens are stepped up: no file is made for a server never signed in to.
    if (!stored?.tokens) return response;
    const union = scopeTokens(
      [stored.tokens.scope, stored.step_up_scope, ...challenged].filter(Boolean).join(" "),
    ).join(" ");
    await writeSignIn({ ...stored, step_up_scope: union }, env);
    return response;
  };
}

export interface SignInOptions {
  /**
   * Shows the user the authorization URL (opens a browser, prints it). Without it — in a session —
   * a server that needs a new authorization fails with a message naming `toolbelt mcp login`.
   */
  authorize?: (url: URL) => void | Promise<void>;
  /** The loopback redirect of the sign-in. */
  redirectUrl?: string;
  /** Checked against the `state` the redirect brings back. */
  state?: string;
  /**
   * A step-up: the stored tokens are not offered (so the SDK asks for a new authorization instead of
   * refreshing, which can never widen the scope) until this sign-in saves its own.
   */
  reauthorize?: boolean;
  env?: NodeJS.ProcessEnv;
}

/** The SDK's client-side OAuth hooks, backed by the stored sign-in of one server URL. */
export class StoredOAuthProvider implements OAuthClientProvider {
  #verifier: string | undefined;
  #hideTokens: boolean;

  constructor(
    readonly spec: HttpServerSpec,
    readonly options: SignInOptions = {},
  ) {
    this.#hideTokens = options.reauthorize === true;
  }

  /** A client ID metadata document's URL, used as client_id where the server supports it (SEP-991). */
  get clientMetadataUrl(): string | undefined {
    return this.spec.oauth?.client_metadata_url;
  }

  get redirectUrl(): string | undefined {
    const client = this.#stored()?.client;
    return (
      this.options.redirectUrl ?? (client && "redirect_uris" in client ? client.redirect_uris[0] : undefined)
    );
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: "toolbelt",
      redirect_uris: this.redirectUrl ? [this.redirectUrl] : [],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }

  state(): string {
    return this.options.state ?? randomBytes(16).toString("hex");
  }

  #stored(): StoredSignIn | undefined {
    return readSignIn(this.spec.url, this.options.env);
  }

  async #update(change: (stored: StoredSignIn) => StoredSignIn): Promise<void> {
    await writeSignIn(change(this.#stored() ?? { url: this.spec.url }), this.options.env);
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    // A pre-registered client (config) is used as given, never replaced by a registration.
    const own = this.spec.oauth;
    if (own?.client_id)
      return { client_id: own.client_id, ...(own.client_secret ? { client_secret: own.client_secret } : {}) };
    const client = this.#stored()?.client;
    // A client registered for another loopback port cannot receive this sign-in's redirect.
    const redirect = this.options.redirectUrl;
    if (client && redirect && "redirect_uris" in client && !client.redirect_uris.includes(redirect))
      return undefined;
    return client;
  }

  async saveClientInformation(client: OAuthClientInformationMixed): Promise<void> {
    // The secret of a pre-registered client stays in the config it came from, not in a second file.
    if (this.spec.oauth?.client_id) return;
    await this.#update((s) => ({ ...s, client }));
  }

  tokens(): OAuthTokens | undefined {
    return this.#hideTokens ? undefined : this.#stored()?.tokens;
  }

  async saveTokens(tokens: OAuthTokens): Promise<void> {
    const stepUp = this.#hideTokens;
    this.#hideTokens = false;
    await this.#update((s) => {
      const { step_up_scope, ...rest } = s;
      const next: StoredSignIn = { ...rest, tokens, saved_at: Date.now() };
      // A step-up's authorization asked for these scopes: what the server granted answers it (a
      // refusal shows at the next call). A refresh cannot widen the scope, so it keeps the step-up.
      if (!stepUp && step_up_scope && pendingStepUp({ ...next, step_up_scope }))
        next.step_up_scope = step_up_scope;
      return next;
    });
  }

  async redirectToAuthorization(url: URL): Promise<void> {
    if (!this.options.authorize) {
      const scope = pendingStepUp(this.#stored());
      throw scope
        ? needsLogin(this.spec.name, "needs more permission for this call", scope)
        : needsLogin(this.spec.name, "needs you to sign in again (its authorization server asks for it)");
    }
    await this.options.authorize(url);
  }

  saveCodeVerifier(verifier: string): void {
    this.#verifier = verifier;
  }

  codeVerifier(): string {
    if (!this.#verifier) throw new Error("no sign-in is in progress");
    return this.#verifier;
  }

  async invalidateCredentials(scope: "all" | "client" | "tokens" | "verifier" | "discovery"): Promise<void> {
    if (scope === "verifier" || scope === "discovery") {
      if (scope === "verifier") this.#verifier = undefined;
      return;
    }
    await this.#update((s) => {
      const { client, tokens, saved_at, ...rest } = s;
      if (scope === "client") return { ...rest, ...(tokens ? { tokens, saved_at } : {}) };
      if (scope === "tokens") return { ...rest, ...(client ? { client } : {}) };
      return rest;
    });
  }
}

/**
 * The SDK's client_credentials providers (machine to machine): a secret (client_secret_basic, or
 * _post where the server takes only that) or a signed client assertion (private_key_jwt). Nobody
 * signs in and nothing is stored: the token lives in memory for the session and is fetched again when
 * the server refuses it. The credentials go only to the configured `issuer`: an MCP server whose
 * metadata names another authorization server gets an error, never them.
 */
export async function clientCredentialsProvider(
  oauth: ResolvedOAuth & { grant: "client_credentials" },
): Promise<OAuthClientProvider> {
  const { ClientCredentialsProvider, PrivateKeyJwtProvider } = await import(
    "@modelcontextprotocol/sdk/client/auth-extensions.js"
  );
  if (!oauth.client_id || !oauth.issuer) throw new Error("client_credentials needs client_id and issuer");
  const common = {
    clientId: oauth.client_id,
    clientName: "toolbelt",
    expectedIssuer: oauth.issuer,
    ...(oauth.scope ? { scope: oauth.scope } : {}),
  };
  if (oauth.private_key)
    return new PrivateKeyJwtProvider({
      ...common,
      privateKey: oauth.private_key.pem,
      algorithm: oauth.private_key.algorithm,
    });
  if (!oauth.client_secret) throw new Error("client_credentials needs a client secret or a private key");
  return new ClientCredentialsProvider({ ...common, clientSecret: oauth.client_secret });
}

const TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange";
const JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token";
const ID_JAG_TYPE = "urn:ietf:params:oauth:token-type:id-jag";
/** The identity provider's answer is small; a larger one is not read. */
const MAX_IDP_ANSWER_BYTES = 256 * 1024;
const IDP_TIMEOUT_MS = 30_000;

/** An OAuth error code or description from a server, safe to repeat in a message (no control characters). */
function quotable(value: unknown): string | undefined {
  return typeof value === "string" && value.length <= 300 && /^[\x20-\x7E]*$/.test(value) ? value : undefined;
}

/**
 * Exchanges the user's ID token at the identity provider (RFC 8693) for an identity assertion grant
 * (ID-JAG) naming `audience` (the MCP server's authorization server) and `resource` (the MCP server).
 * The ID token goes only to the configured token endpoint; nothing of the tokens is ever in an error.
 */
export async function exchangeIdToken(
  idp: IdentityProvider,
  request: { audience: string; resource: string; scope?: string },
  fetchFn: FetchLike = fetch,
): Promise<string> {
  const idToken = "value" in idp.id_token ? idp.id_token.value : readIdTokenFile(idp.id_token.file);
  const body = new URLSearchParams({
    grant_type: TOKEN_EXCHANGE,
    requested_token_type: ID_JAG_TYPE,
    audience: request.audience,
    resource: request.resource,
    subject_token: idToken,
    subject_token_type: ID_TOKEN_TYPE,
  });
  if (request.scope) body.set("scope", request.scope);
  const headers: Record<string, string> = {
    "content-type": "application/x-www-form-urlencoded",
    accept: "application/json",
  };
  // A confidential client authenticates with HTTP Basic (RFC 6749 §2.3.1); a public one names itself.
  if (idp.client_secret !== undefined)
    headers.authorization = `Basic ${Buffer.from(
      `${encodeURIComponent(idp.client_id)}:${encodeURIComponent(idp.client_secret)}`,
    ).toString("base64")}`;
  else body.set("client_id", idp.client_id);
  const where = `the identity provider (${idp.token_endpoint})`;
  let res: Response;
  try {
    res = await fetchFn(idp.token_endpoint, {
      method: "POST",
      headers,
      body,
      // The endpoint is the configured one: a redirect elsewhere would carry the ID token with it.
      redirect: "error",
      signal: AbortSignal.timeout(IDP_TIMEOUT_MS),
    });
  } catch (error) {
    throw new Error(`cross_app_access: ${where} could not be reached (${(error as Error).name})`);
  }
  const bytes = res.body ? await readStreamBounded(res.body, MAX_IDP_ANSWER_BYTES) : Buffer.alloc(0);
  const text = bytes?.toString("utf8");
  let answer: Record<string, unknown> = {};
  try {
    if (text !== undefined) answer = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // Not JSON: said below without its text, which might echo what was sent.
  }
  if (!res.ok) {
    const code = quotable(answer.error);
    const described = quotable(answer.error_description);
    throw new Error(
      `cross_app_access: ${where} refused the ID token exchange (HTTP ${res.status}${code ? ` ${code}` : ""}${described ? `: ${described}` : ""})`,
    );
  }
  const grant = answer.access_token;
  if (typeof grant !== "string" || grant.length === 0 || answer.issued_token_type !== ID_JAG_TYPE)
    throw new Error(`cross_app_access: ${where} did not answer with an identity assertion grant (ID-JAG)`);
  return grant;
}

/**
 * Enterprise-managed authorization (SEP-990), unattended: at each token request the user's ID token
 * is exchanged at the identity provider for an ID-JAG, which the client (its secret, by the method
 * the authorization server takes) presents as an RFC 7523 jwt-bearer grant. Tokens live in memory
 * for the session; a refused one is fetched again the same way. The client information is stamped
 * with the configured issuer, so the SDK presents nothing (and this provider exchanges nothing) when
 * the MCP server names another authorization server.
 */
export function crossAppAccessProvider(
  oauth: ResolvedOAuth & { grant: "cross_app_access" },
  serverUrl: string,
  fetchFn?: FetchLike,
): OAuthClientProvider {
  const { client_id, client_secret, issuer, idp, scope } = oauth;
  if (!client_id || !client_secret || !issuer || !idp)
    throw new Error("cross_app_access needs client_id, a client secret, issuer and the identity provider");
  let tokens: OAuthTokens | undefined;
  let discovery: OAuthDiscoveryState | undefined;
  return {
    get redirectUrl() {
      return undefined;
    },
    clientMetadata: {
      client_name: "toolbelt",
      redirect_uris: [],
      grant_types: [JWT_BEARER],
      token_endpoint_auth_method: "client_secret_basic",
      ...(scope ? { scope } : {}),
    },
    clientInformation: () => ({ client_id, client_secret, issuer }),
    tokens: () => tokens,
    saveTokens: (next) => {
      tokens = next;
    },
    redirectToAuthorization: () => {
      throw new Error("cross_app_access: nobody signs in; the identity provider's ID token is used");
    },
    saveCodeVerifier: () => {},
    codeVerifier: () => {
      throw new Error("cross_app_access: no authorization code flow");
    },
    saveDiscoveryState: (state) => {
      discovery = state;
    },
    discoveryState: () => discovery,
    invalidateCredentials: (what) => {
      if (what === "all" || what === "tokens") tokens = undefined;
      if (what === "all" || what === "discovery") discovery = undefined;
    },
    async prepareTokenRequest(requested) {
      const assertion = await exchangeIdToken(
        idp,
        {
          // The authorization server as it names itself, and the MCP server as its metadata names it.
          audience: discovery?.authorizationServerMetadata?.issuer ?? issuer,
          resource: discovery?.resourceMetadata?.resource ?? serverUrl,
          ...(requested ? { scope: requested } : {}),
        },
        fetchFn,
      );
      const params = new URLSearchParams({ grant_type: JWT_BEARER, assertion });
      if (requested) params.set("scope", requested);
      return params;
    },
  };
}

/** A loopback HTTP listener for the redirect of one sign-in. */
export interface LoopbackRedirect {
  url: string;
  state: string;
  /** The authorization code, once the browser comes back; rejects on an error redirect. */
  code: Promise<string>;
  close(): Promise<void>;
}

/** Listens on 127.0.0.1 (`port`, or any free one) for `/callback?code=...&state=...`. */
export async function listenForRedirect(port = 0): Promise<LoopbackRedirect> {
  const state = randomBytes(16).toString("hex");
  let settle: { resolve: (code: string) => void; reject: (error: Error) => void } | undefined;
  const code = new Promise<string>((resolve, reject) => {
    settle = { resolve, reject };
  });
  // Nobody may be awaiting yet (the browser can be quicker than the caller).
  code.catch(() => {});
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (url.pathname !== "/callback") {
      res.writeHead(404).end();
      return;
    }
    // Another page's redirect (or a forged one) carries another state: it is refused, not used.
    if (url.searchParams.get("state") !== state) {
      res
        .writeHead(400, { "content-type": "text/plain" })
        .end("toolbelt: this sign-in link is not the one toolbelt started\n");
      return;
    }
    const error = url.searchParams.get("error");
    const got = url.searchParams.get("code");
    res.writeHead(error || !got ? 400 : 200, { "content-type": "text/plain" });
    if (error || !got) {
      res.end("toolbelt: the sign-in failed; see your terminal\n");
      const described = url.searchParams.get("error_description");
      settle?.reject(
        new Error(
          `the authorization server answered ${error ?? "no code"}${described ? `: ${described}` : ""}`,
        ),
      );
      return;
    }
    res.end("toolbelt: signed in; you may close this tab\n");
    settle?.resolve(got);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  const address = server.address();
  const bound = typeof address === "object" && address ? address.port : port;
  return {
    url: `http://127.0.0.1:${bound}/callback`,
    state,
    code,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
