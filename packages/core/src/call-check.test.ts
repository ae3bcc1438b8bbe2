import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import type { ToolbeltEvent } from "./events.js";
import { definePlugin } from "./plugin.js";
import { createSession, type SessionOptions } from "./session.js";
import { defineTool } from "./tool.js";

// A front-end with an approval flow of its own (the AI SDK's tool approvals) asks the session what
// the policy would do with a call (checkCall), has a person decide, then runs the call with that
// approval (CallOptions.approval) so toolbelt does not ask a second time.

const roots: string[] = [];
function tempRoot(): string {
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), "tb-check-")));
  roots.push(dir);
  return dir;
}
afterEach(() => {
  for (const d of roots.splice(0)) rmSync(d, { recursive: true, force: true });
});

const ran: string[] = [];

const runIt = defineTool({
  name: "run_it",
  family: "runner",
  access: "execute",
  description: "Pretends to run a command.",
  input: z.object({ command: z.string().min(1) }),
  execute: (input) => {
    ran.push(input.command);
    return { kind: "ran", command: input.command };
  },
});

const look = defineTool({
  name: "look",
  family: "files",
  access: "read",
  description: "Reads nothing.",
  input: z.object({ path: z.string() }),
  paths: (i) => [i.path],
  execute: (input) => ({ kind: "looked", path: input.path }),
});

/** Declares its first file, writes them all (so the rest are writes the call did not declare). */
const put = defineTool({
  name: "put",
  family: "plug",
  access: "write",
  description: "Writes each file given.",
  input: z.object({ files: z.array(z.object({ path: z.string(), content: z.string() })) }),
  paths: (i) => i.files.slice(0, 1).map((f) => f.path),
  async execute(input, ctx) {
    for (const f of input.files) await ctx.writeFile(ctx.resolve(f.path).abs, f.content);
    return { kind: "put", n: input.files.length };
  },
});

const confirm = defineTool({
  name: "confirm",
  family: "asker",
  access: "execute",
  description: "Asks its own question while it runs.",
  input: z.object({}),
  execute: async (_i, ctx) => ({ kind: "answer", yes: await ctx.approve({ summary: "and this too?" }) }),
});

const plugin = definePlugin({ name: "check", tools: [runIt, look, put, confirm] });

async function session(options: Partial<SessionOptions> = {}) {
  ran.length = 0;
  const s = await createSession({ root: tempRoot(), plugins: [plugin], ...options });
  const events: ToolbeltEvent[] = [];
  s.on("*", (e) => events.push(e));
  return { s, events };
}

describe("Session.checkCall", () => {
  it("answers allow, ask or deny as the call would, running nothing and asking nobody", async () => {
    let asked = 0;
    const { s, events } = await session({
      client: {
        approve: async () => {
          asked++;
          return true;
        },
      },
      config: { tools: { plug: { mode: "deny" } } },
    });
    expect(await s.checkCall("look", { path: "a.txt" })).toEqual({
      decision: "allow",
      summary: "look: a.txt",
    });
    expect(await s.checkCall("run_it", { command: "make\u001b[2J" })).toEqual({
      decision: "ask",
      // The summary is what an approver reads: control characters made visible.
      summary: expect.stringMatching(/^run_it \[.*\]: make\\x1B\[2J$/),
    });
    expect(await s.checkCall("put", { files: [{ path: "a.txt", content: "x" }] })).toMatchObject({
      decision: "deny",
      code: "EDENIED",
      summary: expect.stringContaining("put"),
    });
    expect(ran).toEqual([]);
    expect(asked).toBe(0);
    expect(events).toEqual([]);
  });

  it("denies what the call would refuse before running: unknown tool, bad input, a path outside the root", async () => {
    const { s } = await session();
    expect(await s.checkCall("nope", {})).toMatchObject({ decision: "deny", code: "EUNKNOWN_TOOL" });
    // Deliberately bad input: command must be a non-empty string.
    expect(await s.checkCall("run_it", { command: "" })).toMatchObject({
      decision: "deny",
      code: "EINVAL_INPUT",
    });
    expect(await s.checkCall("look", { path: "../../etc/passwd" })).toMatchObject({
      decision: "deny",
      code: "EPATH_ESCAPE",
    });
  });

  it("asks for a write to a protected path, naming it", async () => {
    const { s } = await session();
    expect(await s.checkCall("put", { files: [{ path: "configs/app.json", content: "{}" }] })).toEqual({
      decision: "ask",
      summary: expect.stringContaining("protected: configs/app.json"),
      protected_paths: ["configs/app.json"],
    });
  });

  it("follows --allow: an allowed family no longer asks", async () => {
    const { s } = await session({ allow: ["runner"] });
    expect(await s.checkCall("run_it", { command: "make" })).toMatchObject({ decision: "allow" });
  });
});

describe("CallOptions.approval", () => {
  it("answers the policy's ask without asking again, and says who approved", async () => {
    let asked = 0;
    const { s, events } = await session({
      client: {
        approve: async () => {
          asked++;
          return false;
        },
      },
    });
    const out = await s.call("run_it", { command: "make" }, { approval: { by: "ai-sdk" } });
    expect(out).toEqual({ kind: "ran", command: "make" });
    expect(asked).toBe(0);
    const approvals = events.filter((e) => e.type.startsWith("approval"));
    expect(approvals).toMatchObject([
      { type: "approval_requested", tool: "run_it", summary: "run_it: make" },
      { type: "approval_resolved", approved: true, by: "ai-sdk" },
    ]);
    // Without it the same call is asked about (and here refused by the approver).
    expect(await s.call("run_it", { command: "make" })).toMatchObject({ code: "EDENIED" });
    expect(asked).toBe(1);
    expect(ran).toEqual(["make"]);
  });

  it("approves the declared protected write, never an undeclared one", async () => {
    const { s } = await session();
    const root = s.root;
    const ok = await s.call(
      "put",
      { files: [{ path: ".mcp.json", content: "{}" }] },
      { approval: { by: "ai-sdk" } },
    );
    expect(ok).toEqual({ kind: "put", n: 1 });
    expect(readFileSync(path.join(root, ".mcp.json"), "utf8")).toBe("{}");
    const sneaky = await s.call(
      "put",
      {
        files: [
          { path: "notes.txt", content: "fine" },
          { path: ".git/hooks/pre-commit", content: "#!/bin/sh\n" },
        ],
      },
      { approval: { by: "ai-sdk" } },
    );
    expect(sneaky).toMatchObject({ code: "EDENIED", path: ".git/hooks/pre-commit" });
    expect(existsSync(path.join(root, ".git"))).toBe(false);
  });

  it("leaves a deny a refusal", async () => {
    const { s } = await session({ config: { tools: { runner: { mode: "deny" } } } });
    const out = await s.call("run_it", { command: "make" }, { approval: { by: "ai-sdk" } });
    expect(out).toMatchObject({ kind: "error", code: "EDENIED" });
    expect(ran).toEqual([]);
  });

  it("does not answer a question the tool asks itself while it runs", async () => {
    const { s } = await session();
    expect(await s.call("confirm", {}, { approval: { by: "ai-sdk" } })).toEqual({
      kind: "answer",
      yes: false,
    });
  });
});

describe("Session.renderResult", () => {
  it("gives the text callWithText gave, from the payload alone", async () => {
    const { s } = await session({ allow: ["runner"] });
    const { payload, text } = await s.callWithText("run_it", { command: "make" });
    expect(s.renderResult("run_it", payload)).toBe(text);
    const failed = await s.callWithText("look", { path: "../outside" });
    expect(s.renderResult("look", failed.payload)).toBe(failed.text);
    expect(failed.text).toMatch(/^# Error: EPATH_ESCAPE/);
  });
});

describe("Session.removeFile", () => {
  it("removes through the write path: recorded for undo, never a directory or a protected path unasked", async () => {
    const { s } = await session();
    const root = s.root;
    writeFileSync(path.join(root, "gone.txt"), "bye\n");
    mkdirSync(path.join(root, "dir"));
    expect(await s.removeFile(path.join(root, "gone.txt"))).toBe(true);
    expect(existsSync(path.join(root, "gone.txt"))).toBe(false);
    expect(await s.removeFile(path.join(root, "gone.txt"))).toBe(false);
    await expect(s.removeFile(path.join(root, "dir"))).rejects.toThrow();
    expect(existsSync(path.join(root, "dir"))).toBe(true);
    writeFileSync(path.join(root, ".mcp.json"), "{}");
    await expect(s.removeFile(path.join(root, ".mcp.json"))).rejects.toMatchObject({ code: "EDENIED" });
    expect(existsSync(path.join(root, ".mcp.json"))).toBe(true);
    await expect(s.removeFile(path.join(root, "../elsewhere.txt"))).rejects.toMatchObject({
      code: "EPATH_ESCAPE",
    });
    // The removal is a checkpoint: restoring it brings the file back.
    const removal = (await s.checkpoints.list()).find((c) => c.files.some((f) => f.path === "gone.txt"));
    expect(removal).toBeDefined();
    await s.checkpoints.restore(removal?.id ?? "");
    expect(readFileSync(path.join(root, "gone.txt"), "utf8")).toBe("bye\n");
  });
});
