// End to end: the built `toolbelt` bin as an MCP client of real servers — the reference filesystem
// server, a toy server that crashes on a call, and `toolbelt serve --mcp` itself.
import { spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt } from "../../toolbelt/test/cli-harness.js";

const require = createRequire(import.meta.url);
const BIN = fileURLToPath(new URL("../../toolbelt/dist/bin.js", import.meta.url));
const FS_SERVER = require.resolve("@modelcontextprotocol/server-filesystem/dist/index.js");
const TOY = fileURLToPath(new URL("../src/__fixtures__/toy-server.mjs", import.meta.url));
const TRACE = fileURLToPath(new URL("./fixtures/trace-imports.mjs", import.meta.url));
const node = process.execPath;
// A missing or stale build fails these tests (see assertBuilt), it does not skip them.
beforeAll(assertBuilt);

const roots: string[] = [];
afterAll(() => {
  for (const dir of roots.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function project(
  servers?: Record<string, unknown>,
  config: unknown = { agent: { tool_search: "on" } },
): string {
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), "tb-mcp-e2e-")));
  roots.push(dir);
  if (servers) writeFileSync(path.join(dir, ".mcp.json"), JSON.stringify({ mcpServers: servers }));
  mkdirSync(path.join(dir, "configs"));
  writeFileSync(path.join(dir, "configs", "app.json"), JSON.stringify(config));
  writeFileSync(path.join(dir, "notes.txt"), "hello from the project\n");
  return dir;
}

type Run = { code: number | null; stdout: string; stderr: string };
function run(args: string[], stdin = "", env: NodeJS.ProcessEnv = {}, nodeArgs: string[] = []): Promise<Run> {
  return new Promise((resolve, reject) => {
    // The projects here are the test's own: trusted, so their .mcp.json servers start.
    const child = spawn(node, [...nodeArgs, BIN, ...args], {
      env: { ...process.env, TOOLBELT_TRUST: "1", ...env },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on("data", (c: Buffer) => {
      stderr += c.toString();
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin);
  });
}

type Line = { id?: string; tool?: string; result?: Record<string, unknown>; event?: Record<string, unknown> };
const lines = (text: string): Line[] =>
  text
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Line);
const jsonl = (calls: Array<[string, string, unknown]>) =>
  calls.map(([id, tool, input]) => JSON.stringify({ id, tool, input })).join("\n");

describe("toolbelt exec with MCP servers", () => {
  it("lists server tools as deferred names, binds them with tool_search, calls them, and reports a crash", async () => {
    const root = project({
      fs: { command: node, args: [FS_SERVER, "."] },
      toy: { command: node, args: [TOY] },
    });
    const listed = JSON.parse((await run(["tools", "--root", root])).stdout) as {
      tools: Array<{ name: string }>;
      deferred: string[];
    };
    expect(listed.deferred).toEqual(expect.arrayContaining(["mcp__fs__read_text_file", "mcp__toy__crash"]));
    expect(listed.tools.map((t) => t.name)).toContain("mcp_status");
    expect(listed.tools.map((t) => t.name)).not.toContain("mcp__fs__read_text_file");
    const out = await run(
      ["exec", "--root", root, "--events"],
      jsonl([
        ["1", "tool_search", { query: "read text file" }],
        ["2", "mcp__fs__read_text_file", { path: path.join(root, "notes.txt") }],
        ["3", "tool_search", { query: "select:mcp__toy__crash,mcp__toy__echo" }],
        ["4", "mcp__toy__crash", {}],
        ["5", "mcp__toy__echo", { message: "anyone?" }],
        ["6", "mcp__fs__read_text_file", { path: path.join(root, "notes.txt") }],
        ["7", "mcp_status", {}],
      ]),
    );
    const all = lines(out.stdout);
    // tool_search bound the tool: the event a UI draws says so.
    const bound = all.find((l) => l.event?.type === "tools_bound")?.event;
    expect(bound?.bound).toContain("mcp__fs__read_text_file");
    expect(bound?.deferred).toContain("mcp__toy__crash");
    const result = Object.fromEntries(all.filter((l) => l.id).map((l) => [l.id, l.result ?? {}]));
    expect(result["1"]?.bound).toContain("mcp__fs__read_text_file");
    expect(result["2"]).toMatchObject({
      kind: "mcp_result",
      server: "fs",
      content: [{ type: "text", text: "hello from the project\n" }],
    });
    expect(result["4"]).toMatchObject({ kind: "error", code: "EUNAVAILABLE", server: "toy" });
    expect(String(result["4"]?.message)).toContain('MCP server "toy" stopped unexpectedly');
    expect(result["5"]).toMatchObject({ kind: "error", code: "EUNAVAILABLE" });
    expect(result["6"]).toMatchObject({ kind: "mcp_result" });
    expect(result["7"]).toMatchObject({ kind: "mcp_status", down: ["toy"] });
    expect(out.code).toBe(1);
  });

  it("uses toolbelt serve --mcp as a server: its tools become mcp__tb__* and work", async () => {
    const served = project(undefined, {});
    writeFileSync(path.join(served, "served.txt"), "served by toolbelt\n");
    const root = project({ tb: { command: node, args: [BIN, "serve", "--mcp", "--root", served] } });
    const out = await run(
      ["exec", "--root", root],
      jsonl([
        ["1", "tool_search", { query: "+read file" }],
        ["2", "mcp__tb__read_file", { path: "served.txt" }],
        ["3", "mcp__tb__read_file", { path: "../outside.txt" }],
      ]),
    );
    const result = Object.fromEntries(lines(out.stdout).map((l) => [l.id, l.result ?? {}]));
    expect(result["1"]?.bound).toContain("mcp__tb__read_file");
    expect(result["2"]).toMatchObject({ kind: "mcp_result", server: "tb", tool: "read_file" });
    expect(JSON.stringify(result["2"]?.content)).toContain("served by toolbelt");
    // toolbelt's own error payload comes back through MCP isError as ETOOL_FAILED naming the server.
    expect(result["3"]).toMatchObject({ kind: "error", code: "ETOOL_FAILED", server: "tb" });
    expect(String(result["3"]?.message)).toContain("EPATH_ESCAPE");
  });

  it("toolbelt doctor lists configured servers and whether each started", async () => {
    const root = project({
      fs: { command: node, args: [FS_SERVER, "."] },
      gone: { command: "/nonexistent/server" },
    });
    const out = await run(["doctor", "--root", root, "--format", "json"]);
    const report = JSON.parse(out.stdout) as Array<{
      family: string;
      name: string;
      status: string;
      detail: string;
    }>;
    const mcp = report.filter((r) => r.family === "mcp");
    expect(mcp).toEqual([
      expect.objectContaining({ name: "server fs", status: "ok", detail: expect.stringMatching(/14 tools/) }),
      expect.objectContaining({
        name: "server gone",
        status: "unavailable",
        detail: expect.stringContaining("ENOENT"),
      }),
    ]);
  });
});

describe("a session with no MCP servers", () => {
  it("never imports @toolbelt/mcp or the MCP SDK client (and does with a .mcp.json)", async () => {
    const traceFile = path.join(project(), "trace.txt");
    const none = project();
    const res = await run(["tools", "--root", none], "", { TRACE_FILE: traceFile }, ["--import", TRACE]);
    expect(res.code).toBe(0);
    const loaded = existsSync(traceFile) ? readFileSync(traceFile, "utf8") : "";
    // The family's light contrib module (its config section, read by every run) may load; the family
    // itself and the SDK client may not.
    expect(loaded).not.toMatch(
      /packages\/mcp\/dist\/index\.js|@modelcontextprotocol\/sdk\/dist\/esm\/client/,
    );

    const withServers = project({ toy: { command: node, args: [TOY] } });
    await run(["tools", "--root", withServers], "", { TRACE_FILE: traceFile }, ["--import", TRACE]);
    expect(readFileSync(traceFile, "utf8")).toMatch(/packages\/mcp\/dist\/index\.js/);
  });
});
