import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  exchangeIdToken,
  oauthFile,
  pendingStepUp,
  readSignIn,
  StoredOAuthProvider,
  scopeTokens,
  stepUpRecordingFetch,
} from "./oauth.js";
import type { HttpServerSpec } from "./server-config.js";

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

/** A real HTTP server answering every request 403 with `challenge` as WWW-Authenticate. */
async function refusing(challenge: string): Promise<string> {
  const server: Server = createServer((_req, res) => {
    res.writeHead(403, { "www-authenticate": challenge }).end("{}");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(() => server.close());
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

/** A server spec and a user config folder of its own (the sign-in file is made by the test). */
function signedIn(url: string): { spec: HttpServerSpec; env: NodeJS.ProcessEnv } {
  const dir = mkdtempSync(path.join(os.tmpdir(), "tb-oauth-unit-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const env = { TOOLBELT_CONFIG_DIR: dir };
  const spec: HttpServerSpec = { name: "s", transport: "http", url, headers: {}, source: "config" };
  return { spec, env };
}

describe("scope step-up bookkeeping", () => {
  it("scope tokens: printable ASCII without space, quote or backslash, each once", () => {
    expect(scopeTokens("a b  a c:d")).toEqual(["a", "b", "c:d"]);
    expect(scopeTokens('ok bad"q back\\slash new\nline \u001b[31mred')).toEqual(["ok"]);
    expect(
      pendingStepUp({
        url: "u",
        tokens: { access_token: "t", token_type: "bearer", scope: "a" },
        step_up_scope: "a b",
      }),
    ).toBe("a b");
    expect(
      pendingStepUp({
        url: "u",
        tokens: { access_token: "t", token_type: "bearer", scope: "b a" },
        step_up_scope: "a b",
      }),
    ).toBeUndefined();
  });

  it("a 403 insufficient_scope of the server's own URL is kept as granted ∪ challenged; another URL's is not", async () => {
    const base = await refusing('Bearer error="insufficient_scope", scope="write \u00fcber"');
    const { spec, env } = signedIn(`${base}/mcp`);
    await new StoredOAuthProvider(spec, { env }).saveTokens({
      access_token: "t",
      token_type: "bearer",
      scope: "read",
    });
    const recording = stepUpRecordingFetch(spec, env);

    await recording(`${base}/elsewhere`, { method: "POST" });
    expect(readSignIn(spec.url, env)?.step_up_scope).toBeUndefined();

    await recording(spec.url, { method: "POST" });
    // A token outside printable ASCII is dropped; what is kept is what a login would ask for.
    expect(readSignIn(spec.url, env)?.step_up_scope).toBe("read write");
    expect(readFileSync(oauthFile(spec.url, env), "utf8")).not.toContain("ber");
  });

  it("a server never signed in to gets no sign-in file from its challenge", async () => {
    const base = await refusing('Bearer error="insufficient_scope", scope="write"');
    const { spec, env } = signedIn(`${base}/mcp`);
    await stepUpRecordingFetch(spec, env)(spec.url, { method: "POST" });
    expect(readSignIn(spec.url, env)).toBeUndefined();
  });

  it("a refresh keeps the pending step-up (it cannot widen a grant); a step-up's own tokens settle it", async () => {
    const base = await refusing('Bearer error="insufficient_scope", scope="write"');
    const { spec: local, env } = signedIn(`${base}/mcp`);
    await new StoredOAuthProvider(local, { env }).saveTokens({
      access_token: "t1",
      token_type: "bearer",
      scope: "read",
    });
    await stepUpRecordingFetch(local, env)(local.url, { method: "POST" });
    await new StoredOAuthProvider(local, { env }).saveTokens({
      access_token: "t2",
      token_type: "bearer",
      scope: "read",
    });
    expect(pendingStepUp(readSignIn(local.url, env))).toBe("read write");
    const stepping = new StoredOAuthProvider(local, { env, reauthorize: true });
    expect(stepping.tokens()).toBeUndefined();
    await stepping.saveTokens({ access_token: "t3", token_type: "bearer" });
    expect(readSignIn(local.url, env)?.step_up_scope).toBeUndefined();
    expect(stepping.tokens()?.access_token).toBe("t3");
  });
});

describe("cross_app_access: the ID token exchange", () => {
  const idp = (url: string) => ({
    token_endpoint: url,
    client_id: "toolbelt",
    id_token: { value: "id-t0ken-not-to-print" },
  });
  const request = { audience: "https://auth.example/", resource: "https://mcp.example/mcp" };

  it("an identity provider that answers without end is read no further than the bound, and the token is not quoted", async () => {
    let stopped = false;
    const server: Server = createServer((_req, res) => {
      res.writeHead(400, { "content-type": "application/json" });
      const chunk = Buffer.alloc(64 * 1024, "x");
      const pump = () => {
        while (!stopped && res.write(chunk));
        if (!stopped) res.once("drain", pump);
      };
      res.on("close", () => {
        stopped = true;
      });
      pump();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => {
      stopped = true;
      server.closeAllConnections();
      server.close();
    });
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/token`;
    const error = await exchangeIdToken(idp(url), request).catch((e: Error) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toBe(
      `cross_app_access: the identity provider (${url}) refused the ID token exchange (HTTP 400)`,
    );
    expect((error as Error).message).not.toContain("id-t0ken");
  });

  it("a refusal whose description holds control characters is named by its error code alone", async () => {
    const server: Server = createServer((_req, res) => {
      res
        .writeHead(400, { "content-type": "application/json" })
        .end(JSON.stringify({ error: "invalid_grant", error_description: "bad\u001b[2Jtoken" }));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => server.close());
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/token`;
    const error = (await exchangeIdToken(idp(url), request).catch((e: Error) => e)) as Error;
    expect(error.message).toBe(
      `cross_app_access: the identity provider (${url}) refused the ID token exchange (HTTP 400 invalid_grant)`,
    );
  });
});
