import { execFileSync, spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import fs from "node:fs/promises";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { connectClient } from "@toolbelt/bridge";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lacks } from "../../../test-support/capability.js";
import { assertBuilt } from "./cli-harness.js";
import { BIN, DENO, makeRoot, REPO } from "./serve-fixture.js";

const noDeno = lacks("deno", !existsSync(DENO) && `no deno at ${DENO} (the root devDependency "deno")`);
// A missing or stale build fails these tests (see assertBuilt), it does not skip them.
beforeAll(assertBuilt);

describe.skipIf(noDeno)("the built bin under Deno (serve --mcp, serve --http, run, exec)", () => {
  let root: string;
  beforeAll(async () => {
    root = await makeRoot();
  });
  afterAll(async () => {
    await fs.rm(root, { recursive: true, force: true });
  });

  it("serves MCP: list, call, list_changed after tool_search", async () => {
    const client = new Client({ name: "deno-test", version: "1.0.0" });
    await client.connect(
      new StdioClientTransport({
        command: DENO,
        args: ["run", "-A", BIN, "serve", "--mcp", "--trust", "--root", root],
        cwd: REPO,
        stderr: "pipe",
      }),
    );
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toContain("tool_search");
      expect(names).not.toContain("echo_deferred");
      const waited = await client.callTool({ name: "slow_wait", arguments: { ms: 1 } });
      expect(waited.structuredContent).toEqual({ kind: "waited", ms: 1 });
      const changed = new Promise<void>((resolve) =>
        client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()),
      );
      await client.callTool({ name: "tool_search", arguments: { query: "select:echo_deferred" } });
      await changed;
      expect((await client.listTools()).tools.map((t) => t.name)).toContain("echo_deferred");
      const echo = await client.callTool({ name: "echo_deferred", arguments: { text: "deno" } });
      expect(echo.structuredContent).toEqual({ kind: "echo", text: "deno" });
    } finally {
      await client.close();
    }
  });

  it("serves HTTP: token, calls and a client-brought tool", async () => {
    const child = spawn(
      DENO,
      ["run", "-A", BIN, "serve", "--http", "--trust", "--port", "0", "--root", root, "--token", "deno"],
      {
        cwd: REPO,
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = "";
        const timer = setTimeout(() => reject(new Error(`deno serve --http did not start: ${out}`)), 30_000);
        child.stdout?.on("data", (d: Buffer) => {
          out += d.toString();
          const m = /listening on (\S+)/.exec(out);
          if (m?.[1]) {
            clearTimeout(timer);
            resolve(m[1]);
          }
        });
      });
      const headers = { authorization: "Bearer deno", "content-type": "application/json" };
      expect((await fetch(`${url}/api/sessions`)).status).toBe(401);
      const [session] = (await (await fetch(`${url}/api/sessions`, { headers })).json()) as Array<{
        id: string;
      }>;
      const call = async (tool: string, input: unknown) =>
        (await (
          await fetch(`${url}/api/sessions/${session?.id}/calls`, {
            method: "POST",
            headers,
            body: JSON.stringify({ tool, input }),
          })
        ).json()) as { result: Record<string, unknown> };
      expect((await call("slow_wait", { ms: 1 })).result).toEqual({ kind: "waited", ms: 1 });
      const client = connectClient({
        url,
        token: "deno",
        tools: [
          {
            name: "deno_echo",
            description: "echo on the client",
            input_schema: { type: "object", properties: { s: { type: "string" } } },
            deferrable: false,
            execute: (input) => ({ kind: "echoed", s: input.s }),
          },
        ],
      });
      await client.ready;
      expect((await call("deno_echo", { s: "hi" })).result).toEqual({ kind: "echoed", s: "hi" });
      await client.close();
    } finally {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    }
  });

  it("runs `run` and `exec`", () => {
    const run = execFileSync(
      DENO,
      ["run", "-A", BIN, "run", "slow_wait", "--trust", "--root", root, "--input", '{"ms":1}'],
      { cwd: REPO, encoding: "utf8" },
    );
    expect(JSON.parse(run)).toEqual({ kind: "waited", ms: 1 });
    const exec = spawnSync(DENO, ["run", "-A", BIN, "exec", "--trust", "--root", root], {
      cwd: REPO,
      encoding: "utf8",
      input: `${JSON.stringify({ id: "1", tool: "slow_wait", input: { ms: 1 } })}\n${JSON.stringify({ id: "2", tool: "nope", input: {} })}\n`,
    });
    const lines = exec.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { id: string; result: { kind: string; code?: string } });
    expect(lines.map((l) => [l.id, l.result.kind])).toEqual([
      ["1", "waited"],
      ["2", "error"],
    ]);
    expect(lines[1]?.result.code).toBe("EUNKNOWN_TOOL");
    expect(exec.status).toBe(1);
  });
});
