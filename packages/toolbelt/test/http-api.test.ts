// The console's test fake and the real `serve --http` server, asked the same bad requests, answer
// the same statuses in the same shape ({error: {code, message}}): the page's tests see real errors.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../console/src/testing/fake-server.js";
import { type HttpServer, startHttpServer } from "../src/serve-http.js";

const TOKEN = "http-api-token";

describe("the console fake and the real server", () => {
  let dir: string;
  let real: HttpServer;
  let fake: FakeServer;
  let sid: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "toolbelt-http-api-"));
    real = await startHttpServer({ root: dir, token: TOKEN });
    const sessions = (await (
      await fetch(`${real.url}/api/sessions`, { headers: { authorization: `Bearer ${TOKEN}` } })
    ).json()) as Array<{ id: string }>;
    sid = sessions[0]?.id ?? "";
    fake = await startFakeServer({ token: TOKEN, sessionId: sid });
  });

  afterAll(async () => {
    await fake?.close();
    await real?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const bad = (): Array<{
    what: string;
    method: string;
    path: string;
    token?: string | null;
    body?: string;
  }> => [
    { what: "no token", method: "GET", path: "/api/sessions", token: null },
    { what: "a wrong token", method: "GET", path: `/api/sessions/${sid}/pending`, token: "nope" },
    { what: "no such route", method: "GET", path: "/api/elsewhere" },
    { what: "no such route in a session", method: "GET", path: `/api/sessions/${sid}/nothing` },
    { what: "a method /api/sessions does not take", method: "PATCH", path: "/api/sessions" },
    { what: "no such session", method: "GET", path: "/api/sessions/nope/pending" },
    { what: "a malformed escape", method: "GET", path: "/api/sessions/%E0%A4%A/pending" },
    {
      what: "a malformed escape in an id",
      method: "POST",
      path: `/api/sessions/${sid}/approvals/%E0%A4%A`,
      body: "{}",
    },
    {
      what: "an approval without a decision",
      method: "POST",
      path: `/api/sessions/${sid}/approvals/r1`,
      body: "{}",
    },
    {
      what: "a body that is not JSON",
      method: "POST",
      path: `/api/sessions/${sid}/approvals/r1`,
      body: "{nope",
    },
    {
      what: "a body nested too deep",
      method: "POST",
      path: `/api/sessions/${sid}/approvals/r1`,
      body: "[".repeat(200),
    },
    {
      what: "no such approval",
      method: "POST",
      path: `/api/sessions/${sid}/approvals/r1`,
      body: '{"approved":true}',
    },
    { what: "an attach without tools", method: "POST", path: `/api/sessions/${sid}/attach`, body: "{}" },
    {
      what: "a stream for no such attachment",
      method: "GET",
      path: `/api/sessions/${sid}/events?attachment=nope`,
    },
    {
      what: "no such question",
      method: "POST",
      path: `/api/sessions/${sid}/questions/q1`,
      body: '{"answers":[]}',
    },
  ];

  const ask = async (base: string, r: ReturnType<typeof bad>[number]) => {
    const token = r.token === undefined ? TOKEN : r.token;
    const response = await fetch(`${base.replace(/\/$/, "")}${r.path}`, {
      method: r.method,
      headers: {
        ...(token !== null ? { authorization: `Bearer ${token}` } : {}),
        ...(r.body !== undefined ? { "content-type": "application/json" } : {}),
      },
      ...(r.body !== undefined ? { body: r.body } : {}),
    });
    const body = (await response.json()) as { error?: { code?: unknown; message?: unknown } };
    return {
      status: response.status,
      keys: Object.keys(body),
      errorKeys: Object.keys(body.error ?? {}).sort(),
      code: body.error?.code,
      messageIsText: typeof body.error?.message === "string" && body.error.message.length > 0,
      challenge: response.headers.get("www-authenticate"),
    };
  };

  it("answer each bad request alike", async () => {
    for (const request of bad()) {
      const fromReal = await ask(real.url, request);
      const fromFake = await ask(fake.url, request);
      expect({ what: request.what, ...fromFake }).toEqual({ what: request.what, ...fromReal });
      expect(fromReal.keys).toEqual(["error"]);
      expect(fromReal.errorKeys).toEqual(["code", "message"]);
      expect(fromReal.messageIsText).toBe(true);
      expect(fromReal.status).toBeGreaterThanOrEqual(400);
    }
  });
});
