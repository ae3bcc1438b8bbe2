import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createSession, type Payload, type Session, type ToolbeltEvent } from "@toolbelt/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { currentTodos, family } from "./index.js";

let root: string;
const open: Session[] = [];
beforeEach(() => {
  root = mkdtempSync(path.join(os.tmpdir(), "tb-todos-"));
});
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
  rmSync(root, { recursive: true, force: true });
});

async function session(mode: "act" | "plan" = "act"): Promise<Session> {
  const s = await createSession({ root, plugins: [family], mode });
  open.push(s);
  return s;
}

describe("update_todos", () => {
  it("replaces the whole list each call, emits one todos event and says the turn continues", async () => {
    const s = await session();
    const events: ToolbeltEvent[] = [];
    s.on("todos", (e) => events.push(e));
    await s.call("update_todos", {
      todos: [
        { content: "read the code", status: "in_progress" },
        { content: "write the fix", status: "pending" },
      ],
    });
    const { payload, text } = await s.callWithText("update_todos", {
      todos: [
        { id: "a", content: "read the code", status: "completed" },
        { id: "b", content: "write the fix", status: "in_progress" },
        { content: "run the tests", status: "pending" },
      ],
    });
    expect(payload).toMatchObject({ kind: "todos", counts: { completed: 1, in_progress: 1, pending: 1 } });
    expect(events).toHaveLength(2);
    expect(events[1]).toMatchObject({
      type: "todos",
      todos: [
        { id: "a", content: "read the code", status: "completed" },
        { id: "b", content: "write the fix", status: "in_progress" },
        { content: "run the tests", status: "pending" },
      ],
    });
    expect(currentTodos(s).map((t) => t.content)).toEqual([
      "read the code",
      "write the fix",
      "run the tests",
    ]);
    expect(text).toContain("[x] read the code\n[>] write the fix\n[ ] run the tests");
    expect(text).toContain("does not end your turn");
  });

  it("refuses two in_progress items, or none while work is pending, with a clear EINVAL_INPUT", async () => {
    const s = await session();
    const events: ToolbeltEvent[] = [];
    s.on("todos", (e) => events.push(e));
    const two: Payload = await s.call("update_todos", {
      todos: [
        { content: "a", status: "in_progress" },
        { content: "b", status: "in_progress" },
      ],
    });
    expect(two).toMatchObject({ kind: "error", code: "EINVAL_INPUT" });
    expect(String(two.message)).toContain("exactly one item may be in_progress");
    const none: Payload = await s.call("update_todos", { todos: [{ content: "a", status: "pending" }] });
    expect(none).toMatchObject({ kind: "error", code: "EINVAL_INPUT" });
    expect(String(none.message)).toContain("no item is in_progress");
    expect(events).toHaveLength(0);
    expect(currentTodos(s)).toEqual([]);
    // A finished list has nothing left to be in progress.
    const finished = await s.call("update_todos", { todos: [{ content: "a", status: "completed" }] });
    expect(finished).toMatchObject({ kind: "todos", counts: { completed: 1 } });
  });

  it("is bound for the root agent in act mode only", async () => {
    const act = await session("act");
    expect(act.bind().tools.map((t) => t.name)).toContain("update_todos");
    const plan = await session("plan");
    expect(plan.bind().tools.map((t) => t.name)).not.toContain("update_todos");
    expect(await plan.call("update_todos", { todos: [] })).toMatchObject({ code: "EUNKNOWN_TOOL" });
    const child = await act.fork();
    expect(child.bind().tools.map((t) => t.name)).not.toContain("update_todos");
  });
});
