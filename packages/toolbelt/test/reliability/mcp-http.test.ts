// `toolbelt serve --mcp --transport http`, end to end against the built CLI on real sockets: the MCP
// SDK's streamable-HTTP client for what a client does, raw HTTP requests for what an attacker sends
// (a foreign Host or Origin, no token or a wrong one, an oversized body, a flood of sessions), and a
// look for the token in everything the server says.
import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import fs from "node:fs/promises";
import { request } from "node:http";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CallToolResultSchema,
  LoggingMessageNotificationSchema,
  type Progress,
} from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, cli } from "../cli-harness.js";
import { until } from "../mcp-raw.js";
import { BIN, makeRoot } from "../serve-fixture.js";

beforeAll(assertBuilt);

type Served = { child: ChildProcess; url: URL; stdout: string; stderr: string; stop(): Promise<void> };

/** Starts the built `serve --mcp --transport http` on a free loopback port and reads its URL. */
async function serveMcpHttp(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Served> {
  const child = spawn(
    process.execPath,
    [BIN, "serve", "--mcp", "--transport", "http", "--port", "0", "--trust", "--root", root, ...args],
    { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, TOOLBELT_TOKEN: "", ...env } },
  );
  const served = { child, stdout: "", stderr: "" } as Served;
  child.stdout?.on("data", (d: Buffer) => {
    served.stdout += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    served.stderr += d.toString();
  });
  const url = await until(() => {
    if (child.exitCode !== null) throw new Error(`serve exited ${child.exitCode}: ${served.stderr}`);
    // The token line follows the URL line (or --no-auth's warning does): wait for the whole banner.
    const listening = /listening on (\S+)/.exec(served.stdout)?.[1];
    return listening && (/^token: /m.test(served.stdout) || /--no-auth/.test(served.stderr))
      ? listening
      : undefined;
  }, "the listening line");
  served.url = new URL(url);
  served.stop = async () => {
    if (child.exitCode !== null) return;
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    await exited;
  };
  return served;
}

type RawAnswer = { status: number; headers: Record<string, string | string[] | undefined>; body: string };

/** One HTTP request with exactly these headers (Host and Origin included, which fetch would not send). */
function raw(url: URL, method: string, headers: Record<string, string>, body?: string): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method,
        headers,
        setHost: !("host" in headers),
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d: string) => {
          text += d;
          // An SSE answer stays open for more; the first message is all a test needs.
          if (String(res.headers["content-type"]).includes("text/event-stream") && text.includes("\n\n")) {
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text });
            res.destroy();
          }
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
        res.on("error", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      },
    );
    // The server may answer (413) before reading all of a large body, and close.
    req.on("error", reject);
    req.end(body);
  });
}

const INITIALIZE = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "attacker", version: "1" } },
});
const POST_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };

let root: string;
beforeAll(async () => {
  root = await makeRoot();
});
afterAll(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

function connect(served: Served, token?: string, capabilities = {}) {
  const client = new Client({ name: "http-test", version: "1" }, { capabilities });
  const transport = new StreamableHTTPClientTransport(served.url, {
    requestInit: token ? { headers: { authorization: `Bearer ${token}` } } : {},
  });
  return { client, transport };
}

/** Whether a process whose command line holds `marker` is running. */
function running(marker: string): boolean {
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(marker)) return true;
    } catch {
      // Gone between the listing and the read.
    }
  }
  return false;
}

describe("serve --mcp --transport http: a client's session", () => {
  it("serves the session's tools with progress, and DELETE ends the session and its processes", async () => {
    const token = "tok-client-session-0123456789";
    const served = await serveMcpHttp(["--token", token, "--allow", "shell"]);
    try {
      const { client, transport } = connect(served, token);
      await client.connect(transport);
      expect(transport.sessionId).toMatch(/.+/);
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toContain("read_file");
      const read = await client.callTool({ name: "read_file", arguments: { path: "a.txt" } });
      expect(read.isError).toBe(false);
      expect(JSON.stringify(read.structuredContent)).toContain("hello");

      const seen: Progress[] = [];
      const shell = await client.request(
        {
          method: "tools/call",
          params: { name: "shell", arguments: { command: "echo first-line; sleep 1; echo done" } },
        },
        CallToolResultSchema,
        { onprogress: (p) => seen.push(p) },
      );
      expect(shell.isError).toBe(false);
      expect(seen.map((p) => p.message).join("\n")).toContain("first-line");

      // A background process of this session: ending the session must end it.
      const marker = `toolbelt-mcp-http-${process.pid}-${Date.now()}`;
      const started = await client.callTool({
        name: "shell",
        arguments: { command: `sleep 300 # ${marker}`, run_in_background: true },
      });
      expect(started.structuredContent).toMatchObject({ kind: "shell_started" });
      await until(() => running(marker), "the background process");
      await transport.terminateSession();
      await until(() => !running(marker), "the background process to end with the session");
      // The session is gone: a request naming it is told so (404), so a client starts a new one.
      const after = await raw(
        served.url,
        "POST",
        {
          ...POST_HEADERS,
          authorization: `Bearer ${token}`,
          "mcp-session-id": String(transport.sessionId),
          "mcp-protocol-version": "2025-06-18",
        },
        JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list" }),
      );
      expect(after.status).toBe(404);
      await client.close();
    } finally {
      await served.stop();
    }
  }, 90_000);
});

type SseEvent = { id?: string; data: string };

/**
 * One request whose answer is an SSE stream, read until `enough(events)` holds; the connection is
 * then dropped, as a client whose network went away would.
 */
function sse(
  url: URL,
  method: string,
  headers: Record<string, string>,
  body: string | undefined,
  enough: (events: SseEvent[]) => boolean,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; events: SseEvent[] }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: url.hostname, port: url.port, path: url.pathname, method, headers },
      (res) => {
        const events: SseEvent[] = [];
        let buffer = "";
        const done = () => {
          resolve({ status: res.statusCode ?? 0, headers: res.headers, events });
          res.destroy();
        };
        res.setEncoding("utf8");
        res.on("data", (d: string) => {
          buffer += d;
          let end = buffer.indexOf("\n\n");
          while (end !== -1) {
            const event: SseEvent = { data: "" };
            for (const line of buffer.slice(0, end).split("\n")) {
              if (line.startsWith("id:")) event.id = line.slice(3).trim();
              else if (line.startsWith("data:")) event.data += line.slice(5).trim();
            }
            events.push(event);
            buffer = buffer.slice(end + 2);
            end = buffer.indexOf("\n\n");
          }
          if (enough(events)) done();
        });
        res.on("end", done);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

describe("serve --mcp --transport http: resumption", () => {
  it("a call's stream dropped mid-call is resumed with Last-Event-ID: what followed, the result included, and nothing twice", async () => {
    const served = await serveMcpHttp(["--no-auth", "--allow", "shell"]);
    const go = `go-${process.pid}-${Date.now()}`;
    try {
      const init = await raw(served.url, "POST", POST_HEADERS, INITIALIZE);
      expect(init.status).toBe(200);
      const session = String(init.headers["mcp-session-id"]);
      const headers = { ...POST_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-06-18" };
      await raw(
        served.url,
        "POST",
        headers,
        JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
      );
      // The command prints a line, then waits for the test to let it go on; its progress is on the stream.
      const call = JSON.stringify({
        jsonrpc: "2.0",
        id: 7,
        method: "tools/call",
        params: {
          name: "shell",
          arguments: {
            command: `echo first-part; while [ ! -e ${go} ]; do sleep 0.05; done; echo second-part`,
          },
          _meta: { progressToken: "p7" },
        },
      });
      const first = await sse(served.url, "POST", headers, call, (events) =>
        events.some((e) => e.data.includes("first-part")),
      );
      expect(first.status).toBe(200);
      const seen = first.events.filter((e) => e.id);
      const last = seen.at(-1)?.id;
      expect(last).toBeDefined();
      expect(first.events.some((e) => e.data.includes('"id":7'))).toBe(false);
      // The stream is gone; the call goes on and finishes while no one listens.
      await fs.writeFile(`${root}/${go}`, "");
      const resumed = await sse(
        served.url,
        "GET",
        {
          accept: "text/event-stream",
          "mcp-session-id": session,
          "mcp-protocol-version": "2025-06-18",
          "last-event-id": String(last),
        },
        undefined,
        (events) => events.some((e) => e.data.includes('"id":7')),
      );
      expect(resumed.status).toBe(200);
      const replayed = resumed.events.filter((e) => e.data);
      const result = replayed.find((e) => e.data.includes('"id":7'));
      expect(result?.data).toContain("second-part");
      // Only what came after the last event seen: the first part is not sent again.
      expect(replayed.some((e) => e.data.includes("first-part") && !e.data.includes("second-part"))).toBe(
        false,
      );
      const ids = resumed.events.flatMap((e) => (e.id ? [e.id] : []));
      expect(ids.every((id) => !seen.some((s) => s.id === id))).toBe(true);
    } finally {
      await fs.rm(`${root}/${go}`, { force: true });
      await served.stop();
    }
  }, 60_000);
});

describe("serve --mcp --transport http: attacks", () => {
  let served: Served;
  const token = "tok-attack-tests-abcdefghij";
  const auth = { authorization: `Bearer ${token}` };
  beforeAll(async () => {
    served = await serveMcpHttp(["--token", token, "--max-sessions", "2"], {
      TOOLBELT_MCP_MAX_MESSAGE_BYTES: String(64 * 1024),
    });
  });
  afterAll(async () => {
    await served?.stop();
  });

  it("refuses a foreign Host (DNS rebinding) and a foreign Origin with 403, before the token is looked at", async () => {
    const host = await raw(
      served.url,
      "POST",
      { ...POST_HEADERS, ...auth, host: `evil.example:${served.url.port}` },
      INITIALIZE,
    );
    expect(host.status).toBe(403);
    expect(host.body).toContain("Host");
    const origin = await raw(
      served.url,
      "POST",
      { ...POST_HEADERS, ...auth, origin: "https://evil.example" },
      INITIALIZE,
    );
    expect(origin.status).toBe(403);
    expect(origin.body).toContain("Origin");
    expect(origin.headers["access-control-allow-origin"]).toBeUndefined();
    // The page the server's own address opens is allowed.
    const own = await raw(
      served.url,
      "POST",
      { ...POST_HEADERS, ...auth, origin: served.url.origin },
      INITIALIZE,
    );
    expect(own.status).toBe(200);
    await raw(served.url, "DELETE", { ...auth, "mcp-session-id": String(own.headers["mcp-session-id"]) });
  }, 60_000);

  it("refuses a missing or wrong token with 401, and takes no token from the URL", async () => {
    const missing = await raw(served.url, "POST", POST_HEADERS, INITIALIZE);
    expect(missing.status).toBe(401);
    expect(missing.headers["www-authenticate"]).toMatch(/Bearer/);
    const wrong = await raw(
      served.url,
      "POST",
      { ...POST_HEADERS, authorization: `Bearer ${token}x` },
      INITIALIZE,
    );
    expect(wrong.status).toBe(401);
    const inUrl = await raw(new URL(`${served.url.href}?token=${token}`), "POST", POST_HEADERS, INITIALIZE);
    expect(inUrl.status).toBe(401);
    expect([missing.body, wrong.body].join("")).not.toContain(token);
  }, 60_000);

  it("answers a body over the bound with 413 and keeps serving", async () => {
    const big = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { pad: "a".repeat(200 * 1024) },
    });
    const answer = await raw(served.url, "POST", { ...POST_HEADERS, ...auth }, big);
    expect(answer.status).toBe(413);
    const ok = await raw(served.url, "POST", { ...POST_HEADERS, ...auth }, INITIALIZE);
    expect(ok.status).toBe(200);
    await raw(served.url, "DELETE", { ...auth, "mcp-session-id": String(ok.headers["mcp-session-id"]) });
  }, 60_000);

  it("holds at most --max-sessions sessions: one more is 503, and DELETE frees a place", async () => {
    const first = await raw(served.url, "POST", { ...POST_HEADERS, ...auth }, INITIALIZE);
    const second = await raw(served.url, "POST", { ...POST_HEADERS, ...auth }, INITIALIZE);
    expect([first.status, second.status]).toEqual([200, 200]);
    const third = await raw(served.url, "POST", { ...POST_HEADERS, ...auth }, INITIALIZE);
    expect(third.status).toBe(503);
    expect(third.body).toContain("2 MCP sessions");
    const ended = await raw(served.url, "DELETE", {
      ...auth,
      "mcp-session-id": String(first.headers["mcp-session-id"]),
      "mcp-protocol-version": "2025-06-18",
    });
    expect(ended.status).toBe(200);
    const again = await until(async () => {
      const answer = await raw(served.url, "POST", { ...POST_HEADERS, ...auth }, INITIALIZE);
      return answer.status === 200 ? answer : undefined;
    }, "a place after DELETE");
    for (const sid of [second.headers["mcp-session-id"], again.headers["mcp-session-id"]])
      await raw(served.url, "DELETE", {
        ...auth,
        "mcp-session-id": String(sid),
        "mcp-protocol-version": "2025-06-18",
      });
  }, 60_000);
});

describe("serve --mcp --transport http: the token", () => {
  it("never shows a given token in the banner, events, logs or results", async () => {
    const token = "tok-secret-leak-check-zyxwvu";
    const served = await serveMcpHttp(["--allow", "shell"], { TOOLBELT_TOKEN: token });
    const said: string[] = [];
    try {
      expect(served.stdout).not.toContain(token);
      expect(served.stdout).toContain("TOOLBELT_TOKEN");
      const { client, transport } = connect(served, token);
      client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
        said.push(JSON.stringify(n.params));
      });
      await client.connect(transport);
      await client.setLoggingLevel("debug");
      const result = await client.callTool({
        name: "shell",
        arguments: { command: 'env; echo "token=$TOOLBELT_TOKEN"; cat /proc/$PPID/environ | tr "\\0" "\\n"' },
      });
      said.push(JSON.stringify(result));
      await until(() => said.some((s) => s.includes("tool_result")), "the debug tool_result event");
      await client.close();
    } finally {
      await served.stop();
    }
    const everything = [...said, served.stdout, served.stderr].join("\n");
    expect(everything).toContain("token=");
    expect(everything).not.toContain(token);
  }, 60_000);

  it("prints a random token when none is given, and --no-auth is refused off loopback and announced on it", async () => {
    const refused = await cli([
      "serve",
      "--mcp",
      "--transport",
      "http",
      "--no-auth",
      "--host",
      "0.0.0.0",
      "--port",
      "0",
    ]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/--no-auth.*loopback/);

    const generated = await serveMcpHttp([]);
    await generated.stop();
    expect(generated.stdout).toMatch(/^token: [A-Za-z0-9_-]{24,}$/m);

    const open = await serveMcpHttp(["--no-auth"]);
    try {
      expect(open.stderr).toMatch(/--no-auth/);
      const { client, transport } = connect(open);
      await client.connect(transport);
      expect((await client.listTools()).tools.length).toBeGreaterThan(0);
      await client.close();
    } finally {
      await open.stop();
    }
  }, 60_000);
});
