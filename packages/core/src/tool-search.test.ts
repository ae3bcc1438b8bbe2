import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import type { ToolbeltConfigInput } from "./config.js";
import type { ToolbeltEvent } from "./events.js";
import { definePlugin } from "./plugin.js";
import { createSession, type Session } from "./session.js";
import { defineTool } from "./tool.js";
import { discoveredFromHistory, searchTools } from "./tool-search.js";

const echo = (name: string, description: string, input: z.ZodType, deferrable = true) =>
  defineTool({
    name,
    family: "demo",
    access: "read",
    deferrable,
    description,
    input,
    execute: () => ({ kind: "ok", tool: name }),
  });

const plugin = definePlugin({
  name: "demo",
  tools: [
    echo("read_notes", "Read the notes of a project", z.object({ path: z.string() }), false),
    echo(
      "jira_create_issue",
      "Create an issue in the tracker",
      z.object({ summary: z.string(), assignee: z.string() }),
    ),
    echo("jira_search", "Search issues in the tracker with JQL", z.object({ jql: z.string() })),
    echo("slack_post", "Post a message to a channel", z.object({ channel: z.string(), text: z.string() })),
    echo(
      "weather_lookup",
      "Current conditions for a city",
      z.object({ city: z.string(), units: z.string().optional() }),
    ),
  ],
});

let root: string;
const sessions: Session[] = [];
beforeEach(() => {
  root = mkdtempSync(path.join(os.tmpdir(), "tb-search-"));
});
afterEach(async () => {
  for (const s of sessions.splice(0)) await s.close();
  rmSync(root, { recursive: true, force: true });
});

async function open(config: ToolbeltConfigInput, plugins = [plugin]): Promise<Session> {
  const session = await createSession({ root, config, plugins });
  sessions.push(session);
  return session;
}

const names = (session: Session) => session.bind().tools.map((t) => t.name);

describe("deferral in bind()", () => {
  it("leaves deferrable tools out of bind() and lists them by name when tool search is on", async () => {
    const session = await open({ agent: { tool_search: "on" } });
    const { tools, deferred } = session.bind();
    expect(tools.map((t) => t.name).sort()).toEqual(["read_notes", "tool_search"]);
    expect(deferred.sort()).toEqual(["jira_create_issue", "jira_search", "slack_post", "weather_lookup"]);
  });

  it("binds every schema and no tool_search when tool search is off", async () => {
    for (const config of [{ agent: { tool_search: "off" as const } }, { agent: { tool_search: false } }]) {
      const session = await open(config);
      expect(session.bind().deferred).toEqual([]);
      expect(names(session)).not.toContain("tool_search");
      expect(names(session)).toContain("slack_post");
    }
  });

  it("a session with nothing deferrable pays nothing: no tool_search, nothing deferred", async () => {
    const plain = definePlugin({
      name: "plain",
      tools: [echo("only", "a plain tool", z.object({}), false)],
    });
    const session = await open({ agent: { tool_search: "on" } }, [plain]);
    expect(session.bind()).toMatchObject({ deferred: [] });
    expect(names(session)).toEqual(["only"]);
  });

  it("is auto by default: small deferrable sets stay bound, a large one goes behind tool_search", async () => {
    const small = await open({});
    expect(small.bind().deferred).toEqual([]);
    expect(names(small)).not.toContain("tool_search");
    const tight = await open({ agent: { context_window_tokens: 500 } });
    expect(tight.bind().deferred).toHaveLength(4);
    expect(names(tight)).toContain("tool_search");
  });

  it("auto defers only when the deferrable schemas exceed the share of the context window", async () => {
    // The four deferrable schemas take a few hundred characters (~100 tokens).
    const small = await open({ agent: { tool_search: "auto", context_window_tokens: 200_000 } });
    expect(small.bind().deferred).toEqual([]);
    expect(names(small)).not.toContain("tool_search");
    const tight = await open({ agent: { tool_search: "auto", context_window_tokens: 500 } });
    expect(tight.bind().deferred).toHaveLength(4);
    expect(names(tight)).toContain("tool_search");
    // The threshold is the share: 100% of a 500-token window holds them again.
    const generous = await open({
      agent: { tool_search: "auto", context_window_tokens: 500, tool_search_threshold: 1 },
    });
    expect(generous.bind().deferred).toEqual([]);
  });

  it("calling a deferred tool before discovery names tool_search as the way to bind it", async () => {
    const session = await open({ agent: { tool_search: "on" } });
    const result = await session.call("slack_post", { channel: "c", text: "t" });
    expect(result).toMatchObject({ kind: "error", code: "EUNKNOWN_TOOL" });
    expect(String(result.message)).toContain('tool_search with "select:slack_post"');
  });
});

describe("tool_search", () => {
  it("select:a,b binds exact names for the following calls and returns full schemas", async () => {
    const session = await open({ agent: { tool_search: "on" } });
    const events: ToolbeltEvent[] = [];
    session.on("tools_bound", (e) => events.push(e));
    const { payload, text } = await session.callWithText("tool_search", {
      query: "select:slack_post,weather_lookup,nope",
    });
    expect(payload).toMatchObject({
      kind: "tool_search_results",
      bound: ["slack_post", "weather_lookup"],
      not_found: ["nope"],
      remaining_deferred: 2,
    });
    const tools = payload.tools as Array<{ name: string; input_schema: { properties: object } }>;
    expect(Object.keys(tools[0]?.input_schema.properties ?? {})).toEqual(["channel", "text"]);
    expect(text).toContain("# Bound: slack_post, weather_lookup");
    expect(names(session)).toEqual(expect.arrayContaining(["slack_post", "weather_lookup"]));
    expect(session.bind().deferred.sort()).toEqual(["jira_create_issue", "jira_search"]);
    expect(await session.call("slack_post", { channel: "c", text: "t" })).toEqual({
      kind: "ok",
      tool: "slack_post",
    });
    expect(events.at(-1)).toMatchObject({
      type: "tools_bound",
      reason: expect.stringContaining("slack_post"),
    });
  });

  it("keywords match names, descriptions and argument names; +terms are required", async () => {
    const session = await open({ agent: { tool_search: "on" } });
    const deferred = session.bindings().filter((b) => b.deferred);
    const found = (q: string) => searchTools(deferred, q).map((b) => b.name);
    expect(found("jira")[0]).toMatch(/^jira_/);
    expect(found("jira")).toHaveLength(2);
    expect(found("tracker")).toEqual(expect.arrayContaining(["jira_create_issue", "jira_search"]));
    expect(found("assignee")).toEqual(["jira_create_issue"]); // an argument name
    expect(found("city conditions")[0]).toBe("weather_lookup");
    expect(found("+jql tracker")).toEqual(["jira_search"]);
    expect(found("+tracker +channel")).toEqual([]);
    expect(found("spreadsheet")).toEqual([]);
  });

  it("asking again for a tool already bound returns its schema instead of nothing", async () => {
    const session = await open({ agent: { tool_search: "on" } });
    await session.call("tool_search", { query: "select:jira_search" });
    const again = await session.call("tool_search", { query: "select:jira_search" });
    expect(again).toMatchObject({ bound: ["jira_search"] });
    expect(again.not_found).toBeUndefined();
  });

  it("never widens scope: tools outside allowed_tools or a disabled family are not searchable", async () => {
    const session = await open({
      agent: { tool_search: "on", allowed_tools: ["read_notes", "jira_search", "slack_post"] },
      tools: { slack_post: { enabled: false } },
    });
    // tool_search itself is exempt from allowed_tools.
    expect(names(session).sort()).toEqual(["read_notes", "tool_search"]);
    expect(session.bind().deferred).toEqual(["jira_search"]);
    const result = await session.call("tool_search", { query: "select:jira_create_issue,slack_post" });
    expect(result).toMatchObject({ bound: [], not_found: ["jira_create_issue", "slack_post"] });
    expect(await session.call("jira_create_issue", { summary: "s", assignee: "a" })).toMatchObject({
      code: "EUNKNOWN_TOOL",
    });
    expect(await session.call("tool_search", { query: "tracker" })).toMatchObject({ bound: ["jira_search"] });
  });

  it("a sub-agent forked after discovery holds the discovered tools, not the others' schemas", async () => {
    const session = await open({ agent: { tool_search: "on" } });
    await session.call("tool_search", { query: "select:weather_lookup" });
    const child = await session.fork();
    expect(child.bind().tools.map((t) => t.name)).toContain("weather_lookup");
    expect(child.bind().deferred).not.toContain("weather_lookup");
  });
});

describe("discoveredFromHistory", () => {
  it("rebuilds discovery from structured results and from the text form, surviving compaction", async () => {
    const session = await open({ agent: { tool_search: "on" } });
    const first = await session.callWithText("tool_search", { query: "select:slack_post" });
    const second = await session.call("tool_search", { query: "+jql" });
    const messages = [
      { role: "user", content: "post the weather" },
      { role: "tool", content: [{ type: "text", text: first.text }] },
      { role: "tool", content: second },
      { role: "tool", content: "# Kind: read\nnot a search # Bound: weather_lookup" },
    ];
    expect(discoveredFromHistory(messages).sort()).toEqual(["jira_search", "slack_post"]);

    // A fresh session (after compaction or a restart) binds the same tools again.
    const fresh = await open({ agent: { tool_search: "on" } });
    fresh.discover(discoveredFromHistory(messages));
    expect(fresh.bind().deferred.sort()).toEqual(["jira_create_issue", "weather_lookup"]);
    expect(await fresh.call("slack_post", { channel: "c", text: "t" })).toMatchObject({ kind: "ok" });
  });

  it("discover() never binds a tool the session was not granted", async () => {
    const session = await open({ agent: { tool_search: "on", allowed_tools: ["jira_search"] } });
    expect(session.discover(["slack_post", "jira_search", "rm_rf"])).toEqual(["jira_search"]);
    expect(names(session).sort()).toEqual(["jira_search", "tool_search"]);
  });
});
