import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseConfig } from "@toolbelt/core";
import { afterEach, describe, expect, it } from "vitest";
import { mcpConfig } from "./contrib.js";
import { expandEnv, hasMcpServers, readIdTokenFile, readServerSpecs } from "./server-config.js";
import { accessFor, toolNameFor } from "./tools.js";

// The mcp family's own section: core alone does not know mcpServers.
const parse = (value: unknown) => parseConfig(value, "config", [mcpConfig]);

const roots: string[] = [];
function root(mcpJson?: unknown): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), "tb-mcp-cfg-"));
  roots.push(dir);
  if (mcpJson !== undefined)
    writeFileSync(
      path.join(dir, ".mcp.json"),
      typeof mcpJson === "string" ? mcpJson : JSON.stringify(mcpJson),
    );
  return dir;
}
afterEach(() => {
  for (const dir of roots.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const TRUSTED = { projectTrusted: true };

/** The spec, or the problem, of one HTTP server in `dir` with these `oauth` settings. */
function oauthSpec(dir: string, oauth: Record<string, string>) {
  const { servers, problems } = readServerSpecs(
    dir,
    parse({ mcpServers: { s: { url: "https://a.example/mcp", oauth } } }),
    TRUSTED,
  );
  return servers[0] ?? problems[0];
}

/** The problem those settings are, or "" when they are valid. */
function oauthProblem(dir: string, oauth: Record<string, string>): string {
  return (oauthSpec(dir, oauth) as { error?: string }).error ?? "";
}

describe("readServerSpecs", () => {
  it("takes an OAuth client (pre-registered, or a metadata document) from config only, never from .mcp.json", () => {
    process.env.TB_TEST_OAUTH_SECRET = "s3cret";
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a ${VAR} reference, expanded by toolbelt
    const oauth = { client_id: "mine", client_secret: "${TB_TEST_OAUTH_SECRET}" };
    const dir = root({ mcpServers: { issues: { type: "http", url: "https://a.example/mcp", oauth } } });
    const fromFile = readServerSpecs(dir, parse({}), TRUSTED).servers[0];
    expect(fromFile).toMatchObject({ name: "issues", source: ".mcp.json" });
    expect(fromFile).not.toHaveProperty("oauth");
    const config = parse({ mcpServers: { issues: { url: "https://a.example/mcp", oauth } } });
    expect(readServerSpecs(dir, config, TRUSTED).servers[0]).toMatchObject({
      source: "config",
      oauth: { client_id: "mine", client_secret: "s3cret" },
    });
    expect(() =>
      parse({
        mcpServers: {
          x: { url: "https://a.example/mcp", oauth: { client_metadata_url: "http://a.example/c.json" } },
        },
      }),
    ).toThrow(/https/);
  });

  it("client_credentials: reads the secret or key from a file, checks the grant's keys, and never quotes a secret in a problem", () => {
    const dir = root();
    const secretFile = path.join(dir, "secret");
    writeFileSync(secretFile, "file-s3cret\n");
    const keyFile = path.join(dir, "key.pem");
    const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    writeFileSync(keyFile, privateKey.export({ type: "pkcs1", format: "pem" }));
    const badKey = path.join(dir, "bad.pem");
    writeFileSync(badKey, "-----BEGIN PRIVATE KEY-----\nbad-key-material\n-----END PRIVATE KEY-----\n");
    const cc = { grant: "client_credentials", client_id: "ci", issuer: "https://auth.example/" };
    expect(oauthSpec(dir, { ...cc, client_secret_file: secretFile })).toMatchObject({
      oauth: { grant: "client_credentials", client_secret: "file-s3cret", issuer: "https://auth.example/" },
    });
    // A PKCS#1 RSA key is taken, turned into PKCS#8, and signs with RS256.
    const keyed = oauthSpec(dir, { ...cc, private_key_file: keyFile }) as {
      oauth?: { private_key?: { pem: string; algorithm: string } };
    };
    expect(keyed.oauth?.private_key?.algorithm).toBe("RS256");
    expect(keyed.oauth?.private_key?.pem).toContain("BEGIN PRIVATE KEY");
    expect(oauthProblem(dir, { ...cc, private_key_file: badKey })).toContain(
      "oauth.private_key_file: not a PEM private key",
    );
    expect(oauthProblem(dir, { ...cc, private_key_file: badKey })).not.toContain("bad-key-material");
    expect(oauthProblem(dir, { ...cc, client_secret_file: "relative/secret" })).toContain(
      "is not an absolute path",
    );
    expect(oauthProblem(dir, { ...cc, client_secret_file: path.join(dir, "missing") })).toContain("(ENOENT)");
    expect(oauthProblem(dir, { ...cc, client_secret: "x", client_secret_file: secretFile })).toContain(
      "not both",
    );
    expect(oauthProblem(dir, { ...cc })).toContain("needs a client_secret");
    expect(oauthProblem(dir, { ...cc, client_secret: "x", private_key_file: keyFile })).toContain(
      "one of them",
    );
    expect(oauthProblem(dir, { grant: "client_credentials", client_id: "ci", client_secret: "x" })).toContain(
      "oauth.issuer: required",
    );
    expect(oauthProblem(dir, { client_id: "ci", private_key_file: keyFile })).toContain(
      'only for grant "client_credentials"',
    );
  });

  it("cross_app_access: the identity provider over https (http only on loopback), the ID token from the environment or a file read again at each exchange, each grant's keys its own", () => {
    const dir = root();
    const tokenFile = path.join(dir, "id_token");
    writeFileSync(tokenFile, "id-t0ken\n");
    const xaa = {
      grant: "cross_app_access",
      client_id: "agent",
      client_secret: "s3cret",
      issuer: "https://auth.example/",
      idp_token_endpoint: "https://idp.example/oauth2/token",
      idp_client_id: "toolbelt",
    };
    expect(oauthSpec(dir, { ...xaa, id_token_file: tokenFile })).toMatchObject({
      oauth: {
        grant: "cross_app_access",
        issuer: "https://auth.example/",
        idp: {
          token_endpoint: "https://idp.example/oauth2/token",
          client_id: "toolbelt",
          id_token: { file: tokenFile },
        },
      },
    });
    // The file is read at each exchange (a sign-in tool renews it), but a missing one is said at start.
    expect(readIdTokenFile(tokenFile)).toBe("id-t0ken");
    expect(oauthProblem(dir, { ...xaa, id_token_file: path.join(dir, "missing") })).toContain(
      "oauth.id_token_file: cannot read",
    );
    expect(oauthSpec(dir, { ...xaa, id_token: "from-env" })).toMatchObject({
      oauth: { idp: { id_token: { value: "from-env" } } },
    });
    expect(
      oauthSpec(dir, { ...xaa, id_token: "t", idp_token_endpoint: "http://127.0.0.1:8080/token" }),
    ).toMatchObject({
      oauth: { idp: { token_endpoint: "http://127.0.0.1:8080/token" } },
    });
    expect(
      oauthProblem(dir, { ...xaa, id_token: "t", idp_token_endpoint: "http://idp.example/token" }),
    ).toContain("must be an https URL (http only on a loopback host)");
    expect(oauthProblem(dir, { ...xaa })).toContain("needs an id_token (or id_token_file)");
    expect(oauthProblem(dir, { ...xaa, id_token: "t", id_token_file: tokenFile })).toContain("not both");
    const { client_secret: _, ...noSecret } = xaa;
    expect(oauthProblem(dir, { ...noSecret, id_token: "t" })).toContain("needs a client_secret");
    const { idp_client_id: __, ...noIdpClient } = xaa;
    expect(oauthProblem(dir, { ...noIdpClient, id_token: "t" })).toContain("oauth.idp_client_id: required");
    // Another grant's keys are refused, by name.
    expect(oauthProblem(dir, { ...xaa, id_token: "t", private_key_file: tokenFile })).toContain(
      'oauth.private_key_file: only for grant "client_credentials"',
    );
    expect(oauthProblem(dir, { client_id: "agent", id_token: "t" })).toContain(
      'oauth.id_token: only for grant "cross_app_access"',
    );
    expect(
      oauthProblem(dir, {
        grant: "client_credentials",
        client_id: "c",
        issuer: "https://a/",
        idp_client_id: "x",
      }),
    ).toContain('oauth.idp_client_id: only for grant "cross_app_access"');
    // No secret or token is quoted in a problem.
    expect(
      oauthProblem(dir, { ...xaa, id_token: "t0ken-value", idp_token_endpoint: "http://idp.example/token" }),
    ).not.toMatch(/s3cret|t0ken-value/);
  });

  it("reads stdio and http servers from .mcp.json, ignoring keys other agents add", () => {
    const dir = root({
      mcpServers: {
        db: {
          type: "stdio",
          command: "node",
          args: ["db.js"],
          env: { A: "1" },
          description: "x",
          timeout: 5,
        },
        web: { type: "http", url: "https://example.test/mcp", headers: { Authorization: "Bearer t" } },
        legacy: { type: "sse", url: "http://localhost:1/sse" },
        off: { command: "nope", disabled: true },
      },
    });
    const { servers, problems } = readServerSpecs(dir, parse({}), TRUSTED);
    expect(problems).toEqual([]);
    expect(servers).toEqual([
      {
        name: "db",
        transport: "stdio",
        command: "node",
        args: ["db.js"],
        env: { A: "1" },
        cwd: dir,
        source: ".mcp.json",
      },
      {
        name: "web",
        transport: "http",
        url: "https://example.test/mcp",
        headers: { Authorization: "Bearer t" },
        source: ".mcp.json",
      },
      { name: "legacy", transport: "sse", url: "http://localhost:1/sse", headers: {}, source: ".mcp.json" },
    ]);
  });

  it("names the server and the key of an invalid entry, and keeps the valid ones", () => {
    const dir = root({
      mcpServers: {
        good: { command: "node" },
        badArgs: { command: "node", args: "--inspect" },
        noCommand: { env: { A: "1" } },
        badUrl: { type: "http", url: "ftp://x" },
        badType: { type: "websocket", url: "ws://x" },
      },
    });
    const { servers, problems } = readServerSpecs(dir, parse({}), TRUSTED);
    expect(servers.map((s) => s.name)).toEqual(["good"]);
    const byName = Object.fromEntries(problems.map((p) => [p.name, p.error]));
    expect(byName.badArgs).toBe('.mcp.json: server "badArgs": args: expected an array of strings');
    expect(byName.noCommand).toMatch(/server "noCommand": command: required for a stdio server/);
    expect(byName.badUrl).toMatch(/server "badUrl": url: "ftp:\/\/x" is not an http\(s\) URL/);
    expect(byName.badType).toMatch(/server "badType": type: expected stdio, http/);
  });

  it("reports a malformed .mcp.json instead of failing the session", () => {
    expect(readServerSpecs(root("{ nope"), parse({}), TRUSTED).problems[0]?.error).toMatch(
      /^\.mcp\.json is not valid JSON/,
    );
    expect(readServerSpecs(root({ servers: {} }), parse({}), TRUSTED).problems[0]?.error).toMatch(
      /expected \{"mcpServers"/,
    );
  });

  it("takes config mcpServers too; the config entry wins over .mcp.json for the same name", () => {
    const dir = root({ mcpServers: { db: { command: "old" }, other: { command: "x" } } });
    const config = parse({
      mcpServers: {
        db: { command: "new", args: ["--fast"], cwd: "sub" },
        api: { url: "http://127.0.0.1:9/mcp" },
      },
    });
    const { servers } = readServerSpecs(dir, config, TRUSTED);
    const db = servers.find((s) => s.name === "db");
    expect(db).toMatchObject({
      command: "new",
      args: ["--fast"],
      cwd: path.join(dir, "sub"),
      source: "config",
    });
    expect(servers.map((s) => s.name).sort()).toEqual(["api", "db", "other"]);
  });

  // .mcp.json's own ${VAR} syntax, written with a "$" + "{" join so the strings are not template mistakes.
  const ref = (body: string) => `$${"{"}${body}}`;
  it("expands $VAR references (with :- defaults) and names an unset variable", () => {
    process.env.TB_MCP_TEST_TOKEN = "s3cret";
    expect(expandEnv(`Bearer ${ref("TB_MCP_TEST_TOKEN")}`)).toBe("Bearer s3cret");
    expect(expandEnv(ref("TB_MCP_NOPE:-fallback"))).toBe("fallback");
    const dir = root({ mcpServers: { gh: { command: "gh-mcp", env: { TOKEN: ref("TB_MCP_NOPE") } } } });
    expect(readServerSpecs(dir, parse({}), TRUSTED).problems[0]?.error).toBe(
      `.mcp.json: server "gh": env.TOKEN: ${ref("TB_MCP_NOPE")} is not set in the environment`,
    );
    delete process.env.TB_MCP_TEST_TOKEN;
  });

  it("hasMcpServers is true only with a trusted project's .mcp.json or config servers", () => {
    expect(hasMcpServers(root(), parse({}), TRUSTED)).toBe(false);
    expect(hasMcpServers(root({ mcpServers: {} }), parse({}), TRUSTED)).toBe(true);
    expect(hasMcpServers(root({ mcpServers: {} }), parse({}))).toBe(false);
    expect(hasMcpServers(root(), parse({ mcpServers: { a: { command: "x" } } }))).toBe(true);
  });

  it("starts nothing from an untrusted project's .mcp.json, and expands none of its references", () => {
    const dir = root({
      mcpServers: {
        leak: { type: "http", url: `http://127.0.0.1:9/${ref("HOME")}` },
        gone: { command: "x", env: { T: ref("TB_MCP_NOPE") } },
        off: { command: "nope", disabled: true },
      },
    });
    const { servers, problems } = readServerSpecs(dir, parse({}));
    expect(servers).toEqual([]);
    expect(problems.map((p) => [p.name, p.skipped])).toEqual([
      ["leak", true],
      ["gone", true],
    ]);
    expect(problems[0]?.error).toMatch(/^not started: the project is not trusted/);
    expect(JSON.stringify(problems)).not.toContain(process.env.HOME ?? "/");
  });
});

describe("tool names and access", () => {
  it("binds mcp__<server>__<tool>, replacing characters providers refuse, at most 64 characters", () => {
    expect(toolNameFor("fs", "read_file")).toBe("mcp__fs__read_file");
    expect(toolNameFor("my.server", "get issue")).toBe("mcp__my_server__get_issue");
    const long = toolNameFor("s", "x".repeat(100));
    expect(long).toHaveLength(64);
    expect(long).not.toBe(toolNameFor("s", `${"x".repeat(99)}y`));
  });

  it("maps readOnlyHint to read access and anything else to execute", () => {
    const base = { name: "t", inputSchema: { type: "object" as const } };
    expect(accessFor({ ...base, annotations: { readOnlyHint: true } })).toBe("read");
    expect(accessFor({ ...base, annotations: { readOnlyHint: false, destructiveHint: false } })).toBe(
      "execute",
    );
    expect(accessFor(base)).toBe("execute");
  });
});
