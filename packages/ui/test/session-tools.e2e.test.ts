import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt } from "../../toolbelt/test/cli-harness.js";

// End to end through the built CLI: `toolbelt exec --events` writes results and events as JSONL.
const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
const bin = path.join(repoRoot, "packages/toolbelt/dist/bin.js");
const plugin = fileURLToPath(new URL("./fixtures/deferred-plugin.mjs", import.meta.url));

type Line = { id?: string; tool?: string; result?: Record<string, unknown>; event?: Record<string, unknown> };

let dir: string;
beforeAll(() => {
  // A missing or stale build fails (it is no capability to skip for).
  assertBuilt();
  dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), "tb-e2e-session-")));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function exec(
  root: string,
  calls: unknown[],
  config?: unknown,
): Promise<{ lines: Line[]; code: number | null }> {
  const args = [bin, "exec", "--events", "--root", root];
  if (config) {
    const file = path.join(dir, `config-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(file, JSON.stringify(config));
    args.push("--config", file);
  }
  const child = spawn(process.execPath, args, {
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...process.env, TOOLBELT_HOME: path.join(dir, "home") },
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (c: Buffer) => {
    out += c.toString();
  });
  child.stderr.on("data", (c: Buffer) => {
    err += c.toString();
  });
  child.stdin.end(`${calls.map((c) => JSON.stringify(c)).join("\n")}\n`);
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  if (!out.trim()) throw new Error(`no output (exit ${code}): ${err}`);
  return {
    lines: out
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Line),
    code,
  };
}

const results = (lines: Line[]) => lines.filter((l) => l.result);
const events = (lines: Line[], type: string) =>
  lines.filter((l) => l.event?.type === type).map((l) => l.event);

describe("session tools through toolbelt exec --events", () => {
  it("update_todos emits a todos event; a headless run binds neither ask_user_question nor present_ui", async () => {
    const root = path.join(dir, "todos");
    mkdirSync(root);
    const { lines } = await exec(root, [
      {
        id: "1",
        tool: "update_todos",
        input: {
          todos: [
            { content: "a", status: "in_progress" },
            { content: "b", status: "pending" },
          ],
        },
      },
      {
        id: "2",
        tool: "update_todos",
        input: {
          todos: [
            { content: "a", status: "in_progress" },
            { content: "b", status: "in_progress" },
          ],
        },
      },
      {
        id: "3",
        tool: "ask_user_question",
        input: { questions: [{ question: "Go?", options: ["yes", "no"] }] },
      },
      { id: "4", tool: "present_ui", input: { tree: { component: "Paragraph", text: "hi" } } },
    ]);
    const [todos, twoActive, ask, ui] = results(lines);
    expect(todos?.result).toMatchObject({ kind: "todos", counts: { in_progress: 1, pending: 1 } });
    expect(twoActive?.result).toMatchObject({ kind: "error", code: "EINVAL_INPUT" });
    expect(ask?.result).toMatchObject({ kind: "error", code: "EUNKNOWN_TOOL" });
    expect(ui?.result).toMatchObject({ kind: "error", code: "EUNKNOWN_TOOL" });
    expect(events(lines, "todos")).toEqual([
      expect.objectContaining({
        todos: [
          { content: "a", status: "in_progress" },
          { content: "b", status: "pending" },
        ],
      }),
    ]);
    expect(events(lines, "question")).toEqual([]);
  });

  it("tool_search binds a deferred plugin tool for the following calls", async () => {
    const root = path.join(dir, "search");
    mkdirSync(root);
    const { lines } = await exec(
      root,
      [
        { id: "1", tool: "tracker_create_issue", input: { summary: "x" } },
        { id: "2", tool: "tool_search", input: { query: "+tracker create", max_results: 1 } },
        { id: "3", tool: "tracker_create_issue", input: { summary: "x" } },
      ],
      { agent: { tool_search: "on" }, plugins: [plugin] },
    );
    const [before, search, after] = results(lines);
    expect(before?.result).toMatchObject({
      code: "EUNKNOWN_TOOL",
      message: expect.stringContaining("tool_search"),
    });
    expect(search?.result).toMatchObject({ kind: "tool_search_results", bound: ["tracker_create_issue"] });
    expect(after?.result).toEqual({ kind: "issue_created", summary: "x" });
    const bound = events(lines, "tools_bound");
    expect(bound.at(-1)?.bound).toContain("tracker_create_issue");
    expect(bound.at(-1)?.deferred).toContain("tracker_search");
    expect(bound.at(-1)?.deferred).not.toContain("tracker_create_issue");
  });

  it("list_projects and switch_project in auto workspace mode emit project_switched", async () => {
    const root = path.join(dir, "main-project");
    const other = path.join(dir, "other-project");
    mkdirSync(root);
    mkdirSync(other);
    writeFileSync(path.join(other, "AGENTS.md"), "Use tabs.\n");
    const config = {
      agent: { workspace_mode: "auto" },
      projects: [{ key: "other", path: other }, { repository: "acme/remote-only" }],
    };
    const { lines } = await exec(
      root,
      [
        { id: "1", tool: "list_projects", input: {} },
        { id: "2", tool: "switch_project", input: { key: "acme/remote-only" } },
        { id: "3", tool: "switch_project", input: { key: "other" } },
      ],
      config,
    );
    const [list, refused, switched] = results(lines);
    expect(list?.result?.projects).toEqual([
      { key: "other", name: "other-project", kind: "configured", path: other, available: true },
      {
        key: "acme/remote-only",
        name: "remote-only",
        kind: "repository",
        available: false,
        repository: "acme/remote-only",
      },
    ]);
    expect(refused?.result).toMatchObject({ code: "EUNAVAILABLE" });
    expect(switched?.result).toMatchObject({
      kind: "project_switched",
      path: other,
      instructions: { file: "AGENTS.md", content: "Use tabs.\n" },
    });
    expect(events(lines, "project_switched")).toEqual([
      expect.objectContaining({ key: "other", from: root, to: other }),
    ]);

    const fixed = await exec(root, [{ id: "1", tool: "list_projects", input: {} }]);
    expect(results(fixed.lines)[0]?.result).toMatchObject({ code: "EUNKNOWN_TOOL" });
  });
});
