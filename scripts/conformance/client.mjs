#!/usr/bin/env node
// The client under test for the MCP conformance suite (`conformance client --command ...`): the suite
// appends its test server's URL and names the scenario in MCP_CONFORMANCE_SCENARIO. This connects
// toolbelt's own MCP client — a session made by the built SDK whose config names that URL as an HTTP
// server, the same path a project's `.mcp.json` takes — and calls every tool the server lists.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { login, readServerSpecs } from "../../packages/mcp/dist/index.js";
import { createToolbelt } from "../../packages/toolbelt/dist/index.js";

const url = process.argv[2];
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? "";
if (!url) {
  console.error("usage: client.mjs <server-url> (run by `conformance client`)");
  process.exit(2);
}

/** Arguments for the suite's tools that take some; every other tool is called with `{}`. */
const ARGS = { add_numbers: { a: 5, b: 3 } };
const SERVER = "conformance";

const root = mkdtempSync(path.join(os.tmpdir(), "tb-conformance-"));
// The sign-in is kept in the user config folder: this run's own, so it starts signed out.
process.env.TOOLBELT_CONFIG_DIR = path.join(root, ".user-config");
const secrets = mkdtempSync(path.join(os.tmpdir(), "tb-conformance-secrets-"));
// What a user puts in their own config for a server's OAuth client: the client ID metadata document
// the suite's CIMD scenario expects (used only where the authorization server supports it; others
// register dynamically), and a pre-registered client where the scenario hands one over.
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? "{}");
const clientCredentials = scenario.startsWith("auth/client-credentials-");
const crossAppAccess = scenario.startsWith("auth/cross-app-access-");
// Both get their tokens by themselves: nobody signs in.
const unattended = clientCredentials || crossAppAccess;

/**
 * The authorization server a pipeline's client was issued by. That server is the user's to know;
 * here the run learns it from the MCP server's metadata.
 */
async function issuerOf() {
  for (const where of [
    "/.well-known/oauth-protected-resource/mcp",
    "/.well-known/oauth-protected-resource",
  ]) {
    const res = await fetch(new URL(where, url));
    if (res.ok) return (await res.json()).authorization_servers?.[0];
  }
  return undefined;
}

/**
 * The client_credentials settings a pipeline puts in its config: the client id, the authorization
 * server it was issued by, and the secret from the environment or the private key from a file.
 */
async function credentialsConfig() {
  const common = { grant: "client_credentials", client_id: context.client_id, issuer: await issuerOf() };
  if (context.client_secret) {
    process.env.CONFORMANCE_CLIENT_SECRET = context.client_secret;
    // biome-ignore lint/suspicious/noTemplateCurlyInString: toolbelt expands ${VAR} in config itself
    return { ...common, client_secret: "${CONFORMANCE_CLIENT_SECRET}" };
  }
  // Outside the project, as a pipeline keeps it (a secrets mount, the runner's temp folder).
  const keyFile = path.join(secrets, "client-key.pem");
  writeFileSync(keyFile, context.private_key_pem, { mode: 0o600 });
  return { ...common, private_key_file: keyFile };
}

/**
 * The cross_app_access settings an organisation gives its agents: the client registered at the MCP
 * server's authorization server (its secret from the environment), and the identity provider's token
 * endpoint and client. The user's ID token is in a file the organisation's sign-in tool keeps fresh.
 */
async function crossAppAccessConfig() {
  process.env.CONFORMANCE_CLIENT_SECRET = context.client_secret;
  const idToken = path.join(secrets, "id_token");
  writeFileSync(idToken, context.idp_id_token, { mode: 0o600 });
  return {
    grant: "cross_app_access",
    client_id: context.client_id,
    // biome-ignore lint/suspicious/noTemplateCurlyInString: toolbelt expands ${VAR} in config itself
    client_secret: "${CONFORMANCE_CLIENT_SECRET}",
    issuer: await issuerOf(),
    idp_token_endpoint: context.idp_token_endpoint,
    idp_client_id: context.idp_client_id,
    id_token_file: idToken,
  };
}

const oauth = clientCredentials
  ? await credentialsConfig()
  : crossAppAccess
    ? await crossAppAccessConfig()
    : scenario.startsWith("auth/")
      ? {
          client_metadata_url: "https://conformance-test.local/client-metadata.json",
          ...(context.client_id ? { client_id: context.client_id } : {}),
          ...(context.client_secret ? { client_secret: context.client_secret } : {}),
        }
      : undefined;
const mcpServers = { [SERVER]: { type: "http", url, ...(oauth ? { oauth } : {}) } };
let failed = false;

/**
 * `toolbelt mcp login` with a headless browser: open the authorization URL, and follow its redirect
 * to toolbelt's loopback listener, as a browser would after the user approves.
 */
async function signIn() {
  const spec = readServerSpecs(root, { mcpServers }).servers[0];
  const result = await login(spec, {
    timeoutMs: 20_000,
    authorize: async (authorizationUrl) => {
      const page = await fetch(authorizationUrl, { redirect: "manual" });
      const next = page.headers.get("location");
      if (!next) throw new Error(`the authorization endpoint answered ${page.status} without a redirect`);
      await fetch(new URL(next, authorizationUrl));
    },
  });
  console.log(
    `[${scenario}] login: ${result.outcome}, ${result.tools} tools${result.scope ? `, scope ${result.scope}` : ""}`,
  );
}

// A client_credentials or cross_app_access client gets its token by itself.
if (scenario.startsWith("auth/") && !unattended) await signIn();

const session = await createToolbelt({
  root,
  config: {
    agent: { tool_search: "off" },
    mcpServers,
    // Nobody sits at a conformance run: answer a server's form with the defaults it names (SEP-1034).
    tools: { mcp: { elicitation: "accept_defaults" } },
  },
  allow: ["mcp"],
});
try {
  const status = await session.call("mcp_status", {});
  const row = status.servers?.find((s) => s.server === SERVER);
  console.log(`[${scenario}] ${SERVER}: ${row?.state}${row?.error ? ` (${row.error})` : ""}`);
  if (row?.state !== "ready") failed = true;
  const prefix = `mcp__${SERVER}__`;
  for (const name of session
    .bind()
    .tools.map((t) => t.name)
    .filter((n) => n.startsWith(prefix))) {
    const tool = name.slice(prefix.length);
    let result = await session.call(name, ARGS[tool] ?? {});
    console.log(`[${scenario}] ${tool}: ${JSON.stringify(result).slice(0, 500)}`);
    // Refused for want of scope (step-up): the error names `toolbelt mcp login` and the scopes; do
    // what the user would — sign in again, approving them — and call once more in the same session.
    if (result.kind === "error" && result.scope && scenario.startsWith("auth/")) {
      await signIn();
      result = await session.call(name, ARGS[tool] ?? {});
      console.log(`[${scenario}] ${tool} after the step-up: ${JSON.stringify(result).slice(0, 500)}`);
    }
    if (result.kind === "error") failed = true;
  }
} finally {
  await session.close();
  rmSync(root, { recursive: true, force: true });
  rmSync(secrets, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
