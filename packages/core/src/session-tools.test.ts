import { mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import type { ToolbeltConfigInput } from "./config.js";
import type { ToolbeltEvent } from "./events.js";
import { definePlugin } from "./plugin.js";
import { type ClientInfo, createSession, type Session } from "./session.js";
import { defineTool, type ToolRequirements } from "./tool.js";

// The session rules the session tools (ui, projects) rely on: requirement gating, switchRoot, forks,
// user-message hooks and skills.
const tool = (name: string, requires?: ToolRequirements, deferrable = false) =>
  defineTool({
    name,
    family: "steer",
    access: "read",
    description: `${name} tool`,
    input: z.object({}),
    deferrable,
    ...(requires ? { requires } : {}),
    execute: (_i, ctx) => ({ kind: "where", root: ctx.root, cwd: ctx.cwd }),
  });

const plugin = definePlugin({
  name: "steer",
  tools: [
    tool("anywhere"),
    tool("needs_ui", { capability: "generative_ui" }),
    tool("root_only", { rootAgentOnly: true }),
    tool("act_only", { actModeOnly: true }),
    tool("auto_only", { autoWorkspaceOnly: true }),
    tool("later", undefined, true),
  ],
  skills: [{ name: "from-plugin", description: "a plugin skill" }],
});

let base: string;
let a: string;
let b: string;
const open: Session[] = [];
beforeEach(() => {
  base = realpathSync(mkdtempSync(path.join(os.tmpdir(), "tb-steer-")));
  a = path.join(base, "a");
  b = path.join(base, "b");
  mkdirSync(a);
  mkdirSync(b);
});
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
  rmSync(base, { recursive: true, force: true });
});

async function session(
  options: { config?: ToolbeltConfigInput; client?: ClientInfo; mode?: "act" | "plan" } = {},
): Promise<Session> {
  const s = await createSession({ root: a, plugins: [plugin], ...options });
  open.push(s);
  return s;
}

const names = (s: Session) => s.bind().tools.map((t) => t.name);

describe("requirements", () => {
  it("binds a tool only where its capability, agent, mode and workspace requirements hold", async () => {
    const plain = await session();
    expect(names(plain).sort()).toEqual(["act_only", "anywhere", "later", "root_only"]);
    const rich = await session({
      client: { capabilities: ["generative_ui"] },
      config: { agent: { workspace_mode: "auto" } },
    });
    expect(names(rich)).toEqual(expect.arrayContaining(["needs_ui", "auto_only"]));
    const plan = await session({ mode: "plan" });
    expect(names(plan)).not.toContain("act_only");
    const planByConfig = await session({ config: { agent: { mode: "plan" } } });
    expect(names(planByConfig)).not.toContain("act_only");
    const child = await plain.fork();
    expect(names(child)).not.toContain("root_only");
    expect(names(child)).toContain("act_only");
    expect(names(await plain.fork({ mode: "plan" }))).not.toContain("act_only");
  });
});

describe("switchRoot", () => {
  it("moves root and cwd, emits project_switched, and keeps exactly the tools held", async () => {
    const s = await session({ config: { agent: { tool_search: "on" } } });
    const events: ToolbeltEvent[] = [];
    s.on("project_switched", (e) => events.push(e));
    await s.call("tool_search", { query: "select:later" });
    const before = names(s).sort();
    s.switchRoot(b, { key: "b" });
    expect([s.root, s.cwd]).toEqual([b, b]);
    expect(events).toMatchObject([{ key: "b", from: a, to: b }]);
    expect(names(s).sort()).toEqual(before);
    expect(await s.call("anywhere", {})).toEqual({ kind: "where", root: b, cwd: b });
    s.registerTools("mcp:b", [tool("brought_by_b")]);
    expect(names(s)).not.toContain("brought_by_b");
  });

  it("forks made after a switch start in the new root; earlier forks keep theirs", async () => {
    const s = await session();
    const early = await s.fork();
    s.switchRoot(b);
    const late = await s.fork();
    expect(await early.call("anywhere", {})).toMatchObject({ root: a });
    expect(await late.call("anywhere", {})).toMatchObject({ root: b, cwd: b });
  });
});

describe("hooks and skills", () => {
  it("userMessage reaches every registered hook", async () => {
    const s = await session();
    const seen: string[] = [];
    s.hooks.userMessage.add((text) => seen.push(`1:${text}`));
    s.hooks.userMessage.add((text) => seen.push(`2:${text}`));
    s.userMessage("hello");
    expect(seen).toEqual(["1:hello", "2:hello"]);
  });

  it("skills from plugins and addSkills accumulate, a later one of the same name replacing the earlier", async () => {
    const s = await session();
    s.addSkills([{ name: "deploy", description: "v1" }]);
    s.switchRoot(b);
    s.addSkills([
      { name: "deploy", description: "v2" },
      { name: "lint", description: "lint" },
    ]);
    expect(s.skills.map((k) => `${k.name}:${k.description}`).sort()).toEqual([
      "deploy:v2",
      "from-plugin:a plugin skill",
      "lint:lint",
    ]);
    expect((await s.fork()).skills).toHaveLength(3);
  });
});
