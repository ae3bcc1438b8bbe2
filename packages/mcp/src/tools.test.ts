import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { McpConnection } from "./connection.js";
import { MCP_LIMITS, planTools } from "./tools.js";

/** A connection that was never started, holding the tool list a server would have sent. */
function listed(name: string, tools: Array<Partial<Tool> & { name: string }>, total = tools.length) {
  const connection = new McpConnection({
    name,
    transport: "stdio",
    command: "unused",
    args: [],
    env: {},
    cwd: process.cwd(),
    source: "test",
  });
  connection.tools = tools.map((t) => ({ inputSchema: { type: "object" }, ...t }) as Tool);
  connection.listed = total;
  return connection;
}

const names = (plan: ReturnType<typeof planTools>, c: McpConnection) => plan.get(c)?.tools.map((t) => t.name);

describe("planTools", () => {
  it("resolves a cross-server collision the same way whatever order the servers come in", () => {
    const a = listed("a", [{ name: "b__c" }]);
    const ab = listed("a__b", [{ name: "c" }]);
    const one = planTools([a, ab]);
    const other = planTools([ab, a]);
    expect(names(one, a)).toEqual(["mcp__a__b__c"]);
    const renamed = names(one, ab)?.[0];
    expect(renamed).toMatch(/^mcp__a__b__c_[0-9a-f]{8}$/);
    expect(names(other, a)).toEqual(["mcp__a__b__c"]);
    expect(names(other, ab)).toEqual([renamed]);
    expect(one.get(ab)?.notes).toEqual([
      `c is bound as ${renamed}: mcp__a__b__c is taken by server "a"'s tool "b__c"`,
    ]);
    expect(one.get(a)?.notes).toEqual([]);
  });

  it("keeps names unique when sanitising makes two tools of one server equal", () => {
    const s = listed("s", [{ name: "get issue" }, { name: "get.issue" }, { name: "get_issue" }]);
    const got = names(planTools([s]), s) ?? [];
    expect(new Set(got).size).toBe(3);
    // "get issue" sorts first, so it keeps the plain name.
    expect(got[0]).toBe("mcp__s__get_issue");
  });

  it("registers at most tools_per_server tools and says how many were listed", () => {
    const cap = MCP_LIMITS.tools_per_server;
    const many = listed(
      "many",
      Array.from({ length: cap + 10 }, (_, i) => ({ name: `t${i}` })),
      5000,
    );
    const plan = planTools([many]).get(many);
    expect(plan?.tools).toHaveLength(cap);
    expect(plan?.listed).toBe(5000);
    expect(plan?.notes[0]).toContain(`only the first ${cap} are registered`);
  });

  it("refuses empty and over-long names and oversized schemas, and cuts long descriptions", () => {
    const wide: Record<string, unknown> = {};
    for (let i = 0; i < 5000; i++) wide[`p${i}`] = { type: "string", description: "x".repeat(20) };
    const s = listed("s", [
      { name: "" },
      { name: "y".repeat(MCP_LIMITS.name_chars + 1) },
      { name: "wide", inputSchema: { type: "object", properties: wide } as Tool["inputSchema"] },
      { name: "wordy", description: "w".repeat(MCP_LIMITS.description_chars * 3) },
    ]);
    const plan = planTools([s]).get(s);
    expect(plan?.tools.map((t) => t.name)).toEqual(["mcp__s__wordy"]);
    expect(plan?.tools[0]?.description.length).toBeLessThan(MCP_LIMITS.description_chars + 100);
    const notes = plan?.notes.join("\n") ?? "";
    expect(notes).toContain("empty name");
    expect(notes).toContain(`over ${MCP_LIMITS.name_chars} characters`);
    expect(notes).toContain(`wide refused: its input schema is`);
    expect(notes).toContain("description cut");
  });
});
