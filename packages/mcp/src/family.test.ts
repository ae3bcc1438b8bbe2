import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import {
  createSession,
  type Payload,
  parseConfig,
  type Session,
  type ToolbeltConfigInput,
} from "@toolbelt/core";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { doctorChecks, family } from "./family.js";

const require = createRequire(import.meta.url);
const FS_SERVER = require.resolve("@modelcontextprotocol/server-filesystem/dist/index.js");
const TOY = fileURLToPath(new URL("./__fixtures__/toy-server.mjs", import.meta.url));
const node = process.execPath;

const roots: string[] = [];
const sessions: Session[] = [];
function project(servers: Record<string, unknown>): string {
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), "tb-mcp-")));
  roots.push(dir);
  writeFileSync(path.join(dir, ".mcp.json"), JSON.stringify({ mcpServers: servers }));
  writeFileSync(path.join(dir, "notes.txt"), "hello from the project\n");
  return dir;
}
async function open(root: string, config: ToolbeltConfigInput = {}, allow: string[] = []): Promise<Session> {
  const session = await createSession({
    root,
    config: { agent: { tool_search: "on" }, ...config },
    plugins: [family],
    allow,
    // These projects are the test's own: trusted, so their .mcp.json starts servers.
    trust: { trusted: true, reason: "test project", ignored: [] },
  });
  sessions.push(session);
  return session;
}
afterEach(async () => {
  for (const s of sessions.splice(0)) await s.close();
});
afterAll(() => {
  for (const dir of roots.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const fsServer = (dir: string) => ({ command: node, args: [FS_SERVER, dir] });
const toy = (env: Record<string, string> = {}) => ({ command: node, args: [TOY], env });

describe("the reference filesystem server", () => {
  it("lists its tools as deferred names, binds them with tool_search, and calls them", async () => {
    const root = project({ fs: fsServer(".") });
    const session = await open(root);
    const { tools, deferred } = session.bind();
    expect(deferred).toContain("mcp__fs__read_text_file");
    expect(deferred).toContain("mcp__fs__write_file");
    expect(tools.map((t) => t.name)).toEqual(["tool_search", "mcp_status"]);

    const found = await session.callWithText("tool_search", { query: "select:mcp__fs__read_text_file" });
    expect(found.payload.bound).toEqual(["mcp__fs__read_text_file"]);
    // The server's schema verbatim (minus the $schema marker), including its descriptions.
    const schema = (found.payload.tools as Array<{ input_schema: Record<string, unknown> }>)[0]?.input_schema;
    expect(schema).toMatchObject({
      type: "object",
      required: ["path"],
      properties: {
        head: { type: "number", description: "If provided, returns only the first N lines of the file" },
      },
    });
    expect(schema).not.toHaveProperty("$schema");
    const bound = session.bind().tools.find((t) => t.name === "mcp__fs__read_text_file");
    expect(bound?.inputSchema).toEqual(schema);
    expect(bound?.annotations).toEqual({
      title: "Read Text File",
      readOnlyHint: true,
      destructiveHint: false,
      openWorldHint: false,
    });

    const read = await session.callWithText("mcp__fs__read_text_file", {
      path: path.join(root, "notes.txt"),
    });
    expect(read.payload).toMatchObject({ kind: "mcp_result", server: "fs", tool: "read_text_file" });
    expect(read.text).toContain("# Server: fs");
    expect(read.text).toContain("hello from the project");
  });

  it("finds tools by keywords, validates input, and asks before a tool that is not read-only", async () => {
    const root = project({ fs: fsServer(".") });
    const session = await open(root);
    const search = await session.call("tool_search", { query: "+write file" });
    expect(search.bound).toContain("mcp__fs__write_file");
    const bad = await session.call("mcp__fs__write_file", { path: 3 });
    expect(bad).toMatchObject({ kind: "error", code: "EINVAL_INPUT" });
    const denied: Payload = await session.call("mcp__fs__write_file", {
      path: path.join(root, "x.txt"),
      content: "x",
    });
    expect(denied).toMatchObject({ kind: "error", code: "EDENIED" });
    expect(String(denied.message)).toContain("--allow mcp");

    // The server's own hints are reported: create_directory is not read-only, yet not destructive.
    await session.call("tool_search", { query: "select:mcp__fs__create_directory" });
    const mkdir = session.bind().tools.find((t) => t.name === "mcp__fs__create_directory");
    expect(mkdir?.annotations).toMatchObject({
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: true,
    });

    const allowed = await open(root, {}, ["mcp"]);
    await allowed.call("tool_search", { query: "select:mcp__fs__write_file" });
    const wrote = await allowed.call("mcp__fs__write_file", {
      path: path.join(root, "x.txt"),
      content: "written",
    });
    expect(wrote.kind).toBe("mcp_result");
    expect(readFileSync(path.join(root, "x.txt"), "utf8")).toBe("written");
  });

  it("turns an isError result into an ETOOL_FAILED error naming the server", async () => {
    const root = project({ fs: fsServer(".") });
    const session = await open(root, { agent: { tool_search: "off" } });
    const outside: Payload = await session.call("mcp__fs__read_text_file", { path: "/etc/hostname" });
    expect(outside).toMatchObject({
      kind: "error",
      code: "ETOOL_FAILED",
      server: "fs",
      server_tool: "read_text_file",
    });
    expect(String(outside.message)).toMatch(/outside allowed directories/);
  });
});

describe("results, crashes and timeouts (toy server)", () => {
  it("maps text, images and structured content to payloads", async () => {
    const session = await open(project({ toy: toy() }), { agent: { tool_search: "off" } });
    const pixel = await session.callWithText("mcp__toy__pixel", {});
    expect(pixel.payload.content).toEqual([
      { type: "text", text: "one pixel" },
      expect.objectContaining({ type: "image", mime_type: "image/png", bytes: 70, data: expect.any(String) }),
    ]);
    expect(pixel.text).toContain("[image image/png, 70 bytes]");
    const weather = await session.call("mcp__toy__weather", { city: "Oslo" });
    expect(weather.structured).toEqual({ city: "Oslo", celsius: 21.5 });
    const echo = await session.call("mcp__toy__echo", { message: "hi", upper: true });
    expect(echo.content).toEqual([{ type: "text", text: "HI" }]);
  });

  it("times a silent call out after TOOLBELT_MCP_CALL_TIMEOUT_MS, naming the server", async () => {
    process.env.TOOLBELT_MCP_CALL_TIMEOUT_MS = "300";
    try {
      const session = await open(project({ toy: toy() }), { agent: { tool_search: "off" } });
      const stalled: Payload = await session.call("mcp__toy__stall", {});
      expect(stalled).toMatchObject({ kind: "error", code: "ETIMEOUT", server: "toy", server_tool: "stall" });
      expect(String(stalled.message)).toContain('MCP server "toy" did not answer stall');
    } finally {
      delete process.env.TOOLBELT_MCP_CALL_TIMEOUT_MS;
    }
  });

  it("caps text at shellOutputMaxChars and says so", async () => {
    const session = await open(project({ toy: toy() }), {
      agent: { tool_search: "off" },
      limits: { shellOutputMaxChars: 5 },
    });
    const out = await session.callWithText("mcp__toy__echo", { message: "0123456789" });
    expect(out.payload.content).toEqual([{ type: "text", text: "01234" }]);
    expect(out.text).toContain("# Truncated: 10 chars (capped at 5 chars)");
  });

  it("reports a server that crashes mid-call by name, and the session keeps working", async () => {
    const session = await open(project({ toy: toy(), other: toy() }), { agent: { tool_search: "off" } });
    const crashed: Payload = await session.call("mcp__toy__crash", {});
    expect(crashed).toMatchObject({ kind: "error", code: "EUNAVAILABLE", server: "toy" });
    expect(String(crashed.message)).toMatch(/MCP server "toy" stopped unexpectedly.*segfault in handler/);
    const again: Payload = await session.call("mcp__toy__echo", { message: "x" });
    expect(again).toMatchObject({ kind: "error", code: "EUNAVAILABLE" });
    expect(String(again.message)).toContain('MCP server "toy"');
    expect(await session.call("mcp__other__echo", { message: "still here" })).toMatchObject({
      content: [{ type: "text", text: "still here" }],
    });
    const status = await session.callWithText("mcp_status", {});
    expect(status.payload.down).toEqual(["toy"]);
    expect(status.text).toContain("# Down: toy");
    expect(status.text).toMatch(/other: ready, 9 tools/);
    // The bound mcp_status tells the model which servers are down without a call.
    const described = session.bind().tools.find((t) => t.name === "mcp_status")?.description;
    expect(described).toContain("Down now: toy.");
  });

  it("bounds the start time and reports servers that hang, exit or cannot be spawned", async () => {
    process.env.TOOLBELT_MCP_START_TIMEOUT_MS = "5000";
    try {
      const started = Date.now();
      const session = await open(
        project({
          hang: toy({ TOY_MODE: "hang" }),
          dies: toy({ TOY_MODE: "exit" }),
          missing: { command: "/nonexistent/mcp-server" },
          fine: toy(),
        }),
        { agent: { tool_search: "off" } },
      );
      expect(Date.now() - started).toBeLessThan(9000);
      const status = await session.call("mcp_status", {});
      const rows = Object.fromEntries(
        (status.servers as Array<{ server: string; state: string; error?: string }>).map((s) => [
          s.server,
          s,
        ]),
      );
      expect(rows.fine?.state).toBe("ready");
      expect(rows.hang).toMatchObject({
        state: "failed",
        error: expect.stringContaining("did not start within 5s"),
      });
      expect(rows.dies?.error).toMatch(/MCP server "dies" failed to start.*cannot open the database/);
      expect(rows.missing?.error).toMatch(/MCP server "missing" failed to start: .*ENOENT/);
      expect(status.down).toEqual(["hang", "dies", "missing"]);
      expect(session.bind().tools.find((t) => t.name === "mcp_status")?.description).toContain(
        "Down now: hang, dies, missing.",
      );
      expect(session.bind().tools.map((t) => t.name)).toContain("mcp__fine__echo");
    } finally {
      delete process.env.TOOLBELT_MCP_START_TIMEOUT_MS;
    }
  });

  it("re-registers a server's tools on notifications/tools/list_changed", async () => {
    const session = await open(project({ toy: toy() }), {}, ["mcp"]);
    const seen: string[][] = [];
    session.on("tools_bound", (e) => seen.push(e.deferred));
    await session.call("tool_search", { query: "select:mcp__toy__add_tool" });
    expect(session.bind().deferred).not.toContain("mcp__toy__late_tool");
    expect(await session.call("mcp__toy__add_tool", { name: "late_tool" })).toMatchObject({
      kind: "mcp_result",
    });
    await expect.poll(() => session.bind().deferred, { timeout: 3000 }).toContain("mcp__toy__late_tool");
    expect(seen.at(-1)).toContain("mcp__toy__late_tool");
    // Still bound after the re-list: discovery survives the new registration.
    expect(session.bind().tools.map((t) => t.name)).toContain("mcp__toy__add_tool");
  });

  it("passes the entry's env to the server and stops the server when the session closes", async () => {
    const dir = project({});
    const pidFile = path.join(dir, "pid");
    writeFileSync(
      path.join(dir, ".mcp.json"),
      JSON.stringify({ mcpServers: { toy: toy({ TOY_PID_FILE: pidFile, GREETING: "hej" }) } }),
    );
    const session = await open(dir, { agent: { tool_search: "off" } });
    expect(await session.call("mcp__toy__env", { name: "GREETING" })).toMatchObject({
      content: [{ text: "hej" }],
    });
    const pid = Number(readFileSync(pidFile, "utf8"));
    expect(() => process.kill(pid, 0)).not.toThrow();
    await session.close();
    expect(() => process.kill(pid, 0)).toThrow();
  });
});

describe("streamable HTTP servers", () => {
  it("connects with the configured headers (env-expanded) and calls tools; a refused server is named", async () => {
    const child = spawn(node, [TOY], { env: { ...process.env, TOY_MODE: "http", TOY_TOKEN: "t0ken" } });
    try {
      const port = await new Promise<string>((resolve, reject) => {
        child.stdout.on("data", (c: Buffer) => {
          const m = /listening (\d+)/.exec(c.toString());
          if (m?.[1]) resolve(m[1]);
        });
        child.on("exit", () => reject(new Error("toy http server exited")));
      });
      process.env.TB_MCP_TOY_TOKEN = "t0ken";
      const url = `http://127.0.0.1:${port}/mcp`;
      const session = await open(
        project({
          web: { type: "http", url, headers: { Authorization: `Bearer $${"{"}TB_MCP_TOY_TOKEN}` } },
          nokey: { type: "http", url },
        }),
        { agent: { tool_search: "off" } },
      );
      expect(await session.call("mcp__web__echo", { message: "over http" })).toMatchObject({
        kind: "mcp_result",
        content: [{ type: "text", text: "over http" }],
      });
      const status = await session.call("mcp_status", {});
      expect(status.down).toEqual(["nokey"]);
      expect(JSON.stringify(status.servers)).toMatch(/MCP server \\"nokey\\" failed to start/);
    } finally {
      delete process.env.TB_MCP_TOY_TOKEN;
      child.kill();
    }
  });
});

describe("sessions, forks and switch_project", () => {
  it("a fork shares the root session's servers instead of starting new ones", async () => {
    const dir = project({});
    const pidFile = path.join(dir, "pid");
    writeFileSync(
      path.join(dir, ".mcp.json"),
      JSON.stringify({ mcpServers: { toy: toy({ TOY_PID_FILE: pidFile }) } }),
    );
    const session = await open(dir, { agent: { tool_search: "off" } });
    const pid = readFileSync(pidFile, "utf8");
    const child = await session.fork();
    expect(await child.call("mcp__toy__echo", { message: "from a fork" })).toMatchObject({
      kind: "mcp_result",
    });
    expect(readFileSync(pidFile, "utf8")).toBe(pid);
  });

  it("switchRoot does not admit the new project's servers; a fresh session there does", async () => {
    const first = project({ alpha: toy() });
    const second = project({ beta: toy() });
    mkdirSync(path.join(second, "configs"));
    const session = await open(first);
    session.switchRoot(second, { config: parseConfig({ agent: { tool_search: "on" } }) });
    const names = [...session.bind().deferred, ...session.bind().tools.map((t) => t.name)];
    expect(names).toContain("mcp__alpha__echo");
    expect(names.some((n) => n.startsWith("mcp__beta__"))).toBe(false);
    expect(await session.call("mcp__beta__echo", { message: "x" })).toMatchObject({ code: "EUNKNOWN_TOOL" });

    const fresh = await open(second);
    expect(fresh.bind().deferred).toContain("mcp__beta__echo");
    expect(fresh.bind().deferred.some((n) => n.startsWith("mcp__alpha__"))).toBe(false);
  });

  it("config mcpServers start too, and tools.mcp.enabled=false starts nothing", async () => {
    const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), "tb-mcp-")));
    roots.push(dir);
    const session = await open(dir, { mcpServers: { cfg: toy() } });
    expect(session.bind().deferred).toContain("mcp__cfg__echo");
    const off = await open(dir, { mcpServers: { cfg: toy() }, tools: { mcp: { enabled: false } } });
    expect(off.bind().deferred).toEqual([]);
  });
});

describe("nesting", () => {
  it("a toolbelt three MCP hops deep starts no servers and says why", async () => {
    process.env.TOOLBELT_MCP_DEPTH = "3";
    try {
      const session = await open(project({ toy: toy() }), { agent: { tool_search: "off" } });
      expect(session.bind().tools.map((t) => t.name)).toEqual(["mcp_status"]);
      const status = await session.call("mcp_status", {});
      expect(status.servers).toEqual([
        expect.objectContaining({
          server: "toy",
          state: "skipped",
          error: expect.stringContaining("3 MCP hops deep"),
        }),
      ]);
    } finally {
      delete process.env.TOOLBELT_MCP_DEPTH;
    }
  });
});

describe("doctor", () => {
  it("lists each configured server and whether it started", async () => {
    const root = project({
      fs: fsServer("."),
      broken: { command: "node", args: 5 },
      dies: toy({ TOY_MODE: "exit" }),
    });
    const checks = await doctorChecks({
      root,
      config: parseConfig({}),
      trust: { trusted: true, reason: "test project", ignored: [] },
    });
    const byName = Object.fromEntries(checks.map((c) => [c.name, c]));
    expect(byName["server fs"]).toMatchObject({
      status: "ok",
      detail: expect.stringMatching(/started in \d+ ms, 14 tools/),
    });
    expect(byName["server broken"]).toMatchObject({
      status: "unavailable",
      detail: expect.stringContaining("args"),
    });
    expect(byName["server dies"]).toMatchObject({
      status: "unavailable",
      detail: expect.stringContaining("failed to start"),
    });
  });
});
