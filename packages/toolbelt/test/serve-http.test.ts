import { spawnSync } from "node:child_process";
import fs from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { type BridgeClient, connectClient, readSse } from "@toolbelt/bridge";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt } from "./cli-harness.js";
import { BIN, type HttpProcess, makeRoot, REPO, startHttp } from "./serve-fixture.js";

// A missing or stale build fails these tests (see assertBuilt), it does not skip them.
beforeAll(assertBuilt);

type Event = { type: string; seq: number; call_id?: string; tool?: string; result?: Record<string, unknown> };

describe("toolbelt serve --http (real server process, real HTTP)", () => {
  let root: string;
  let server: HttpProcess;
  let sid: string;
  const clients: BridgeClient[] = [];

  const api = async (method: string, route: string, body?: unknown, token = server.token) => {
    const response = await fetch(`${server.url}${route}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await response.text();
    return { status: response.status, body: (text ? JSON.parse(text) : undefined) as Record<string, never> };
  };
  const bound = async () => {
    const { body } = await api("GET", `/api/sessions/${sid}/tools`);
    return {
      tools: (body.tools as unknown as Array<{ name: string }>).map((t) => t.name),
      deferred: body.deferred as unknown as string[],
    };
  };
  const until = async (check: () => Promise<boolean>, what: string) => {
    const deadline = Date.now() + 10_000;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  };
  /** Collects SSE events of the session from `since`. */
  const stream = (query = "", headers: Record<string, string> = {}) => {
    const controller = new AbortController();
    const events: Event[] = [];
    const done = (async () => {
      const response = await fetch(`${server.url}/api/sessions/${sid}/events?token=${server.token}${query}`, {
        signal: controller.signal,
        headers,
      });
      expect(response.headers.get("content-type")).toContain("text/event-stream");
      if (!response.body) return;
      for await (const message of readSse(response.body)) {
        const event = JSON.parse(message.data) as Event;
        expect(message.id).toBe(String(event.seq));
        events.push(event);
      }
    })().catch(() => {});
    return { events, stop: () => controller.abort(), done };
  };

  const savedStateDir = process.env.TOOLBELT_STATE_DIR;
  let stateDir: string;

  beforeAll(async () => {
    root = await makeRoot();
    // The server saves open questions here, not in ~/.toolbelt.
    stateDir = await fs.mkdtemp(path.join(os.tmpdir(), "toolbelt-serve-state-"));
    process.env.TOOLBELT_STATE_DIR = stateDir;
    server = await startHttp(root);
    const { body } = await api("GET", "/api/sessions");
    sid = (body as unknown as Array<{ id: string }>)[0]?.id ?? "";
  });
  afterAll(async () => {
    for (const c of clients) await c.close();
    await server?.stop();
    if (savedStateDir === undefined) delete process.env.TOOLBELT_STATE_DIR;
    else process.env.TOOLBELT_STATE_DIR = savedStateDir;
    await fs.rm(root, { recursive: true, force: true });
    await fs.rm(stateDir, { recursive: true, force: true });
  });

  /** Opens a session (inside the server's root) and gives its id. */
  const openSession = async (body: Record<string, unknown>) => {
    const opened = await api("POST", "/api/sessions", body);
    expect(opened.status, JSON.stringify(opened.body)).toBe(201);
    return String(opened.body.id);
  };
  /** Every tool a session offers, bound or deferred. */
  const offered = async (id: string) => {
    const { body } = await api("GET", `/api/sessions/${id}/tools`);
    const tools = (body.tools as unknown as Array<{ name: string }>).map((t) => t.name);
    return [...tools, ...(body.deferred as unknown as string[])];
  };
  /** The question a session lists as pending, once it does. */
  const pendingQuestion = async (id: string) => {
    let listed: Array<{ question_id: string }> = [];
    await until(async () => {
      listed = (await api("GET", `/api/sessions/${id}/pending`)).body.questions as unknown as Array<{
        question_id: string;
      }>;
      return listed.length > 0;
    }, "a pending question");
    return listed;
  };

  it("listens on loopback and refuses every request without the token", async () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect((await fetch(`${server.url}/api/sessions`)).status).toBe(401);
    expect((await fetch(`${server.url}/api/sessions/${sid}/events`)).status).toBe(401);
    expect((await api("GET", "/api/sessions", undefined, "wrong")).status).toBe(401);
    // The page is static (no session data) and takes its token from `#token=`, which is never sent.
    const page = await fetch(`${server.url}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    const html = await page.text();
    expect(html).not.toContain(server.token);
    // The console is built (assertBuilt): GET / serves its page.
    const consoleDist = path.join(REPO, "packages/console/dist/index.js");
    const { consolePage } = (await import(pathToFileURL(consoleDist).href)) as {
      consolePage: () => string;
    };
    expect(html).toBe(consolePage());
  });

  it("lists its session and opens more only inside its root", async () => {
    const { body } = await api("GET", "/api/sessions");
    expect(body).toEqual([{ id: sid, root }]);
    const created = await api("POST", "/api/sessions", { root: "sub" });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ root: path.join(root, "sub") });
    const outside = await api("POST", "/api/sessions", { root: "/etc" });
    expect(outside.status).toBe(400);
    expect(outside.body).toMatchObject({ error: { code: "EPATH_ESCAPE" } });
    expect((await api("DELETE", `/api/sessions/${created.body.id}`)).status).toBe(200);
  });

  it("runs calls over POST and streams their events as SSE, replaying after Last-Event-ID", async () => {
    const live = stream();
    const call = await api("POST", `/api/sessions/${sid}/calls`, { tool: "slow_wait", input: { ms: 1 } });
    expect(call.status).toBe(200);
    expect(call.body).toMatchObject({ result: { kind: "waited", ms: 1 } });
    expect(call.body.text).toContain("# Kind: waited");
    await until(
      async () => live.events.some((e) => e.type === "tool_result" && e.tool === "slow_wait"),
      "tool_result",
    );
    // The stream started with the buffered history: the session's first tools_bound is seq 0.
    expect(live.events[0]).toMatchObject({ type: "tools_bound", seq: 0 });
    live.stop();
    const last = live.events.at(-1)?.seq ?? 0;
    const lastCallSeq = live.events.find((e) => e.type === "tool_call" && e.tool === "slow_wait")?.seq ?? 0;
    const resumed = stream("", { "last-event-id": String(lastCallSeq) });
    await until(
      async () => resumed.events.length > 0 && (resumed.events.at(-1)?.seq ?? -1) >= last,
      "replay",
    );
    resumed.stop();
    expect(resumed.events[0]?.seq).toBe(lastCallSeq + 1);
  });

  it("binds client-brought tools only while the client is attached and routes calls to it", async () => {
    const before = await bound();
    expect([...before.tools, ...before.deferred]).not.toContain("client_add");
    const live = stream(`&since=${Number.MAX_SAFE_INTEGER}`);
    const client = connectClient({
      url: server.url,
      token: server.token,
      session: sid,
      client: "test-device",
      tools: [
        {
          name: "client_add",
          description: "Add two numbers on the client.",
          input_schema: {
            type: "object",
            properties: { a: { type: "number" }, b: { type: "number" } },
            required: ["a", "b"],
          },
          deferrable: false,
          execute: (input) => ({ kind: "sum", value: Number(input.a) + Number(input.b) }),
        },
        {
          name: "client_deferred",
          description: "A deferrable client tool.",
          input_schema: { type: "object", properties: {} },
          execute: () => ({ kind: "ok" }),
        },
      ],
    });
    clients.push(client);
    await client.ready;
    const after = await bound();
    expect(after.tools).toContain("client_add");
    // Client tools follow the session's deferral like any other deferrable tool.
    expect(after.deferred).toContain("client_deferred");

    const call = await api("POST", `/api/sessions/${sid}/calls`, {
      tool: "client_add",
      input: { a: 2, b: 3 },
    });
    expect(call.body).toMatchObject({ result: { kind: "sum", value: 5 } });
    const invalid = await api("POST", `/api/sessions/${sid}/calls`, {
      tool: "client_add",
      input: { a: "x" },
    });
    expect(invalid.body).toMatchObject({ result: { kind: "error", code: "EINVAL_INPUT" } });
    await until(async () => live.events.some((e) => e.type === "client_tool_result"), "client_tool_result");
    const forwarded = live.events.find((e) => e.type === "client_tool_call");
    expect(forwarded).toMatchObject({ tool: "client_add", input: { a: 2, b: 3 } });
    live.stop();

    await client.close();
    await until(async () => !(await bound()).tools.includes("client_add"), "client_add to be unbound");
    const gone = await api("POST", `/api/sessions/${sid}/calls`, {
      tool: "client_add",
      input: { a: 1, b: 1 },
    });
    expect(gone.body).toMatchObject({ result: { kind: "error", code: "EUNKNOWN_TOOL" } });
  });

  it("offers only what the client currently permits", async () => {
    const tool = (name: string) => ({
      name,
      description: `${name} on the client`,
      input_schema: { type: "object", properties: {} },
      deferrable: false,
      execute: () => ({ kind: "ok", name }),
    });
    const client = connectClient({
      url: server.url,
      token: server.token,
      tools: [tool("perm_a"), tool("perm_b")],
    });
    clients.push(client);
    await client.ready;
    expect((await bound()).tools).toEqual(expect.arrayContaining(["perm_a", "perm_b"]));
    await client.setTools([tool("perm_a")]);
    const now = await bound();
    expect(now.tools).toContain("perm_a");
    expect(now.tools).not.toContain("perm_b");
    await client.close();
  });

  it("refuses a client tool whose name is taken, and a malformed one", async () => {
    const taken = await api("POST", `/api/sessions/${sid}/attach`, {
      tools: [{ name: "slow_wait", description: "x", input_schema: { type: "object" } }],
    });
    expect(taken.status).toBe(409);
    const bad = await api("POST", `/api/sessions/${sid}/attach`, {
      tools: [{ name: "bad name!", description: "x", input_schema: {} }],
    });
    expect(bad.status).toBe(400);
  });

  it("times out a client that does not answer, and cancels a call on request, with clear errors", async () => {
    let aborted = false;
    let received = 0;
    const client = connectClient({
      url: server.url,
      token: server.token,
      session: sid,
      timeoutMs: 400,
      tools: [
        {
          name: "client_hang",
          description: "Never answers.",
          input_schema: { type: "object", properties: {} },
          deferrable: false,
          execute: (_input, { signal }) =>
            new Promise((resolve) => {
              received += 1;
              signal.addEventListener("abort", () => {
                aborted = true;
                resolve({ kind: "stopped" });
              });
            }),
        },
      ],
    });
    clients.push(client);
    await client.ready;
    const started = Date.now();
    const timedOut = await api("POST", `/api/sessions/${sid}/calls`, { tool: "client_hang", input: {} });
    expect(timedOut.body).toMatchObject({
      result: {
        kind: "error",
        code: "ETIMEOUT",
        message: expect.stringContaining("did not answer within 400 ms"),
      },
    });
    expect(Date.now() - started).toBeLessThan(5000);
    await until(async () => aborted, "the client to stop the timed-out call");

    aborted = false;
    const pending = api("POST", `/api/sessions/${sid}/calls`, {
      tool: "client_hang",
      input: {},
      call_id: "c-1",
    });
    // Cancel once the call is running on the client: earlier there is nothing to cancel yet.
    await until(async () => received === 2, "the client to receive the call to cancel");
    const cancel = await api("POST", `/api/sessions/${sid}/calls/c-1/cancel`);
    expect(cancel.body).toEqual({ cancelled: true });
    const cancelled = await pending;
    expect(cancelled.body).toMatchObject({ result: { kind: "error", code: "ECANCELLED" } });
    await until(async () => aborted, "the client to stop the cancelled call");
    await client.close();
  });

  it("cancels a server-side call when the HTTP caller hangs up", async () => {
    const live = stream(`&since=${Number.MAX_SAFE_INTEGER}`);
    const controller = new AbortController();
    const call = fetch(`${server.url}/api/sessions/${sid}/calls`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.token}` },
      body: JSON.stringify({ tool: "slow_wait", input: { ms: 20_000 } }),
      signal: controller.signal,
    }).catch(() => undefined);
    await until(async () => live.events.some((e) => e.type === "tool_call"), "tool_call");
    controller.abort();
    await call;
    await until(async () => live.events.some((e) => e.type === "tool_result"), "tool_result");
    expect(live.events.find((e) => e.type === "tool_result")?.result).toMatchObject({ code: "ECANCELLED" });
    live.stop();
  });

  it("resolves approvals and questions from POSTs", async () => {
    const approving = api("POST", `/api/sessions/${sid}/calls`, {
      tool: "touch_marker",
      input: { name: "ok.txt" },
    });
    let pending = await api("GET", `/api/sessions/${sid}/pending`);
    await until(async () => {
      pending = await api("GET", `/api/sessions/${sid}/pending`);
      return (pending.body.approvals as unknown as unknown[]).length > 0;
    }, "an approval request");
    const approval = (pending.body.approvals as unknown as Array<{ request_id: string; tool: string }>)[0];
    expect(approval?.tool).toBe("touch_marker");
    const badAnswer = await api("POST", `/api/sessions/${sid}/approvals/${approval?.request_id}`, {
      approved: "yes",
    });
    expect(badAnswer.status).toBe(400);
    expect(
      (await api("POST", `/api/sessions/${sid}/approvals/${approval?.request_id}`, { approved: true }))
        .status,
    ).toBe(200);
    expect((await approving).body).toMatchObject({ result: { kind: "touched", path: "ok.txt" } });
    expect(await fs.readFile(path.join(root, "ok.txt"), "utf8")).toBe("marker\n");

    const denying = api("POST", `/api/sessions/${sid}/calls`, {
      tool: "touch_marker",
      input: { name: "no.txt" },
    });
    await until(async () => {
      pending = await api("GET", `/api/sessions/${sid}/pending`);
      return (pending.body.approvals as unknown as unknown[]).length > 0;
    }, "a second approval request");
    const second = (pending.body.approvals as unknown as Array<{ request_id: string }>)[0];
    await api("POST", `/api/sessions/${sid}/approvals/${second?.request_id}`, { approved: false });
    expect((await denying).body).toMatchObject({ result: { kind: "error", code: "EDENIED" } });

    // Questions need someone to answer them: a client that advertises ask_user (the console does).
    const answerer = connectClient({
      url: server.url,
      token: server.token,
      session: sid,
      tools: [],
      capabilities: ["ask_user"],
    });
    clients.push(answerer);
    await answerer.ready;
    expect((await bound()).tools).toContain("ask_user_question");
    const asking = api("POST", `/api/sessions/${sid}/calls`, {
      tool: "ask_user_question",
      input: { questions: [{ question: "Ship it?", options: ["yes", "no"] }] },
    });
    await until(async () => {
      pending = await api("GET", `/api/sessions/${sid}/pending`);
      return (pending.body.questions as unknown as unknown[]).length > 0;
    }, "a question");
    const question = (pending.body.questions as unknown as Array<{ question_id: string }>)[0];
    const wrong = await api("POST", `/api/sessions/${sid}/questions/${question?.question_id}`, {
      answers: [{ options: [5] }],
    });
    expect(wrong.status).toBe(400);
    const answered = await api("POST", `/api/sessions/${sid}/questions/${question?.question_id}`, {
      answers: [{ options: [0] }],
      notes: "after lunch",
    });
    expect(answered.status).toBe(200);
    const result = (await asking).body;
    expect(JSON.stringify(result)).toContain("yes");
    expect(JSON.stringify(result)).toContain("after lunch");
    await answerer.close();
    await until(
      async () => !(await bound()).tools.includes("ask_user_question"),
      "ask_user_question to go with its client",
    );
  });

  it("binds present_ui and ask_user_question only for a client that advertises generative_ui / ask_user", async () => {
    const neither = (tools: string[]) => {
      expect(tools).not.toContain("present_ui");
      expect(tools).not.toContain("ask_user_question");
    };
    // The server's own session and one opened with {} have no client that could draw or answer.
    neither(await offered(sid));
    const plain = await openSession({});
    neither(await offered(plain));
    const call = await api("POST", `/api/sessions/${plain}/calls`, {
      tool: "ask_user_question",
      input: { questions: [{ question: "Ship it?", options: ["yes", "no"] }] },
    });
    expect(call.body).toMatchObject({ result: { kind: "error", code: "EUNKNOWN_TOOL" } });

    // Capabilities come with the request that opens the session...
    const drawing = await openSession({ capabilities: ["generative_ui"] });
    expect(await offered(drawing)).toContain("present_ui");
    expect(await offered(drawing)).not.toContain("ask_user_question");
    const both = await openSession({ capabilities: ["generative_ui", "ask_user"] });
    expect(await offered(both)).toEqual(expect.arrayContaining(["present_ui", "ask_user_question"]));
    for (const capabilities of ["ask_user", [1], [""]]) {
      const bad = await api("POST", "/api/sessions", { capabilities });
      expect(bad.status, JSON.stringify(capabilities)).toBe(400);
      expect(bad.body).toMatchObject({ error: { code: "EINVAL_INPUT" } });
    }

    // ...and with an attachment, for as long as its stream is connected (the client SDK declares them).
    const client = connectClient({
      url: server.url,
      token: server.token,
      session: plain,
      client: "a UI",
      tools: [],
      capabilities: ["generative_ui", "ask_user"],
    });
    clients.push(client);
    await client.ready;
    expect(await offered(plain)).toEqual(expect.arrayContaining(["present_ui", "ask_user_question"]));
    await client.close();
    await until(async () => !(await offered(plain)).includes("present_ui"), "present_ui to be unbound");
    neither(await offered(plain));
    for (const id of [plain, drawing, both]) await api("DELETE", `/api/sessions/${id}`);
  });

  it("a refused answer changes nothing: the question stays pending and the next valid answer is taken", async () => {
    const id = await openSession({ root: "sub", capabilities: ["ask_user"] });
    const question = { question: "Which database?", options: ["Postgres", "SQLite"] };
    const asking = api("POST", `/api/sessions/${id}/calls`, {
      tool: "ask_user_question",
      input: { questions: [question] },
    });
    const [open] = await pendingQuestion(id);
    const route = `/api/sessions/${id}/questions/${open?.question_id}`;
    const both = await api("POST", route, { answers: [{ options: [0], text: "DuckDB" }] });
    expect(both.status).toBe(400);
    expect(both.body).toMatchObject({
      error: { code: "EINVAL_INPUT", message: expect.stringMatching(/never both/) },
    });
    const empty = await api("POST", route, { answers: [{ text: "   " }] });
    expect(empty.status).toBe(400);
    expect(await pendingQuestion(id)).toEqual([expect.objectContaining({ question_id: open?.question_id })]);
    expect((await api("POST", route, { answers: [{ options: [1] }] })).status).toBe(200);
    expect((await asking).body).toMatchObject({
      result: { kind: "question_answers", answers: [{ selected: ["SQLite"] }] },
    });

    // The same for a question whose call has stopped waiting (timed out): refused, then taken late.
    const timedOut = await api("POST", `/api/sessions/${id}/calls`, {
      tool: "ask_user_question",
      input: { questions: [question], timeout_seconds: 0.2 },
    });
    const late = String((timedOut.body.result as unknown as { question_id: string }).question_id);
    const lateRoute = `/api/sessions/${id}/questions/${late}`;
    expect((await api("POST", lateRoute, { answers: [{ options: [0], text: "x" }] })).status).toBe(400);
    expect((await api("POST", lateRoute, { answers: [{ text: "DuckDB" }] })).body).toEqual({
      ok: true,
      late: true,
    });
    const taken = await api("POST", `/api/sessions/${id}/late-answers`, {});
    expect(taken.body.answers).toMatchObject([{ question_id: late, answers: [{ text: "DuckDB" }] }]);
    await api("DELETE", `/api/sessions/${id}`);
  });

  it("an expired question stays answerable after a newer message; a message supersedes only a waiting one", async () => {
    const id = await openSession({ root: "sub", capabilities: ["ask_user"] });
    const question = { question: "Which port?", options: ["3000", "8080"] };
    const expired = await api("POST", `/api/sessions/${id}/calls`, {
      tool: "ask_user_question",
      input: { questions: [question], timeout_seconds: 1 },
    });
    expect(expired.body.result).toMatchObject({ kind: "question_pending" });
    const expiredId = String((expired.body.result as unknown as { question_id: string }).question_id);

    // A question still blocking its call is what a new message replaces.
    const blocking = api("POST", `/api/sessions/${id}/calls`, {
      tool: "ask_user_question",
      input: { questions: [question] },
    });
    let waiting: string | undefined;
    await until(async () => {
      const listed = await pendingQuestion(id);
      waiting = listed.find((q) => q.question_id !== expiredId)?.question_id;
      return waiting !== undefined;
    }, "the blocking question");
    const message = await api("POST", `/api/sessions/${id}/messages`, { text: "use 9000 instead" });
    expect(message.body).toEqual({ superseded: [waiting] });
    expect((await blocking).body).toMatchObject({
      result: { kind: "question_superseded", user_message: "use 9000 instead" },
    });

    // The expired one is still open, and its answer arrives as a new message for the model.
    expect((await pendingQuestion(id)).map((q) => q.question_id)).toEqual([expiredId]);
    const answered = await api("POST", `/api/sessions/${id}/questions/${expiredId}`, {
      answers: [{ options: [1] }],
    });
    expect(answered).toMatchObject({ status: 200, body: { ok: true, late: true } });
    const late = await api("POST", `/api/sessions/${id}/late-answers`, {});
    expect(late.body.answers).toMatchObject([{ question_id: expiredId, answers: [{ selected: ["8080"] }] }]);
    expect(String((late.body.answers as unknown as Array<{ text: string }>)[0]?.text)).toContain("8080");
    expect((await api("GET", `/api/sessions/${id}/pending`)).body.questions).toEqual([]);
    await api("DELETE", `/api/sessions/${id}`);
  });
});

describe("connectClient reconnection", () => {
  it("re-attaches after the server restarts, and offers its tools to the new session", async () => {
    const root = await makeRoot();
    const port = await new Promise<number>((resolve) => {
      const probe = net.createServer().listen(0, "127.0.0.1", () => {
        const { port } = probe.address() as net.AddressInfo;
        probe.close(() => resolve(port));
      });
    });
    const args = ["--port", String(port), "--token", "restart-token"];
    let server = await startHttp(root, args);
    const statuses: string[] = [];
    const client = connectClient({
      url: server.url,
      token: "restart-token",
      backoff: { initialMs: 50, maxMs: 200 },
      onStatus: (s) => statuses.push(s.state),
      tools: [
        {
          name: "client_ping",
          description: "ping",
          input_schema: { type: "object", properties: {} },
          deferrable: false,
          execute: () => ({ kind: "pong" }),
        },
      ],
    });
    try {
      await client.ready;
      const firstSession = client.session;
      await server.stop();
      server = await startHttp(root, args);
      const headers = { authorization: "Bearer restart-token", "content-type": "application/json" };
      const deadline = Date.now() + 15_000;
      let result: unknown;
      while (Date.now() < deadline) {
        const [session] = (await (await fetch(`${server.url}/api/sessions`, { headers })).json()) as Array<{
          id: string;
        }>;
        const response = await fetch(`${server.url}/api/sessions/${session?.id}/calls`, {
          method: "POST",
          headers,
          body: JSON.stringify({ tool: "client_ping", input: {} }),
        });
        result = ((await response.json()) as { result: unknown }).result;
        if ((result as { kind: string }).kind === "pong") break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(result).toEqual({ kind: "pong" });
      expect(client.session).not.toBe(firstSession);
      expect(statuses).toContain("disconnected");
      expect(statuses.filter((s) => s === "attached").length).toBeGreaterThanOrEqual(2);
    } finally {
      await client.close();
      await server.stop();
      await fs.rm(root, { recursive: true, force: true });
    }
  });
});

describe("toolbelt serve usage", () => {
  it("needs exactly one of --mcp and --http, and refuses a broken config before serving (exit 2)", async () => {
    const root = await makeRoot();
    try {
      for (const flags of [[], ["--mcp", "--http"]]) {
        const result = spawnSync(process.execPath, [BIN, "serve", ...flags, "--root", root], {
          encoding: "utf8",
        });
        expect(result.status).toBe(2);
        expect(result.stderr).toContain("exactly one of --mcp or --http");
      }
      await fs.writeFile(path.join(root, "configs/app.json"), JSON.stringify({ agent: { nope: 1 } }));
      const broken = spawnSync(process.execPath, [BIN, "serve", "--http", "--port", "0", "--root", root], {
        encoding: "utf8",
      });
      expect(broken.status).toBe(2);
      // Config errors are usage errors: on stderr, like flag errors, with nothing on stdout.
      expect(broken.stderr).toContain("agent.nope");
      expect(broken.stdout).toBe("");
    } finally {
      await fs.rm(root, { recursive: true, force: true });
    }
  });
});
