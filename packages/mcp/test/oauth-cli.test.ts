// End to end: a project's HTTP MCP server behind OAuth (the oauth-server fixture: the SDK's
// authorization-server router, dynamic registration, PKCE), signed in to with the built CLI's
// `toolbelt mcp login` — the test plays the browser — used by `exec`, shown by `doctor`, refreshed
// when the access token has expired, and forgotten by `toolbelt mcp logout`.
import { generateKeyPairSync } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { assertBuilt } from "../../toolbelt/test/cli-harness.js";
import { cli, login, project, startServer, tempDir } from "./oauth-harness.js";

beforeAll(assertBuilt);

const call = `${JSON.stringify({ id: "1", tool: "mcp__remote__whoami", input: {} })}\n`;

describe("OAuth sign-in to a project's HTTP MCP server", { timeout: 120_000 }, () => {
  it("login stores the tokens 0600 in the user config folder; exec uses them; doctor shows it; logout forgets them", async () => {
    const { url, log } = await startServer();
    const root = project(url);
    const userDir = tempDir("tb-oauth-user-");

    // Not signed in: the server is reported with the command that fixes it.
    const status = `${JSON.stringify({ id: "s", tool: "mcp_status", input: {} })}\n`;
    const before = await cli(["exec", "--root", root], userDir, status);
    expect(before.stdout).toContain("it asks for a sign-in");
    expect(before.stdout).toContain("run `toolbelt mcp login remote`");

    const signed = await login(root, userDir);
    expect(signed.code, signed.stderr).toBe(0);
    expect(signed.stderr).toContain('signed in to MCP server "remote" (2 tools)');
    // The authorization request named this server as the resource (RFC 8707).
    expect(readFileSync(log, "utf8")).toContain(`grant authorization_code resource=${url}`);

    const files = readdirSync(path.join(userDir, "mcp-oauth"));
    expect(files).toHaveLength(1);
    const file = path.join(userDir, "mcp-oauth", files[0] as string);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(path.join(userDir, "mcp-oauth")).mode & 0o777).toBe(0o700);
    const stored = JSON.parse(readFileSync(file, "utf8")) as {
      url: string;
      tokens: { access_token: string };
    };
    expect(stored.url).toBe(url);
    // Nothing in the project.
    expect(readdirSync(root).sort()).toEqual([".mcp.json", "configs"]);

    const run = await cli(["exec", "--root", root, "--events", "--allow", "mcp"], userDir, call);
    const answer = run.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { id?: string; result?: { content?: Array<{ text: string }> } })
      .find((l) => l.id === "1");
    expect(answer?.result?.content?.[0]?.text).toMatch(/^hello, client-/);

    const doctor = await cli(["doctor", "--root", root, "--format", "json"], userDir);
    expect(doctor.stdout).toMatch(/"name":\s*"auth remote"[^}]*signed in until/);

    // The token never reaches what toolbelt writes: results, events, doctor, the login's own output.
    for (const out of [signed, run, doctor]) {
      expect(out.stdout).not.toContain(stored.tokens.access_token);
      expect(out.stderr).not.toContain(stored.tokens.access_token);
    }

    const out = await cli(["mcp", "logout", "remote", "--root", root], userDir);
    expect(out.stderr).toContain('signed out of MCP server "remote"');
    expect(readdirSync(path.join(userDir, "mcp-oauth"))).toEqual([]);
    const after = await cli(["exec", "--root", root], userDir, status);
    expect(after.stdout).toContain("run `toolbelt mcp login remote`");
  });

  it("an expired access token is refreshed with the stored refresh token, and the new tokens are stored", async () => {
    const { url, log } = await startServer({ OAUTH_EXPIRES_IN: "1" });
    const root = project(url);
    const userDir = tempDir("tb-oauth-user-");
    expect((await login(root, userDir)).code).toBe(0);
    const file = path.join(userDir, "mcp-oauth", readdirSync(path.join(userDir, "mcp-oauth"))[0] as string);
    const first = (JSON.parse(readFileSync(file, "utf8")) as { tokens: { access_token: string } }).tokens
      .access_token;
    // The fixture's tokens live one second: wait on the server refusing the stored one, not on a clock.
    await expect
      .poll(
        async () =>
          (await fetch(url, { method: "POST", headers: { authorization: `Bearer ${first}` } })).status,
        {
          timeout: 10_000,
        },
      )
      .toBe(401);
    const run = await cli(["exec", "--root", root, "--allow", "mcp"], userDir, call);
    expect(run.stdout).toContain("hello, client-");
    expect(readFileSync(log, "utf8")).toContain("grant refresh_token");
    const now = (JSON.parse(readFileSync(file, "utf8")) as { tokens: { access_token: string } }).tokens
      .access_token;
    expect(now).not.toBe(first);
  });

  it("a call refused for want of scope (403 insufficient_scope) names the login and the scopes; login steps up to the union; the call then works", async () => {
    const { url, log } = await startServer();
    const root = project(url);
    const userDir = tempDir("tb-oauth-user-");
    expect((await login(root, userDir)).code).toBe(0);
    const publish = `${JSON.stringify({ id: "p", tool: "mcp__remote__publish", input: {} })}\n`;
    const answer = (run: { stdout: string }) =>
      run.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { id?: string; result?: unknown; error?: { message: string } })
        .find((l) => l.id === "p");

    // Headless: nobody can approve a wider grant, so the call fails saying what would.
    const refused = await cli(["exec", "--root", root, "--allow", "mcp"], userDir, publish);
    const message = JSON.stringify(answer(refused));
    expect(message).toContain("run `toolbelt mcp login remote`");
    // The scopes already granted joined with the one the server named (it named only tools:publish).
    expect(message).toContain('scope \\"tools tools:publish\\"');
    expect(message).not.toContain("published");

    const stepped = await login(root, userDir);
    expect(stepped.code, stepped.stderr).toBe(0);
    expect(stepped.stderr).toContain(
      'signed in again (step-up) to MCP server "remote" for scope "tools tools:publish"',
    );
    // A second authorization, asking for both scopes (a refresh can never widen a grant).
    expect(readFileSync(log, "utf8")).toContain(
      `grant authorization_code resource=${url} scope=tools tools:publish`,
    );

    const ok = await cli(["exec", "--root", root, "--allow", "mcp"], userDir, publish);
    expect(JSON.stringify(answer(ok))).toContain("published with scope tools tools:publish");
    // Done: the next login has nothing to step up.
    const again = await login(root, userDir);
    expect(again.stderr).toContain('already signed in to MCP server "remote"');
  });

  it("login times out clearly when nobody comes back from the sign-in page", async () => {
    const { url } = await startServer();
    const root = project(url);
    const userDir = tempDir("tb-oauth-user-");
    const run = await cli(
      ["mcp", "login", "remote", "--root", root, "--no-browser", "--timeout", "1"],
      userDir,
    );
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain("open this URL in a browser");
    expect(run.stderr).toContain("nobody came back from the sign-in page within 1s");
  });

  it("an untrusted project's server cannot be signed in to (its .mcp.json is not read)", async () => {
    const { url } = await startServer();
    const root = project(url);
    const userDir = tempDir("tb-oauth-user-");
    const run = await cli(["mcp", "login", "remote", "--root", root, "--no-trust", "--no-browser"], userDir);
    expect(run.code).not.toBe(0);
    expect(run.stderr).not.toContain("/authorize");
  });
});

/** A trusted project whose configs/app.json names the server with client_credentials settings. */
function ccProject(url: string, oauth: Record<string, string>): string {
  const root = tempDir("tb-oauth-cc-project-");
  mkdirSync(path.join(root, "configs"));
  writeFileSync(
    path.join(root, "configs", "app.json"),
    JSON.stringify({
      agent: { tool_search: "off" },
      mcpServers: { remote: { type: "http", url, oauth: { grant: "client_credentials", ...oauth } } },
    }),
  );
  return root;
}

describe("client_credentials: an unattended pipeline reaches an OAuth MCP server", {
  timeout: 120_000,
}, () => {
  const secret = `s3cret-${Date.now()}-do-not-print`;
  const status = `${JSON.stringify({ id: "s", tool: "mcp_status", input: {} })}\n`;

  it("a client secret from the environment: no sign-in, nothing stored, the secret nowhere in the output", async () => {
    const { url, log } = await startServer({ OAUTH_CC_CLIENT_ID: "ci-bot", OAUTH_CC_SECRET: secret });
    const issuer = new URL("/", url).href;
    // biome-ignore lint/suspicious/noTemplateCurlyInString: toolbelt expands ${VAR} in config
    const root = ccProject(url, { client_id: "ci-bot", issuer, client_secret: "${TB_TEST_MCP_SECRET}" });
    const userDir = tempDir("tb-oauth-cc-user-");
    process.env.TB_TEST_MCP_SECRET = secret;
    try {
      const run = await cli(["exec", "--root", root, "--events", "--allow", "mcp"], userDir, call);
      expect(run.stdout).toContain("hello, ci-bot");
      expect(readFileSync(log, "utf8")).toContain(
        `grant client_credentials auth=client_secret_post resource=${url}`,
      );
      const doctor = await cli(["doctor", "--root", root, "--format", "json"], userDir);
      expect(doctor.stdout).toMatch(
        /"name":\s*"auth remote"[^}]*client credentials \(client ci-bot, client secret/,
      );
      const loginRun = await cli(["mcp", "login", "remote", "--root", root, "--no-browser"], userDir);
      expect(loginRun.code).not.toBe(0);
      expect(loginRun.stderr).toContain(
        `authenticates with oauth.grant "client_credentials": nobody signs in`,
      );
      for (const out of [run, doctor, loginRun]) expect(out.stdout + out.stderr).not.toContain(secret);
      // Nothing kept: no sign-in file, nothing new in the project.
      expect(existsSync(path.join(userDir, "mcp-oauth"))).toBe(false);
      expect(readdirSync(root)).toEqual(["configs"]);
    } finally {
      delete process.env.TB_TEST_MCP_SECRET;
    }
  });

  it("a private key from a file signs the client assertion (private_key_jwt)", async () => {
    const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    const { url, log } = await startServer({
      OAUTH_CC_CLIENT_ID: "ci-bot",
      OAUTH_CC_PUBLIC_KEY: publicKey.export({ type: "spki", format: "pem" }).toString(),
    });
    const keyFile = path.join(tempDir("tb-oauth-cc-key-"), "key.pem");
    // SEC1 ("EC PRIVATE KEY"), as openssl writes it: toolbelt takes it as well as PKCS#8.
    writeFileSync(keyFile, privateKey.export({ type: "sec1", format: "pem" }), { mode: 0o600 });
    const root = ccProject(url, {
      client_id: "ci-bot",
      issuer: new URL("/", url).href,
      private_key_file: keyFile,
    });
    const run = await cli(["exec", "--root", root, "--allow", "mcp"], tempDir("tb-oauth-cc-user-"), call);
    expect(run.stdout).toContain("hello, ci-bot");
    expect(readFileSync(log, "utf8")).toContain("grant client_credentials auth=private_key_jwt");
  });

  it("a refused secret says so (not `mcp login`), without the secret; a missing issuer is a config problem", async () => {
    const { url } = await startServer({ OAUTH_CC_CLIENT_ID: "ci-bot", OAUTH_CC_SECRET: "the-right-one" });
    const userDir = tempDir("tb-oauth-cc-user-");
    const secretFile = path.join(tempDir("tb-oauth-cc-key-"), "secret");
    writeFileSync(secretFile, `${secret}\n`, { mode: 0o600 });
    const wrong = ccProject(url, {
      client_id: "ci-bot",
      issuer: new URL("/", url).href,
      client_secret_file: secretFile,
    });
    const refused = await cli(["exec", "--root", wrong], userDir, status);
    expect(refused.stdout).toContain("refused toolbelt's client credentials");
    expect(refused.stdout).not.toContain("mcp login");
    expect(refused.stdout + refused.stderr).not.toContain(secret);

    const noIssuer = ccProject(url, { client_id: "ci-bot", client_secret_file: secretFile });
    const problem = await cli(["exec", "--root", noIssuer], userDir, status);
    expect(problem.stdout).toContain('oauth.issuer: required for grant \\"client_credentials\\"');
  });
});

describe("cross_app_access: the organisation's identity provider vouches for the user, unattended", {
  timeout: 120_000,
}, () => {
  const idToken = `id-token-${Date.now()}-do-not-print`;
  const secret = `xaa-secret-${Date.now()}-do-not-print`;
  const idpSecret = `idp-secret-${Date.now()}-do-not-print`;
  const status = `${JSON.stringify({ id: "s", tool: "mcp_status", input: {} })}\n`;

  function idTokenFile(text: string): string {
    const file = path.join(tempDir("tb-oauth-xaa-idtoken-"), "id_token");
    writeFileSync(file, `${text}\n`, { mode: 0o600 });
    return file;
  }

  it("the ID token is exchanged at the identity provider, the grant presented at the issuer: no sign-in, nothing stored, no token or secret in the output", async () => {
    const { url, log } = await startServer({
      OAUTH_CC_CLIENT_ID: "agent",
      OAUTH_CC_SECRET: secret,
      OAUTH_XAA_ID_TOKEN: idToken,
      OAUTH_XAA_IDP_CLIENT: "toolbelt-at-idp",
      OAUTH_XAA_IDP_SECRET: idpSecret,
    });
    const issuer = new URL("/", url).href;
    const root = ccProject(url, {
      grant: "cross_app_access",
      client_id: "agent",
      issuer,
      // biome-ignore lint/suspicious/noTemplateCurlyInString: toolbelt expands ${VAR} in config
      client_secret: "${TB_TEST_XAA_SECRET}",
      idp_token_endpoint: new URL("/idp/token", url).href,
      idp_client_id: "toolbelt-at-idp",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: toolbelt expands ${VAR} in config
      idp_client_secret: "${TB_TEST_XAA_IDP_SECRET}",
      id_token_file: idTokenFile(idToken),
    });
    const userDir = tempDir("tb-oauth-xaa-user-");
    process.env.TB_TEST_XAA_SECRET = secret;
    process.env.TB_TEST_XAA_IDP_SECRET = idpSecret;
    try {
      const run = await cli(["exec", "--root", root, "--events", "--allow", "mcp"], userDir, call);
      expect(run.stdout).toContain("hello, agent");
      const grants = readFileSync(log, "utf8");
      // RFC 8693 at the identity provider: the authorization server as audience, the MCP server as resource.
      expect(grants).toContain(`idp exchange auth=client_secret_basic audience=${issuer} resource=${url}`);
      // RFC 7523 at the authorization server, for the MCP server.
      expect(grants).toMatch(new RegExp(`grant jwt-bearer auth=client_secret_\\w+ resource=${url}`));
      const doctor = await cli(["doctor", "--root", root, "--format", "json"], userDir);
      expect(doctor.stdout).toMatch(/"name":\s*"auth remote"[^}]*cross-app access \(client agent, issuer/);
      const loginRun = await cli(["mcp", "login", "remote", "--root", root, "--no-browser"], userDir);
      expect(loginRun.code).not.toBe(0);
      expect(loginRun.stderr).toContain(`authenticates with oauth.grant "cross_app_access": nobody signs in`);
      for (const out of [run, doctor, loginRun])
        for (const hidden of [idToken, secret, idpSecret])
          expect(out.stdout + out.stderr).not.toContain(hidden);
      expect(existsSync(path.join(userDir, "mcp-oauth"))).toBe(false);
      expect(readdirSync(root)).toEqual(["configs"]);
    } finally {
      delete process.env.TB_TEST_XAA_SECRET;
      delete process.env.TB_TEST_XAA_IDP_SECRET;
    }
  });

  it("a refused ID token is named with the identity provider's error, not `mcp login`, and never quoted; an http identity provider off loopback is a config problem", async () => {
    const { url, log } = await startServer({
      OAUTH_CC_CLIENT_ID: "agent",
      OAUTH_CC_SECRET: secret,
      OAUTH_XAA_ID_TOKEN: idToken,
      OAUTH_XAA_IDP_CLIENT: "toolbelt-at-idp",
    });
    const userDir = tempDir("tb-oauth-xaa-user-");
    const stale = `stale-${idToken}`;
    const settings = {
      grant: "cross_app_access",
      client_id: "agent",
      issuer: new URL("/", url).href,
      client_secret_file: idTokenFile(secret),
      idp_token_endpoint: new URL("/idp/token", url).href,
      idp_client_id: "toolbelt-at-idp",
    };
    const refused = await cli(
      ["exec", "--root", ccProject(url, { ...settings, id_token_file: idTokenFile(stale) })],
      userDir,
      status,
    );
    expect(refused.stdout).toContain(
      "refused the ID token exchange (HTTP 400 invalid_grant: ID token not valid)",
    );
    expect(refused.stdout).not.toContain("mcp login");
    for (const hidden of [stale, secret]) expect(refused.stdout + refused.stderr).not.toContain(hidden);
    expect(existsSync(log) ? readFileSync(log, "utf8") : "").not.toContain("grant jwt-bearer");

    const clear = await cli(
      [
        "exec",
        "--root",
        ccProject(url, {
          ...settings,
          id_token_file: idTokenFile(idToken),
          idp_token_endpoint: "http://idp.example.com/token",
        }),
      ],
      userDir,
      status,
    );
    expect(clear.stdout).toContain(
      "oauth.idp_token_endpoint: must be an https URL (http only on a loopback host)",
    );
  });
});
