// Round-trip latency of one read_file call through each surface: in process (session.callWithText),
// over MCP stdio (the MCP SDK client driving `toolbelt serve --mcp`) and over HTTP (POST
// /api/sessions/:id/calls to `toolbelt serve --http`). Same project, same call sequence, one session each.
// Usage: node benchmarks/servers/run.mjs [--calls N] [--warmup N]
// Needs the built packages (npx turbo run build --filter=@toolbelt/toolbelt...).
import { spawn } from "node:child_process";
import { promises as fs } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { BIN, fmt, REPO, ratio, stats, table } from "../lib.mjs";

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
};
const CALLS = arg("calls", 300);
const WARMUP = arg("warmup", 30);
const LINES = 400;

const root = await fs.mkdtemp(path.join(os.tmpdir(), "bench-servers-"));
await fs.writeFile(
  path.join(root, "big.ts"),
  Array.from({ length: LINES }, (_, i) => `export const value${i} = ${i}; // line ${i + 1} of the file`).join(
    "\n",
  ),
);
// Each call reads another 40-line window, so the read ledger never answers "unchanged".
const input = (i) => ({ path: "big.ts", offset: ((i * 37) % (LINES - 40)) + 1, limit: 40 });

const { createToolbelt } = await import(path.join(REPO, "packages/toolbelt/dist/index.js"));
const probe = await createToolbelt({ root });
const TOOL = probe.bind().tools.some((t) => t.name === "read_file") ? "read_file" : undefined;
await probe.close();
if (!TOOL) {
  console.error("read_file is not bound (is @toolbelt/files built?)");
  process.exit(1);
}

async function measure(call) {
  for (let i = 0; i < WARMUP; i++) await call(i);
  const times = [];
  for (let i = 0; i < CALLS; i++) {
    const start = process.hrtime.bigint();
    await call(WARMUP + i);
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return stats(times);
}

// --- in process ----------------------------------------------------------------------------------
const session = await createToolbelt({ root });
const inProcess = await measure(async (i) => {
  const { payload } = await session.callWithText(TOOL, input(i));
  if (payload.kind === "error") throw new Error(payload.message);
});
await session.close();

// --- MCP stdio -----------------------------------------------------------------------------------
const client = new Client({ name: "bench", version: "1.0.0" });
await client.connect(
  new StdioClientTransport({
    command: process.execPath,
    args: [BIN, "serve", "--mcp", "--root", root],
    stderr: "ignore",
  }),
);
const mcp = await measure(async (i) => {
  const result = await client.callTool({ name: TOOL, arguments: input(i) });
  if (result.isError) throw new Error(JSON.stringify(result.content));
});
await client.close();

// --- HTTP ----------------------------------------------------------------------------------------
const server = spawn(
  process.execPath,
  [BIN, "serve", "--http", "--port", "0", "--root", root, "--token", "bench"],
  {
    stdio: ["ignore", "pipe", "inherit"],
  },
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
const headers = { authorization: "Bearer bench", "content-type": "application/json" };
const [{ id }] = await (await fetch(`${url}/api/sessions`, { headers })).json();
const viaFetch = await measure(async (i) => {
  const response = await fetch(`${url}/api/sessions/${id}/calls`, {
    method: "POST",
    headers,
    body: JSON.stringify({ tool: TOOL, input: input(i) }),
  });
  const body = await response.json();
  if (body.result.kind === "error") throw new Error(body.result.message);
});
// The same calls through node:http with a keep-alive agent: less client overhead than fetch (undici).
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const post = (route, body) =>
  new Promise((resolve, reject) => {
    const req = http.request(`${url}${route}`, { method: "POST", headers, agent }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d) => {
        text += d;
      });
      res.on("end", () => resolve(JSON.parse(text)));
    });
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });
const httpAgent = await measure(async (i) => {
  const body = await post(`/api/sessions/${id}/calls`, { tool: TOOL, input: input(i) });
  if (body.result.kind === "error") throw new Error(body.result.message);
});
agent.destroy();
server.kill("SIGTERM");
await fs.rm(root, { recursive: true, force: true });

console.log(
  `${TOOL} of a 40-line window, ${CALLS} sequential calls after ${WARMUP} warm-up calls, node ${process.version}, ${os.cpus().length} CPUs\n`,
);
console.log(
  table(
    ["surface", "median", "p10", "p90", "mean", "median vs in-process"],
    [
      ["in process (SDK)", inProcess, "1.00x"],
      ["MCP stdio (`serve --mcp`)", mcp, ratio(mcp.median, inProcess.median)],
      ["HTTP (`serve --http`), fetch", viaFetch, ratio(viaFetch.median, inProcess.median)],
      ["HTTP (`serve --http`), node:http keep-alive", httpAgent, ratio(httpAgent.median, inProcess.median)],
    ].map(([name, s, r]) => [name, fmt(s.median), fmt(s.p10), fmt(s.p90), fmt(s.mean), r]),
  ),
);
