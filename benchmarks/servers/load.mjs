// A burst of many sessions against one project (issue 34): S sessions × C calls sent at once, the
// same calls through each surface —
//   http:       `toolbelt serve --http`, S sessions, every call on its own connection (no keep-alive,
//               no client pool), all S × C requests sent together; a 503 is retried after its
//               Retry-After, a connection error counts as a lost call;
//   exec:       S `toolbelt exec` processes, C lines written to each at once (exec answers in order);
//   mcp:        S `toolbelt serve --mcp` processes, C concurrent tools/call through the MCP SDK client;
//   in process: S createToolbelt() sessions in one process, S × C calls at once;
//   thinhttp:   the baseline for http: the in-process sessions behind the thinnest Node HTTP server
//               (node:http, a JSON body in, the payload out: no auth, no checks, no pool), sent the
//               same burst the same way. http / thinhttp is what toolbelt's server adds to HTTP itself.
// Two workloads: `read` (read_file only) and `mixed` (every fourth call a search_files), over a
// generated project of F files. For each: calls answered, calls lost, calls/s (and against in
// process), p50/p99 latency, peak child processes of the serving process(es), peak RSS.
// Usage: node benchmarks/servers/load.mjs [--sessions 50] [--calls 40] [--files 200]
//          [--surfaces http,thinhttp,exec,mcp,inprocess] [--workloads read,mixed]
// Needs the built packages (npm run build).
import { spawn } from "node:child_process";
import { promises as fs, readdirSync, readFileSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { BIN, REPO, table } from "../lib.mjs";

const SELF = fileURLToPath(import.meta.url);
const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : process.argv[i + 1];
};
const SESSIONS = Number(arg("sessions", 50));
const CALLS = Number(arg("calls", 40));
const FILES = Number(arg("files", 200));
const SURFACES = arg("surfaces", "http,thinhttp,exec,mcp,inprocess").split(",");
const WORKLOADS = arg("workloads", "read,mixed").split(",");
const TOKEN = "bench-load";

// ---- helpers shared by every role ---------------------------------------------------------------

/** Children of `pid` now (every thread's list), from /proc. */
function childrenOf(pid) {
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

/** Peak resident set of `pid` so far (VmHWM), in MiB. */
function peakRssMiB(pid) {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "latin1"));
    return m ? Number(m[1]) / 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** The call `k` of session `s`: read_file of a file the session has not read yet, or a search. */
function callOf(workload, s, k) {
  if (workload === "mixed" && k % 4 === 3)
    return { tool: "search_files", input: { query: `needle${(s * 7 + k) % 50}\\b`, path: "src" } };
  const n = (s * CALLS + k) % FILES;
  return { tool: "read_file", input: { path: fileName(n), offset: 1 + ((s + k) % 20), limit: 40 } };
}

const fileName = (n) => `src/mod${n % 10}/file${n}.ts`;

function quantile(sorted, q) {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : Number.NaN;
}

// ---- role: in process (a separate process, so its peak memory and children are its own) ---------

async function inProcessRole() {
  const root = arg("root");
  const workload = arg("workload");
  const { createToolbelt } = await import(path.join(REPO, "packages/toolbelt/dist/index.js"));
  const sessions = [];
  for (let s = 0; s < SESSIONS; s++) sessions.push(await createToolbelt({ root }));
  // Warm-up: one call per session, as the other surfaces get.
  await Promise.all(sessions.map((session) => session.callWithText("read_file", { path: "a.txt" })));
  process.stdout.write("ready\n");
  await new Promise((resolve) => process.stdin.once("data", resolve));
  const latencies = [];
  const codes = {};
  const start = process.hrtime.bigint();
  await Promise.all(
    sessions.flatMap((session, s) =>
      Array.from({ length: CALLS }, async (_, k) => {
        const { tool, input } = callOf(workload, s, k);
        const t0 = process.hrtime.bigint();
        const { payload } = await session.callWithText(tool, input);
        latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
        if (payload.kind === "error") codes[payload.code] = (codes[payload.code] ?? 0) + 1;
      }),
    ),
  );
  const wallMs = Number(process.hrtime.bigint() - start) / 1e6;
  for (const session of sessions) await session.close();
  process.stdout.write(
    `${JSON.stringify({ answered: latencies.length, lost: 0, latencies, wallMs, codes, rss: peakRssMiB(process.pid) })}\n`,
  );
  process.exit(0);
}

// ---- role: the thinnest HTTP server over the same sessions (the http surface's baseline) ----------

async function thinHttpRole() {
  const root = arg("root");
  const { createToolbelt } = await import(path.join(REPO, "packages/toolbelt/dist/index.js"));
  const sessions = [await createToolbelt({ root })];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (d) => chunks.push(d));
    req.on("end", async () => {
      const send = (status, body) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(body));
      };
      if (req.method === "GET" && req.url === "/api/sessions") return send(200, [{ id: "0" }]);
      if (req.method === "POST" && req.url === "/api/sessions") {
        sessions.push(await createToolbelt({ root }));
        return send(201, { id: String(sessions.length - 1) });
      }
      const m = /^\/api\/sessions\/(\d+)\/calls$/.exec(req.url ?? "");
      const session = m ? sessions[Number(m[1])] : undefined;
      if (req.method !== "POST" || !session) return send(404, { error: "not found" });
      const { tool, input } = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      const { payload, text } = await session.callWithText(tool, input);
      send(200, { result: payload, text });
    });
  });
  server.listen({ host: "127.0.0.1", port: 0, backlog: 4096 }, () => {
    process.stdout.write(`listening on http://127.0.0.1:${server.address().port}\n`);
  });
  process.on("SIGTERM", async () => {
    for (const session of sessions) await session.close();
    process.exit(0);
  });
}

// ---- main --------------------------------------------------------------------------------------

async function makeProject() {
  const root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "bench-load-")));
  await fs.writeFile(path.join(root, "a.txt"), "warm\n");
  for (let n = 0; n < FILES; n++) {
    const dir = path.join(root, path.dirname(fileName(n)));
    await fs.mkdir(dir, { recursive: true });
    const lines = Array.from(
      { length: 120 },
      (_, i) => `export const value${n}_${i} = ${i}; // needle${(n + i) % 50} line ${i + 1}`,
    );
    await fs.writeFile(path.join(root, fileName(n)), `${lines.join("\n")}\n`);
  }
  return root;
}

async function startPoller(pids) {
  const child = spawn(process.execPath, [SELF, "--role", "poll", "--pids", pids.join(",")], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.on("data", (d) => {
    out += d;
  });
  await new Promise((resolve) => {
    const check = () => (out.includes("polling") ? resolve() : setTimeout(check, 5));
    check();
  });
  return async () => {
    out = "";
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    await exited;
    return Number(out.trim());
  };
}

function lineReader(stream, onLine) {
  let buffer = "";
  stream.setEncoding("utf8");
  stream.on("data", (d) => {
    buffer += d;
    let nl = buffer.indexOf("\n");
    while (nl !== -1) {
      onLine(buffer.slice(0, nl));
      buffer = buffer.slice(nl + 1);
      nl = buffer.indexOf("\n");
    }
  });
}

/** One request on its own connection; resolves with the status, headers and body, or the error. */
function request(url, method, route, body) {
  return new Promise((resolve) => {
    const req = http.request(
      `${url}${route}`,
      {
        method,
        agent: false,
        headers: {
          authorization: `Bearer ${TOKEN}`,
          "content-type": "application/json",
          connection: "close",
        },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d) => {
          text += d;
        });
        res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, text }));
        res.on("error", (error) => resolve({ error: error.code ?? error.message }));
      },
    );
    req.on("error", (error) => resolve({ error: error.code ?? error.message }));
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

async function httpRun(root, workload, { thin = false } = {}) {
  const server = spawn(
    process.execPath,
    thin
      ? [SELF, "--role", "thinhttp", "--root", root]
      : [BIN, "serve", "--http", "--port", "0", "--root", root, "--token", TOKEN],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const url = await new Promise((resolve, reject) => {
    let out = "";
    server.stdout.on("data", (d) => {
      out += d;
      const m = /listening on (\S+)/.exec(out);
      if (m) resolve(m[1]);
    });
    server.once("exit", (code) => reject(new Error(`serve --http exited ${code}: ${out}`)));
  });
  const ids = [];
  const first = JSON.parse((await request(url, "GET", "/api/sessions")).text);
  ids.push(first[0].id);
  while (ids.length < SESSIONS) {
    const opened = await request(url, "POST", "/api/sessions", {});
    if (opened.status !== 201) throw new Error(`opening a session: ${opened.status} ${opened.text}`);
    ids.push(JSON.parse(opened.text).id);
  }
  for (const id of ids)
    await request(url, "POST", `/api/sessions/${id}/calls`, { tool: "read_file", input: { path: "a.txt" } });
  const health = await request(url, "GET", "/api/health");
  const pool = health.status === 200 ? JSON.parse(health.text).processes : undefined;
  const stopPoller = await startPoller([server.pid]);
  const latencies = [];
  const codes = {};
  const lostBy = {};
  let retried = 0;
  const start = process.hrtime.bigint();
  await Promise.all(
    ids.flatMap((id, s) =>
      Array.from({ length: CALLS }, async (_, k) => {
        const call = callOf(workload, s, k);
        const t0 = process.hrtime.bigint();
        for (;;) {
          const answer = await request(url, "POST", `/api/sessions/${id}/calls`, call);
          if (answer.error) {
            lostBy[answer.error] = (lostBy[answer.error] ?? 0) + 1;
            return;
          }
          if (answer.status === 503) {
            retried++;
            const after = Number(answer.headers["retry-after"] ?? 1);
            await new Promise((r) => setTimeout(r, after * 1000 * (0.5 + Math.random())));
            continue;
          }
          let body;
          try {
            body = JSON.parse(answer.text);
          } catch {
            const why = `HTTP ${answer.status} without a JSON body`;
            lostBy[why] = (lostBy[why] ?? 0) + 1;
            return;
          }
          latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
          const result = body.result ?? body.error;
          if (answer.status !== 200 || result.kind === "error")
            codes[result.code ?? answer.status] = (codes[result.code ?? answer.status] ?? 0) + 1;
          return;
        }
      }),
    ),
  );
  const wallMs = Number(process.hrtime.bigint() - start) / 1e6;
  const peakChildren = await stopPoller();
  const rss = peakRssMiB(server.pid);
  const exited = new Promise((r) => server.once("exit", r));
  server.kill("SIGTERM");
  await exited;
  const lost = Object.values(lostBy).reduce((a, b) => a + b, 0);
  return {
    answered: latencies.length,
    lost,
    lostBy,
    retried,
    latencies,
    wallMs,
    codes,
    peakChildren,
    rss,
    pool,
  };
}

async function execRun(root, workload) {
  const children = [];
  for (let s = 0; s < SESSIONS; s++) {
    const child = spawn(process.execPath, [BIN, "exec", "--root", root], {
      stdio: ["pipe", "pipe", "inherit"],
    });
    const waiting = new Map();
    lineReader(child.stdout, (line) => {
      const { id } = JSON.parse(line);
      waiting.get(id)?.(JSON.parse(line).result);
      waiting.delete(id);
    });
    const send = (id, call) =>
      new Promise((resolve) => {
        waiting.set(id, resolve);
        child.stdin.write(`${JSON.stringify({ id, ...call })}\n`);
      });
    children.push({ child, send });
  }
  await Promise.all(children.map((c) => c.send("warm", { tool: "read_file", input: { path: "a.txt" } })));
  const stopPoller = await startPoller(children.map((c) => c.child.pid));
  const latencies = [];
  const codes = {};
  const start = process.hrtime.bigint();
  await Promise.all(
    children.flatMap((c, s) =>
      Array.from({ length: CALLS }, async (_, k) => {
        const t0 = process.hrtime.bigint();
        const result = await c.send(`c${k}`, callOf(workload, s, k));
        latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
        if (result.kind === "error") codes[result.code] = (codes[result.code] ?? 0) + 1;
      }),
    ),
  );
  const wallMs = Number(process.hrtime.bigint() - start) / 1e6;
  const peakChildren = await stopPoller();
  const rss = children.map((c) => peakRssMiB(c.child.pid));
  await Promise.all(
    children.map(
      (c) =>
        new Promise((resolve) => {
          c.child.once("exit", resolve);
          c.child.stdin.end();
        }),
    ),
  );
  return {
    answered: latencies.length,
    lost: 0,
    latencies,
    wallMs,
    codes,
    peakChildren,
    rss: sum(rss),
    rssEach: Math.max(...rss),
  };
}

async function mcpRun(root, workload) {
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
  const clients = [];
  for (let s = 0; s < SESSIONS; s++) {
    const client = new Client({ name: "bench-load", version: "1.0.0" });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, "serve", "--mcp", "--root", root],
      stderr: "ignore",
    });
    await client.connect(transport);
    await client.callTool({ name: "read_file", arguments: { path: "a.txt" } });
    clients.push({ client, transport });
  }
  const pids = clients.map((c) => c.transport.pid);
  const stopPoller = await startPoller(pids);
  const latencies = [];
  const codes = {};
  const start = process.hrtime.bigint();
  await Promise.all(
    clients.flatMap(({ client }, s) =>
      Array.from({ length: CALLS }, async (_, k) => {
        const { tool, input } = callOf(workload, s, k);
        const t0 = process.hrtime.bigint();
        const result = await client.callTool({ name: tool, arguments: input }, undefined, {
          timeout: 600_000,
        });
        latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
        const payload = result.structuredContent;
        if (result.isError) codes[payload?.code ?? "error"] = (codes[payload?.code ?? "error"] ?? 0) + 1;
      }),
    ),
  );
  const wallMs = Number(process.hrtime.bigint() - start) / 1e6;
  const peakChildren = await stopPoller();
  const rss = pids.map(peakRssMiB);
  for (const { client } of clients) await client.close();
  return {
    answered: latencies.length,
    lost: 0,
    latencies,
    wallMs,
    codes,
    peakChildren,
    rss: sum(rss),
    rssEach: Math.max(...rss),
  };
}

async function inProcessRun(root, workload) {
  const child = spawn(
    process.execPath,
    [
      SELF,
      "--role",
      "inprocess",
      "--root",
      root,
      "--workload",
      workload,
      "--sessions",
      String(SESSIONS),
      "--calls",
      String(CALLS),
      "--files",
      String(FILES),
    ],
    { stdio: ["pipe", "pipe", "inherit"] },
  );
  const lines = [];
  let notify = () => {};
  lineReader(child.stdout, (line) => {
    lines.push(line);
    notify();
  });
  const next = () =>
    new Promise((resolve) => {
      const check = () => {
        if (lines.length) resolve(lines.shift());
        else notify = check;
      };
      check();
    });
  await next(); // ready
  const stopPoller = await startPoller([child.pid]);
  child.stdin.write("go\n");
  const result = JSON.parse(await next());
  const peakChildren = await stopPoller();
  return { ...result, peakChildren };
}

const sum = (values) => values.reduce((a, b) => a + b, 0);

async function main() {
  const root = await makeProject();
  const runs = {
    http: httpRun,
    thinhttp: (root, workload) => httpRun(root, workload, { thin: true }),
    exec: execRun,
    mcp: mcpRun,
    inprocess: inProcessRun,
  };
  const names = {
    http: "HTTP (`serve --http`), a connection per call",
    thinhttp: "baseline: the same sessions behind a bare node:http server, a connection per call",
    exec: `exec, ${SESSIONS} processes`,
    mcp: `MCP stdio, ${SESSIONS} processes`,
    inprocess: `in process, ${SESSIONS} sessions`,
  };
  const load = () => os.loadavg()[0].toFixed(1);
  console.log(
    `${SESSIONS} sessions × ${CALLS} calls in one burst (${SESSIONS * CALLS} calls), ${FILES}-file project, node ${process.version}, ${os.cpus().length} CPUs, load ${load()} at start\n`,
  );
  for (const workload of WORKLOADS) {
    const results = {};
    for (const surface of ["inprocess", ...SURFACES.filter((s) => s !== "inprocess")]) {
      if (!SURFACES.includes(surface)) continue;
      results[surface] = await runs[surface](root, workload);
    }
    const base = results.inprocess;
    const rows = Object.entries(results).map(([surface, r]) => {
      const sorted = [...r.latencies].sort((a, b) => a - b);
      const rate = (r.answered / r.wallMs) * 1000;
      const baseRate = base ? (base.answered / base.wallMs) * 1000 : Number.NaN;
      const errors = Object.entries(r.codes)
        .map(([c, n]) => `${n} ${c}`)
        .join(", ");
      return [
        names[surface],
        `${r.answered}/${SESSIONS * CALLS}${errors ? ` (${errors})` : ""}`,
        `${r.lost}${
          r.lostBy && r.lost
            ? ` (${Object.entries(r.lostBy)
                .map(([c, n]) => `${n} ${c}`)
                .join(", ")})`
            : ""
        }${r.retried ? `; ${r.retried} 503 retried` : ""}`,
        rate.toFixed(0),
        base ? `${(rate / baseRate).toFixed(2)}x` : "—",
        `${(quantile(sorted, 0.5) / 1000).toFixed(2)} s`,
        `${(quantile(sorted, 0.99) / 1000).toFixed(2)} s`,
        `${r.peakChildren}${r.pool ? ` (pool ${r.pool.max} + ${r.pool.long_lived.max} long-lived)` : ""}`,
        `${r.rss.toFixed(0)} MiB${r.rssEach ? ` (${r.rssEach.toFixed(0)} each at most)` : ""}`,
      ];
    });
    console.log(
      `workload: ${workload === "read" ? "read_file only" : "mixed (every fourth call search_files)"}, load ${load()} after\n`,
    );
    console.log(
      table(
        [
          "surface",
          "answered",
          "lost",
          "calls/s",
          "vs in process",
          "p50",
          "p99",
          "peak children",
          "peak RSS",
        ],
        rows,
      ),
    );
    console.log("");
  }
  await fs.rm(root, { recursive: true, force: true });
}

/** The poller role: counts the children of the serving processes while the burst runs. */
function pollRole() {
  const pids = arg("pids").split(",").map(Number);
  let peak = 0;
  const tick = () => {
    let now = 0;
    for (const pid of pids) now += childrenOf(pid);
    if (now > peak) peak = now;
  };
  const timer = setInterval(tick, 2);
  process.on("SIGTERM", () => {
    clearInterval(timer);
    tick();
    process.stdout.write(`${peak}\n`);
    process.exit(0);
  });
  process.stdout.write("polling\n");
}

const role = arg("role");
if (role === "poll") pollRole();
else if (role === "inprocess") await inProcessRole();
else if (role === "thinhttp") await thinHttpRole();
else await main();
