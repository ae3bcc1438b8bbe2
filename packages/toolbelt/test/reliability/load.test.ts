// `toolbelt serve --http` under load (issue 34), end to end against the built CLI with real sockets
// and real processes: a burst of requests each on its own connection loses none and never runs more
// child processes than the pool allows; a saturated pool serves sessions in turn; an idle session is
// closed with its processes; SIGTERM lets a running call finish, reaps every process and exits 0.

import { readdirSync, readFileSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { connectClient } from "@toolbelt/bridge";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt } from "../cli-harness.js";
import { type HttpProcess, makeRoot, startHttp } from "../serve-fixture.js";

beforeAll(() => assertBuilt());

const servers: HttpProcess[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.stop();
});

async function serve(root: string, extra: string[]): Promise<HttpProcess> {
  const server = await startHttp(root, extra);
  servers.push(server);
  return server;
}

type Answer = { status: number; body: unknown; retryAfter?: string };

/** One request on a connection of its own (no agent, no keep-alive): what a burst of clients sends. */
function request(server: HttpProcess, method: string, route: string, body?: unknown): Promise<Answer> {
  const url = new URL(route, server.url);
  const data = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method,
        agent: false,
        headers: {
          authorization: `Bearer ${server.token}`,
          connection: "close",
          ...(data ? { "content-type": "application/json", "content-length": Buffer.byteLength(data) } : {}),
        },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          text += chunk;
        });
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            body: text ? JSON.parse(text) : undefined,
            ...(res.headers["retry-after"] ? { retryAfter: String(res.headers["retry-after"]) } : {}),
          }),
        );
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(data);
  });
}

/** A call as a well-behaved client makes it: a 503 is sent again after its Retry-After. */
async function call(server: HttpProcess, sid: string, tool: string, input: unknown): Promise<Answer> {
  for (;;) {
    const answer = await request(server, "POST", `/api/sessions/${sid}/calls`, { tool, input });
    if (answer.status !== 503) return answer;
    expect(answer.retryAfter).toMatch(/^\d+$/);
    await new Promise((r) => setTimeout(r, Number(answer.retryAfter) * 1000));
  }
}

const until = async <T>(check: () => T | undefined | Promise<T | undefined>, what: string): Promise<T> => {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
};

/** The direct children of `pid` now, from /proc (every thread's list). */
function childrenOf(pid: number): number {
  let count = 0;
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const text = readFileSync(`/proc/${pid}/task/${tid}/children`, "latin1").trim();
      if (text) count += text.split(/\s+/).length;
    }
  } catch {
    // The process is gone.
  }
  return count;
}

/** The tool's result in a call's answer ({call_id, result, text}). */
const result = (answer: Answer | undefined) =>
  (answer?.body as { result?: Record<string, unknown> } | undefined)?.result ?? {};

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function openSession(server: HttpProcess): Promise<string> {
  const opened = await request(server, "POST", "/api/sessions", {});
  expect(opened.status).toBe(201);
  return (opened.body as { id: string }).id;
}

describe("serve --http under load", { timeout: 180_000 }, () => {
  it("answers a burst of 500 connections, mixed reads and searches, losing none and never exceeding the process pool", async () => {
    const root = await makeRoot();
    for (let d = 0; d < 5; d++) {
      await mkdir(path.join(root, `src/mod${d}`), { recursive: true });
      for (let f = 0; f < 20; f++)
        await writeFile(
          path.join(root, `src/mod${d}/file${f}.ts`),
          Array.from({ length: 30 }, (_, i) => `export const v${i} = "needle${(d + f + i) % 7}";\n`).join(""),
        );
    }
    const MAX = 2;
    const server = await serve(root, ["--max-processes", String(MAX)]);
    const pid = server.child.pid as number;
    const sids = await Promise.all(Array.from({ length: 10 }, () => openSession(server)));
    let peak = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peak = Math.max(peak, childrenOf(pid));
        await new Promise((r) => setTimeout(r, 2));
      }
    })();
    const lost: string[] = [];
    const answers = await Promise.all(
      sids.flatMap((sid, s) =>
        Array.from({ length: 50 }, (_, k) => {
          const [tool, input] =
            k % 4 === 3
              ? ["search_files", { query: `needle${(s + k) % 7}`, path: "src" }]
              : ["read_file", { path: `src/mod${k % 5}/file${(s + k) % 20}.ts`, limit: 10 }];
          return call(server, sid, tool, input).catch((error: Error) => {
            lost.push(`${tool}: ${error.message}`);
            return undefined;
          });
        }),
      ),
    );
    sampling = false;
    await sampler;
    expect(lost).toEqual([]);
    const failed = answers.filter((a) => a?.status !== 200 || result(a).kind === "error");
    expect(failed).toEqual([]);
    expect(answers.filter((a) => result(a).kind === "search_results").length).toBe(120);
    // Searches ran (each starts ripgrep), never more at once than the pool's bound.
    expect(peak).toBeGreaterThan(0);
    expect(peak).toBeLessThanOrEqual(MAX);
  });

  it("answers a request past --max-requests 503 EBUSY with Retry-After, and serves it once a place is free", async () => {
    const root = await makeRoot();
    const server = await serve(root, ["--max-requests", "1", "--allow", "shell"]);
    const sid = await openSession(server);
    // The only place is held by a call whose command waits for the test.
    const holding = request(server, "POST", `/api/sessions/${sid}/calls`, {
      tool: "shell",
      input: { command: "while [ ! -e go ]; do sleep 0.05; done; echo held" },
    });
    await until(async () => {
      const health = await request(server, "GET", "/api/health");
      return (health.body as { requests?: { in_flight: number } }).requests?.in_flight === 1 || undefined;
    }, "the held call to be in flight");
    const refused = await request(server, "POST", `/api/sessions/${sid}/calls`, {
      tool: "read_file",
      input: { path: "a.txt" },
    });
    expect(refused.status).toBe(503);
    expect(refused.retryAfter).toMatch(/^\d+$/);
    expect((refused.body as { error?: { code?: string; message?: string } }).error).toMatchObject({
      code: "EBUSY",
      message: expect.stringContaining("server.max_requests"),
    });
    await writeFile(path.join(root, "go"), "");
    expect((await holding).status).toBe(200);
    // The same request, sent again as Retry-After says, is served.
    const again = await call(server, sid, "read_file", { path: "a.txt" });
    expect(again.status).toBe(200);
    expect(result(again).kind).toBe("file_content");
  });

  it("the client SDK sends a request the server answered 503 again after its Retry-After, and it lands", async () => {
    const root = await makeRoot();
    const server = await serve(root, ["--max-requests", "1", "--allow", "shell"]);
    const sid = await openSession(server);
    // A pass-through proxy between the client and the server, to see the statuses the client got.
    const statuses: Array<{ method: string; url: string; status: number }> = [];
    const proxy = http.createServer((req, res) => {
      const target = new URL(req.url ?? "/", server.url);
      const up = http.request(
        target,
        { method: req.method, headers: req.headers, agent: false },
        (answer) => {
          statuses.push({ method: req.method ?? "", url: req.url ?? "", status: answer.statusCode ?? 0 });
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      up.on("error", () => res.destroy());
      req.pipe(up);
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    try {
      const holding = request(server, "POST", `/api/sessions/${sid}/calls`, {
        tool: "shell",
        input: { command: "while [ ! -e go ]; do sleep 0.05; done; echo held" },
      });
      await until(async () => {
        const health = await request(server, "GET", "/api/health");
        return (health.body as { requests?: { in_flight: number } }).requests?.in_flight === 1 || undefined;
      }, "the held call to be in flight");
      const seen: string[] = [];
      const client = connectClient({
        url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
        token: server.token,
        session: sid,
        tools: [
          {
            name: "client_ping",
            description: "Ping.",
            input_schema: { type: "object" },
            execute: () => ({ kind: "pong" }),
          },
        ],
        onStatus: (status) => seen.push(status.state),
      });
      try {
        // The attach is refused while the only place is held; then the place is freed.
        await until(
          () => statuses.some((s) => s.method === "POST" && s.status === 503) || undefined,
          "a 503",
        );
        await writeFile(path.join(root, "go"), "");
        expect((await holding).status).toBe(200);
        await client.ready;
        const attaches = statuses.filter((s) => s.method === "POST" && s.url.includes("/attach"));
        expect(attaches[0]?.status).toBe(503);
        expect(attaches.at(-1)?.status).toBe(201);
        // Sent again by the request's own retry: the connection was never given up.
        expect(seen).not.toContain("disconnected");
      } finally {
        await client.close();
      }
    } finally {
      await new Promise((resolve) => proxy.close(resolve));
    }
  });

  it("serves a saturated pool's sessions in turn: a second session's call is not stuck behind the first one's fifty", async () => {
    const root = await makeRoot();
    const server = await serve(root, ["--max-processes", "1", "--allow", "shell"]);
    const [a, b] = [await openSession(server), await openSession(server)];
    // Session a's first command holds the only slot until the test lets it go.
    const holding = call(server, a, "shell", {
      command: "while [ ! -e go ]; do sleep 0.05; done; echo held >> order.log",
    });
    await until(async () => {
      const health = await request(server, "GET", "/api/health");
      return (health.body as { processes?: { running: number } }).processes?.running === 1 || undefined;
    }, "the first command to hold the slot");
    const queued = Array.from({ length: 50 }, (_, i) =>
      call(server, a, "shell", { command: `echo a${i} >> order.log` }),
    );
    await until(async () => {
      const health = await request(server, "GET", "/api/health");
      return (health.body as { processes?: { queued: number } }).processes?.queued === 50 || undefined;
    }, "session a's fifty calls to queue");
    const other = call(server, b, "shell", { command: "echo b >> order.log" });
    await until(async () => {
      const health = await request(server, "GET", "/api/health");
      const processes = (health.body as { processes?: { queued: number; sessions_waiting: number } })
        .processes;
      return (processes?.queued === 51 && processes.sessions_waiting === 2) || undefined;
    }, "session b's call to queue");
    await writeFile(path.join(root, "go"), "");
    const answers = await Promise.all([holding, ...queued, other]);
    for (const answer of answers) expect(answer.status).toBe(200);
    const order = (await readFile(path.join(root, "order.log"), "utf8")).trim().split("\n");
    expect(order).toHaveLength(52);
    // Slots go round-robin across waiting sessions: b's call runs within the first few freed slots.
    expect(order.indexOf("b")).toBeLessThanOrEqual(2);
    // The wait is stated on the result.
    expect(result(await other).queued_ms).toBeGreaterThan(0);
  });

  it("closes a session left idle, reaping its processes, and says so in /api/health", async () => {
    const root = await makeRoot();
    const server = await serve(root, ["--session-idle-seconds", "1", "--allow", "shell"]);
    const sid = await openSession(server);
    const started = await call(server, sid, "shell", { command: "sleep 1000", run_in_background: true });
    expect(started.status).toBe(200);
    const bg = result(started).pid as number;
    expect(alive(bg)).toBe(true);
    const health = await request(server, "GET", "/api/health");
    expect(health.body).toMatchObject({
      ok: true,
      status: "serving",
      sessions: { open: 2, idle_seconds: 1 },
    });
    await until(async () => {
      const listed = await request(server, "GET", "/api/sessions");
      return !(listed.body as Array<{ id: string }>).some((s) => s.id === sid) || undefined;
    }, "the idle session to close");
    await until(() => !alive(bg) || undefined, "the background shell to be reaped");
    // The server's own session stays.
    const after = await request(server, "GET", "/api/sessions");
    expect((after.body as unknown[]).length).toBe(1);
    const gone = await request(server, "POST", `/api/sessions/${sid}/calls`, {
      tool: "read_file",
      input: {},
    });
    expect(gone.status).toBe(404);
  });

  it("tells an unauthenticated probe only that the server is up", async () => {
    const root = await makeRoot();
    const server = await serve(root, []);
    const probe = await fetch(`${server.url}/api/health`);
    expect(probe.status).toBe(200);
    expect(await probe.json()).toEqual({ ok: true, status: "serving" });
    const wrong = await fetch(`${server.url}/api/health`, { headers: { authorization: "Bearer nope" } });
    expect(wrong.status).toBe(401);
  });

  it("stops on SIGTERM: the running call finishes, new requests are refused, every process is reaped, exit 0", async () => {
    const root = await makeRoot();
    const server = await serve(root, ["--allow", "shell", "--stop-grace-seconds", "60"]);
    const sid = await openSession(server);
    const started = await call(server, sid, "shell", { command: "sleep 1000", run_in_background: true });
    const bg = result(started).pid as number;
    expect(alive(bg)).toBe(true);
    const running = call(server, sid, "shell", {
      command: "while [ ! -e go ]; do sleep 0.05; done; echo finished",
    });
    await until(async () => {
      const health = await request(server, "GET", "/api/health");
      return (health.body as { calls?: { running: number } }).calls?.running === 1 || undefined;
    }, "the call to run");
    const exited = new Promise<number | null>((resolve) =>
      server.child.once("exit", (code) => resolve(code)),
    );
    server.child.kill("SIGTERM");
    // Stopping, the server accepts no new connection; one it had already accepted is answered 503 EBUSY.
    const refused = await until(async () => {
      const answer = await request(server, "POST", `/api/sessions/${sid}/calls`, {
        tool: "read_file",
        input: { path: "a.txt" },
      }).catch((error: NodeJS.ErrnoException) => String(error.code));
      return typeof answer === "string" || answer.status === 503 ? answer : undefined;
    }, "the server to refuse new calls");
    // A connection the kernel had queued when the listener closed is reset, not refused: both say no.
    if (typeof refused === "string") expect(["ECONNREFUSED", "ECONNRESET"]).toContain(refused);
    else expect(refused.body).toMatchObject({ error: { code: "EBUSY" } });
    await writeFile(path.join(root, "go"), "");
    const answer = await running;
    expect(answer.status).toBe(200);
    expect(result(answer)).toMatchObject({ kind: "shell_result", exit_code: 0 });
    expect(await exited).toBe(0);
    expect(alive(bg)).toBe(false);
  });
});
