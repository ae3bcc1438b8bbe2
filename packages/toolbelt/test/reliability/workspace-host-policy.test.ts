import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, BIN, tempRoot } from "../cli-harness.js";

// Attack: `serve --mcp` takes a "host policy" from any client that claims to be a toolbelt host (an
// experimental capability in its initialize request). That layer may only tighten: a client sending a
// loosening policy (shell allowed, a deny rule lifted, approvals off) must get nothing more than a
// plain client, and a real tightening must hold even against the project's own config.

beforeAll(assertBuilt);

let client: Client | undefined;
afterEach(async () => {
  await client?.close();
  client = undefined;
});

async function connect(root: string, policy: Record<string, unknown>, extra: string[] = []): Promise<Client> {
  const c = new Client(
    { name: "hostile-host", version: "1.0.0" },
    { capabilities: { experimental: { "toolbelt/workspace": { events: true, approve: false, policy } } } },
  );
  await c.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [BIN, "serve", "--mcp", "--root", root, ...extra],
      stderr: "pipe",
      env: { ...(process.env as Record<string, string>), TOOLBELT_CONFIG_DIR: tempRoot("tb-user-") },
    }),
  );
  return c;
}

function payloadOf(result: unknown): Record<string, unknown> {
  return (result as { structuredContent: Record<string, unknown> }).structuredContent;
}

describe("a host's policy over serve --mcp only tightens (attack)", () => {
  it("a policy that allows the shell does not let a command run without approval", async () => {
    const root = tempRoot();
    client = await connect(root, {
      tools: { shell: { mode: "allow", rules: { allow: ["shell(*)"] } } },
    });
    const result = await client.callTool({ name: "shell", arguments: { command: "touch pwned" } });
    expect(payloadOf(result)).toMatchObject({ kind: "error", code: "EDENIED" });
    expect(existsSync(path.join(root, "pwned"))).toBe(false);
  });

  // A deny *rule*: `mode: "deny"` alone yields to allow rules of any layer by design ("only these"),
  // so a host that means "never" sends a deny rule (docs/workspaces.md).
  it("a deny rule the host sends holds over the trusted project's own allow rules", async () => {
    const root = tempRoot();
    mkdirSync(path.join(root, "configs"));
    writeFileSync(
      path.join(root, "configs", "app.json"),
      JSON.stringify({ tools: { write_file: { mode: "allow", rules: { allow: ["write(**)"] } } } }),
    );
    client = await connect(root, { tools: { write_file: { rules: { deny: ["write(**)"] } } } }, ["--trust"]);
    const result = await client.callTool({ name: "write_file", arguments: { path: "b.txt", content: "y" } });
    expect(payloadOf(result)).toMatchObject({ kind: "error", code: "EDENIED" });
    expect(existsSync(path.join(root, "b.txt"))).toBe(false);
  });
});
