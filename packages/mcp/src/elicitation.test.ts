// A project's MCP server asking the user for input (elicitation/create), through the SDK session:
// the client's `elicit` callback, the tools.mcp.elicitation policy, and the checks on what goes back.
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import {
  type ClientInfo,
  createSession,
  type Session,
  type ToolbeltConfigInput,
  type ToolbeltEvent,
} from "@toolbelt/core";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { ElicitationRequest, ElicitationResult } from "./contrib.js";
import { checkContent, checkSchema } from "./elicitation.js";
import { family } from "./family.js";

const TOY = fileURLToPath(new URL("./__fixtures__/toy-server.mjs", import.meta.url));
const roots: string[] = [];
const sessions: Session[] = [];
afterEach(async () => {
  for (const s of sessions.splice(0)) await s.close();
});
afterAll(() => {
  for (const dir of roots.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function open(config: ToolbeltConfigInput = {}, client?: ClientInfo): Promise<Session> {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), "tb-elicit-")));
  roots.push(root);
  writeFileSync(
    path.join(root, ".mcp.json"),
    JSON.stringify({ mcpServers: { toy: { command: process.execPath, args: [TOY] } } }),
  );
  const session = await createSession({
    root,
    config: { agent: { tool_search: "off" }, ...config },
    plugins: [family],
    ...(client ? { client } : {}),
    trust: { trusted: true, reason: "test project", ignored: [] },
  });
  sessions.push(session);
  return session;
}

/** What the toy server got back from its elicitation/create, from its reply text. */
function answerOf(payload: object): unknown {
  const text = ((payload as { content?: Array<{ text?: string }> }).content ?? [])[0]?.text ?? "";
  return JSON.parse(text.replace(/^order: /, ""));
}

describe("elicitation through the SDK client callback", () => {
  it("hands the server's form to client.elicit and the checked answer back to the server", async () => {
    const asked: ElicitationRequest[] = [];
    const session = await open(
      {},
      {
        elicit: async (request) => {
          asked.push(request);
          return { action: "accept", content: { item: "coffee", cups: 3, email: "a@b.io" } };
        },
      },
    );
    const events: ToolbeltEvent[] = [];
    session.on("*", (e) => events.push(e));
    const out = await session.callWithText("mcp__toy__order", {});
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject({
      server: "toy",
      message: "What would you like?",
      requested_schema: { type: "object", required: ["item", "cups"] },
    });
    expect(answerOf(out.payload)).toEqual({
      action: "accept",
      content: { item: "coffee", cups: 3, email: "a@b.io" },
    });
    expect(out.payload.elicitations).toEqual([
      { message: "What would you like?", action: "accept", by: "client" },
    ]);
    expect(out.text).toContain('[the server asked: "What would you like?"; the client accepted]');
    // Events say what was asked and how it ended, never the values typed.
    const requested = events.find((e) => e.type === "elicitation_requested");
    expect(requested).toMatchObject({ server: "toy", fields: ["item", "cups", "note", "email", "sugar"] });
    expect(events.find((e) => e.type === "elicitation_resolved")).toMatchObject({
      action: "accept",
      by: "client",
    });
    expect(JSON.stringify(events.filter((e) => e.type.startsWith("elicitation")))).not.toContain("a@b.io");
  });

  it("declines an answer that does not fit the form instead of passing it on, and says why", async () => {
    const session = await open(
      {},
      { elicit: async () => ({ action: "accept", content: { item: "tea", cups: 20 } }) },
    );
    const out = await session.callWithText("mcp__toy__order", {});
    expect(answerOf(out.payload)).toEqual({ action: "decline" });
    expect(out.payload.elicitations).toEqual([
      expect.objectContaining({
        action: "decline",
        reason: expect.stringContaining('"cups" must be at most 9'),
      }),
    ]);
  });

  it("passes the client's decline and cancel on, and a failing client cancels", async () => {
    const answers: Array<() => Promise<ElicitationResult>> = [
      async () => ({ action: "decline" }),
      async () => ({ action: "cancel" }),
      async () => {
        throw new Error("the window closed");
      },
    ];
    const session = await open({}, { elicit: () => (answers.shift() as () => Promise<ElicitationResult>)() });
    expect(answerOf(await session.call("mcp__toy__order", {}))).toEqual({ action: "decline" });
    expect(answerOf(await session.call("mcp__toy__order", {}))).toEqual({ action: "cancel" });
    const failed = await session.call("mcp__toy__order", {});
    expect(answerOf(failed)).toEqual({ action: "cancel" });
    expect(failed).toMatchObject({
      elicitations: [{ reason: expect.stringContaining("the window closed") }],
    });
  });

  it("does not time a call out while the user is still answering", async () => {
    process.env.TOOLBELT_MCP_CALL_TIMEOUT_MS = "300";
    try {
      const session = await open(
        {},
        {
          // Time passing is what is tested: the answer takes longer than the call timeout.
          elicit: () =>
            new Promise((resolve) =>
              setTimeout(() => resolve({ action: "accept", content: { item: "tea", cups: 1 } }), 1200),
            ),
        },
      );
      expect(answerOf(await session.call("mcp__toy__order", {}))).toMatchObject({ action: "accept" });
    } finally {
      delete process.env.TOOLBELT_MCP_CALL_TIMEOUT_MS;
    }
  });
});

describe("tools.mcp.elicitation", () => {
  it('"accept_defaults" answers with the defaults the form names (SEP-1034), with nobody to ask', async () => {
    const session = await open({ tools: { mcp: { elicitation: "accept_defaults" } } });
    const out = await session.call("mcp__toy__order", {});
    expect(answerOf(out)).toEqual({ action: "accept", content: { item: "tea", cups: 2, sugar: false } });
    expect(out.elicitations).toEqual([{ message: "What would you like?", action: "accept", by: "policy" }]);
  });

  it('"decline", or nobody to ask, does not offer elicitation: the server is told the client cannot ask', async () => {
    let asked = 0;
    const declining = await open(
      { tools: { mcp: { elicitation: "decline" } } },
      {
        elicit: async () => {
          asked++;
          return { action: "accept", content: {} };
        },
      },
    );
    expect(await declining.call("mcp__toy__order", {})).toMatchObject({
      kind: "error",
      message: "no elicitation: the client cannot ask",
    });
    expect(asked).toBe(0);
    const headless = await open();
    expect(await headless.call("mcp__toy__order", {})).toMatchObject({
      kind: "error",
      message: "no elicitation: the client cannot ask",
    });
  });

  it("is refused from an untrusted project unless it declines more", async () => {
    const { parseConfig } = await import("@toolbelt/core");
    const { mcpConfig } = await import("./contrib.js");
    expect(() =>
      parseConfig({ tools: { mcp: { elicitation: "sometimes" } } }, "config", [mcpConfig]),
    ).toThrow(/tools\.mcp\.elicitation/);
  });
});

describe("checking forms and answers", () => {
  const schema = {
    type: "object" as const,
    properties: {
      n: { type: "integer" as const, minimum: 1 },
      when: { type: "string" as const, format: "date" as const },
      tags: { type: "array" as const, items: { enum: ["a", "b"] }, maxItems: 1 },
    },
    required: ["n"],
  };
  it("refuses missing, unknown, mistyped and out-of-bounds values", () => {
    expect(checkContent(schema, { n: 2, when: "2025-01-31", tags: ["a"] })).toBeUndefined();
    expect(checkContent(schema, {})).toBe('"n" is required');
    expect(checkContent(schema, { n: 1, extra: 1 })).toBe('"extra" is not a field of the form');
    expect(checkContent(schema, { n: 1.5 })).toBe('"n" must be an integer');
    expect(checkContent(schema, { n: 0 })).toBe('"n" must be at least 1');
    expect(checkContent(schema, { n: 1, when: "tomorrow" })).toMatch(/is not a date/);
    expect(checkContent(schema, { n: 1, tags: ["a", "b"] })).toMatch(/at most 1/);
    expect(checkContent(schema, { n: 1, tags: ["c"] })).toMatch(/may only hold a, b/);
  });
  it("refuses forms MCP does not allow", () => {
    expect(checkSchema({ type: "object", properties: { x: { type: "object" } } })).toMatch(/not a primitive/);
    expect(checkSchema({ type: "object", properties: {}, required: ["x"] })).toMatch(/not in the form/);
    expect(checkSchema({ type: "object", properties: { n: { type: "integer", default: "two" } } })).toMatch(
      /default/,
    );
  });
});
