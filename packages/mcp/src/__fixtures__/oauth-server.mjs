// A real OAuth-protected MCP server for tests: the SDK's authorization-server router (RFC 8414 and
// RFC 9728 metadata, dynamic client registration, PKCE) over a small in-memory provider that
// approves every authorization at once, and a streamable-HTTP MCP endpoint at /mcp behind a bearer
// check. Prints {"url": "<mcp url>"} on stdout when listening.
// OAUTH_EXPIRES_IN: seconds a signed-in access token lives (default 3600; a refreshed one lives an hour,
// so a test of the refresh does not race a loaded machine's clock twice); OAUTH_LOG: a file each
// token-endpoint grant and each /mcp bearer is appended to (as "grant <type>" / "bearer <token>").
// The tool `publish` needs the scope `tools:publish`, which the metadata does not list (a step-up):
// a call without it gets 403 insufficient_scope naming only that scope, as RFC 6750 says.
// OAUTH_CC_CLIENT_ID with OAUTH_CC_SECRET and/or OAUTH_CC_PUBLIC_KEY (PEM, EC P-256): the token
// endpoint also takes the client_credentials grant from that client, authenticated by its secret
// (Basic or in the body) or by an ES256 client assertion (private_key_jwt); logged as
// "grant client_credentials auth=<method>".
// OAUTH_XAA_ID_TOKEN with OAUTH_XAA_IDP_CLIENT (and OAUTH_XAA_IDP_SECRET for a confidential one):
// cross-app access (SEP-990). /idp/token plays the enterprise identity provider: it exchanges that ID
// token (RFC 8693) for an identity assertion grant (an opaque ID-JAG here) naming the audience and
// resource asked for, logged as "idp exchange auth=<method> audience=<a> resource=<r>"; the token
// endpoint then takes it as a jwt-bearer grant (RFC 7523) from the OAUTH_CC_CLIENT_ID client with
// its OAUTH_CC_SECRET, logged as "grant jwt-bearer auth=<method> resource=<r>".
import { createPublicKey, randomBytes, verify } from "node:crypto";
import { appendFileSync } from "node:fs";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { requireBearerAuth } from "@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js";
import { getOAuthProtectedResourceMetadataUrl, mcpAuthRouter } from "@modelcontextprotocol/sdk/server/auth/router.js";
import { InvalidTokenError } from "@modelcontextprotocol/sdk/server/auth/errors.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import express from "express";

const expiresIn = Number(process.env.OAUTH_EXPIRES_IN ?? 3600);
const log = (line) => {
  if (process.env.OAUTH_LOG) appendFileSync(process.env.OAUTH_LOG, `${line}\n`);
};
const token = (kind) => `${kind}-${randomBytes(12).toString("hex")}`;

const clients = new Map();
const codes = new Map();
const access = new Map();
const refresh = new Map();

const provider = {
  clientsStore: {
    getClient: async (id) => clients.get(id),
    registerClient: async (client) => {
      const full = { ...client, client_id: token("client"), client_id_issued_at: Math.floor(Date.now() / 1000) };
      clients.set(full.client_id, full);
      return full;
    },
  },
  async authorize(client, params, res) {
    const code = token("code");
    codes.set(code, { client: client.client_id, challenge: params.codeChallenge, scopes: params.scopes ?? [], resource: params.resource?.href });
    const target = new URL(params.redirectUri);
    target.searchParams.set("code", code);
    if (params.state) target.searchParams.set("state", params.state);
    res.redirect(target.href);
  },
  async challengeForAuthorizationCode(_client, code) {
    return codes.get(code)?.challenge;
  },
  issue(clientId, scopes, resource, life = expiresIn) {
    const at = token("at");
    const rt = token("rt");
    access.set(at, { clientId, scopes, expiresAt: Math.floor(Date.now() / 1000) + life, resource });
    refresh.set(rt, { clientId, scopes, resource });
    return { access_token: at, refresh_token: rt, token_type: "bearer", expires_in: life, scope: scopes.join(" ") };
  },
  async exchangeAuthorizationCode(client, code) {
    const grant = codes.get(code);
    if (!grant || grant.client !== client.client_id) throw new Error("unknown code");
    codes.delete(code);
    log(`grant authorization_code resource=${grant.resource} scope=${grant.scopes.join(" ")}`);
    return this.issue(client.client_id, grant.scopes, grant.resource);
  },
  async exchangeRefreshToken(client, rt) {
    const grant = refresh.get(rt);
    if (!grant || grant.clientId !== client.client_id) throw new Error("unknown refresh token");
    refresh.delete(rt);
    log("grant refresh_token");
    return this.issue(client.client_id, grant.scopes, grant.resource, 3600);
  },
  async verifyAccessToken(at) {
    const grant = access.get(at);
    if (!grant || grant.expiresAt <= Math.floor(Date.now() / 1000)) throw new InvalidTokenError("invalid or expired token");
    log(`bearer ${at}`);
    return { token: at, clientId: grant.clientId, scopes: grant.scopes, expiresAt: grant.expiresAt };
  },
};

const app = express();
const server = app.listen(0, "127.0.0.1", () => {
  const base = new URL(`http://127.0.0.1:${server.address().port}`);
  const mcpUrl = new URL("/mcp", base);
  const basicOf = (req) =>
    req.headers.authorization?.startsWith("Basic ")
      ? Buffer.from(req.headers.authorization.slice(6), "base64").toString().split(":").map(decodeURIComponent)
      : undefined;
  const grants = new Map();
  app.post("/idp/token", express.urlencoded({ extended: false }), (req, res) => {
    const b = req.body ?? {};
    const refuse = (error, why) => res.status(400).json({ error, error_description: why });
    const basic = basicOf(req);
    const want = process.env.OAUTH_XAA_IDP_SECRET;
    if (want ? !basic || basic[0] !== process.env.OAUTH_XAA_IDP_CLIENT || basic[1] !== want : b.client_id !== process.env.OAUTH_XAA_IDP_CLIENT)
      return res.status(401).json({ error: "invalid_client", error_description: "unknown client at the identity provider" });
    if (b.grant_type !== "urn:ietf:params:oauth:grant-type:token-exchange") return refuse("unsupported_grant_type", "token exchange only");
    if (b.subject_token_type !== "urn:ietf:params:oauth:token-type:id_token" || b.requested_token_type !== "urn:ietf:params:oauth:token-type:id-jag")
      return refuse("invalid_request", "wrong token types");
    if (!process.env.OAUTH_XAA_ID_TOKEN || b.subject_token !== process.env.OAUTH_XAA_ID_TOKEN) return refuse("invalid_grant", "ID token not valid");
    if (!b.audience || !b.resource) return refuse("invalid_request", "audience and resource required");
    log(`idp exchange auth=${basic ? "client_secret_basic" : "client_id"} audience=${b.audience} resource=${b.resource}`);
    const jag = token("idjag");
    grants.set(jag, { audience: b.audience, resource: b.resource, expiresAt: Date.now() + 300_000 });
    res.json({ access_token: jag, issued_token_type: "urn:ietf:params:oauth:token-type:id-jag", token_type: "N_A", expires_in: 300 });
  });
  app.post("/token", express.urlencoded({ extended: false }), (req, res, next) => {
    if (req.body?.grant_type !== "urn:ietf:params:oauth:grant-type:jwt-bearer") return next();
    const id = process.env.OAUTH_CC_CLIENT_ID;
    const basic = basicOf(req);
    const [client, secret] = basic ?? [req.body.client_id, req.body.client_secret];
    if (!id || client !== id || secret !== process.env.OAUTH_CC_SECRET)
      return res.status(401).json({ error: "invalid_client", error_description: "wrong client secret" });
    const grant = grants.get(req.body.assertion);
    grants.delete(req.body.assertion);
    const audiences = [base.href, base.href.replace(/\/$/, "")];
    if (!grant || grant.expiresAt < Date.now() || !audiences.includes(grant.audience) || grant.resource !== mcpUrl.href)
      return res.status(400).json({ error: "invalid_grant", error_description: "identity assertion grant not valid here" });
    log(`grant jwt-bearer auth=${basic ? "client_secret_basic" : "client_secret_post"} resource=${grant.resource}`);
    res.json(provider.issue(id, req.body.scope ? req.body.scope.split(" ") : [], grant.resource));
  });
  app.post("/token", express.urlencoded({ extended: false }), (req, res, next) => {
    if (req.body?.grant_type !== "client_credentials") return next();
    const id = process.env.OAUTH_CC_CLIENT_ID;
    const deny = (why) => res.status(401).json({ error: "invalid_client", error_description: why });
    let method;
    const basic = basicOf(req);
    if (basic || req.body.client_secret) {
      const [client, secret] = basic ?? [req.body.client_id, req.body.client_secret];
      if (!id || client !== id || secret !== process.env.OAUTH_CC_SECRET) return deny("wrong client secret");
      method = basic ? "client_secret_basic" : "client_secret_post";
    } else if (req.body.client_assertion) {
      const [head, body, signature] = String(req.body.client_assertion).split(".");
      const key = process.env.OAUTH_CC_PUBLIC_KEY && createPublicKey(process.env.OAUTH_CC_PUBLIC_KEY);
      const ok =
        key &&
        verify("sha256", Buffer.from(`${head}.${body}`), { key, dsaEncoding: "ieee-p1363" }, Buffer.from(signature ?? "", "base64url"));
      const claims = ok ? JSON.parse(Buffer.from(body, "base64url").toString()) : {};
      const audience = [base.href, base.href.replace(/\/$/, ""), new URL("/token", base).href];
      if (!ok || claims.iss !== id || claims.sub !== id || ![claims.aud].flat().some((a) => audience.includes(a)) || claims.exp * 1000 < Date.now())
        return deny("bad client assertion");
      method = "private_key_jwt";
    } else return deny("no client authentication");
    log(`grant client_credentials auth=${method} resource=${req.body.resource}`);
    res.json(provider.issue(id, req.body.scope ? req.body.scope.split(" ") : [], req.body.resource));
  });
  app.use(mcpAuthRouter({ provider, issuerUrl: base, resourceServerUrl: mcpUrl, scopesSupported: ["tools"] }));
  app.use(express.json());
  app.post(
    "/mcp",
    requireBearerAuth({ verifier: provider, resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(mcpUrl) }),
    async (req, res) => {
      if (req.body?.method === "tools/call" && req.body.params?.name === "publish" && !req.auth.scopes.includes("tools:publish")) {
        res
          .status(403)
          .set(
            "WWW-Authenticate",
            `Bearer error="insufficient_scope", scope="tools:publish", resource_metadata="${getOAuthProtectedResourceMetadataUrl(mcpUrl)}"`,
          )
          .json({ error: "insufficient_scope" });
        return;
      }
      const mcp = new McpServer({ name: "oauth-toy", version: "1.0.0" });
      mcp.registerTool("whoami", { description: "Says which client called.", annotations: { readOnlyHint: true } }, async (extra) => ({
        content: [{ type: "text", text: `hello, ${extra.authInfo?.clientId ?? "nobody"}` }],
      }));
      mcp.registerTool("publish", { description: "Needs the tools:publish scope." }, async (extra) => ({
        content: [{ type: "text", text: `published with scope ${extra.authInfo?.scopes.join(" ")}` }],
      }));
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.on("close", () => {
        transport.close();
        mcp.close();
      });
      await mcp.connect(transport);
      await transport.handleRequest(req, res, req.body);
    },
  );
  process.stdout.write(`${JSON.stringify({ url: mcpUrl.href })}\n`);
});
