import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { fingerprintOf } from "./ledger.js";
import { definePlugin, PLUGIN_API_VERSION } from "./plugin.js";
import { defaultProcessPool, ProcessPool } from "./process-pool.js";
import { createSession, type SessionOptions } from "./session.js";
import { defineTool } from "./tool.js";

const roots: string[] = [];
function tempRoot(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), "tb-session-"));
  roots.push(dir);
  return dir;
}
afterEach(() => {
  for (const d of roots.splice(0)) rmSync(d, { recursive: true, force: true });
});

const echo = defineTool({
  name: "echo",
  family: "test",
  access: "read",
  description: "Echoes its input.",
  input: z.object({
    text: z.string(),
    times: z.number().int().min(1).optional(),
    nested: z.object({ n: z.number() }).optional(),
  }),
  execute: (input) => ({ kind: "echo", text: input.text.repeat(input.times ?? 1) }),
  profiles: {
    mewbo: {
      name: "echo_tool",
      input: z.object({ message: z.string() }),
      toInput: (i) => ({ text: i.message }),
    },
    mouaif: false,
  },
});

const boom = defineTool({
  name: "boom",
  family: "test",
  access: "read",
  description: "Throws.",
  input: z.object({}),
  execute: () => {
    throw new Error("unexpected");
  },
});

const run = defineTool({
  name: "run_it",
  family: "runner",
  access: "execute",
  description: "Pretends to run something.",
  input: z.object({ command: z.string() }),
  execute: (input) => ({ kind: "ran", command: input.command }),
});

const gated = [
  defineTool({
    name: "needs_ui",
    family: "ui",
    access: "interact",
    description: "x",
    input: z.object({}),
    requires: { capability: "generative_ui" },
    execute: () => ({ kind: "ok" }),
  }),
  defineTool({
    name: "root_only",
    family: "ui",
    access: "interact",
    description: "x",
    input: z.object({}),
    requires: { rootAgentOnly: true },
    execute: () => ({ kind: "ok" }),
  }),
  defineTool({
    name: "act_only",
    family: "ui",
    access: "interact",
    description: "x",
    input: z.object({}),
    requires: { actModeOnly: true },
    execute: () => ({ kind: "ok" }),
  }),
];

const editors = (["edit_file", "search_replace_block", "structured_patch"] as const).map((backend) =>
  defineTool({
    name: backend,
    family: "edit",
    access: "write",
    description: backend,
    input: z.object({}),
    editBackend: backend,
    execute: () => ({ kind: backend }),
  }),
);

// The edit family contributes the real choice (by model name, pinned by agent.edit_tool); this one
// shows the session asks whichever plugin contributes one.
const testPlugin = definePlugin({
  name: "test",
  tools: [echo, boom, run, ...gated, ...editors],
  contributes: {
    chooseEditBackend: ({ model }) =>
      model?.startsWith("claude")
        ? "search_replace_block"
        : model?.startsWith("gpt")
          ? "structured_patch"
          : "edit_file",
  },
});

async function session(options: Partial<SessionOptions> = {}) {
  return createSession({ root: tempRoot(), plugins: [testPlugin], ...options });
}

describe("session.call", () => {
  it("validates input and names the failing field with its JSON path", async () => {
    const s = await session();
    const result = await s.call("echo", { text: "x", nested: { n: "one" } });
    expect(result).toMatchObject({ kind: "error", code: "EINVAL_INPUT", field: "nested.n" });
    expect(String(result.message)).toContain("nested.n");
  });

  it("refuses input nested past the depth bound with EINVAL_INPUT naming it, cycles included", async () => {
    const s = await session();
    let deep: unknown = "leaf";
    for (let i = 0; i < 100_000; i++) deep = { d: deep };
    const result = await s.call("echo", { text: "x", nested: deep });
    expect(result).toMatchObject({ kind: "error", code: "EINVAL_INPUT" });
    expect(String(result.message)).toContain("nested more than 128 levels");
    const cyclic: Record<string, unknown> = { text: "x" };
    cyclic.self = cyclic;
    expect(await s.call("echo", cyclic)).toMatchObject({ kind: "error", code: "EINVAL_INPUT" });
    expect(await s.call("echo", { text: "x", nested: { n: 1 } })).toMatchObject({ kind: "echo" });
  });

  it("answers an unknown tool with EUNKNOWN_TOOL listing what exists", async () => {
    const s = await session();
    const result = await s.call("nope", {});
    expect(result).toMatchObject({ kind: "error", code: "EUNKNOWN_TOOL" });
    expect(String(result.message)).toContain("echo");
  });

  it("turns a crash inside a tool into an EINTERNAL payload", async () => {
    const s = await session();
    expect(await s.call("boom", {})).toMatchObject({
      kind: "error",
      code: "EINTERNAL",
      message: "unexpected",
    });
  });

  it("survives hostile inputs of every JSON type", async () => {
    const s = await session();
    for (const input of [
      null,
      undefined,
      42,
      "str",
      [],
      [1, 2],
      { text: null },
      JSON.parse(`{"__proto__": {"text": "x"}}`),
    ]) {
      const result = await s.call("echo", input);
      expect(result.kind).toBe("error");
    }
  });

  it("emits tool_call and tool_result events with the model-facing text", async () => {
    const s = await session();
    const seen: string[] = [];
    s.on("*", (e) => seen.push(e.type));
    const { payload, text } = await s.callWithText("echo", { text: "hi", times: 2 });
    expect(payload).toEqual({ kind: "echo", text: "hihi" });
    expect(text).toContain("hihi");
    expect(seen).toEqual(["tool_call", "tool_result"]);
  });
});

describe("binding", () => {
  it("binds profile variants under their own name and schema", async () => {
    const s = await session({ profile: "mewbo" });
    const names = s.bind().tools.map((t) => t.name);
    expect(names).toContain("echo_tool");
    expect(names).not.toContain("echo");
    expect(await s.call("echo_tool", { message: "m" })).toEqual({ kind: "echo", text: "m" });
    const mouaif = await session({ profile: "mouaif" });
    expect(mouaif.bind().tools.map((t) => t.name)).not.toContain("echo");
  });

  it("narrows to agent.allowed_tools", async () => {
    const s = await session({ config: { agent: { allowed_tools: ["echo"] } } });
    expect(s.bind().tools.map((t) => t.name)).toEqual(["echo"]);
    expect((await s.call("boom", {})).code).toBe("EUNKNOWN_TOOL");
  });

  it("leaves out tools whose requirements the session does not meet", async () => {
    const plain = await session({ mode: "plan" });
    const names = plain.bind().tools.map((t) => t.name);
    expect(names).toContain("root_only");
    expect(names).not.toContain("needs_ui");
    expect(names).not.toContain("act_only");
    const ui = await session({ client: { capabilities: ["generative_ui"] } });
    expect(ui.bind().tools.map((t) => t.name)).toEqual(expect.arrayContaining(["needs_ui", "act_only"]));
    const child = await ui.fork();
    expect(child.bind().tools.map((t) => t.name)).not.toContain("root_only");
  });

  it("binds exactly one edit backend, the one a contributed chooser picks", async () => {
    const edits = (s: Awaited<ReturnType<typeof session>>) =>
      s
        .bind()
        .tools.filter((t) => editors.some((e) => e.name === t.name))
        .map((t) => t.name);
    expect(edits(await session())).toEqual(["edit_file"]);
    expect(edits(await session({ model: "claude-sonnet-4-5" }))).toEqual(["search_replace_block"]);
    expect(edits(await session({ model: "gpt-5-codex" }))).toEqual(["structured_patch"]);
    // No plugin contributing a choice: the first backend.
    const plain = await createSession({
      root: tempRoot(),
      model: "claude-x",
      plugins: [{ ...testPlugin, contributes: {} }],
    });
    expect(edits(plain)).toEqual(["edit_file"]);
  });

  it("disables a family from config", async () => {
    const s = await session({ config: { tools: { runner: { enabled: false } } } });
    expect(s.bind().tools.map((t) => t.name)).not.toContain("run_it");
  });
});

describe("plugins", () => {
  it("refuses a plugin that speaks another API version", async () => {
    await expect(
      createSession({
        root: tempRoot(),
        plugins: [{ name: "future", apiVersion: PLUGIN_API_VERSION + 1, tools: [] }],
      }),
    ).rejects.toThrow(/speaks plugin API 2/);
  });

  it("runs plugin tools exactly like built-ins (validation, events, permissions)", async () => {
    const s = await session();
    expect((await s.call("run_it", { command: "ls" })).code).toBe("EDENIED");
  });
});

describe("permissions", () => {
  it("denies ask with no approver and says how to allow it", async () => {
    const s = await session();
    const result = await s.call("run_it", { command: "ls" });
    expect(result.code).toBe("EDENIED");
    expect(String(result.message)).toContain("--allow runner");
  });

  it("asks the client's approver and emits approval events", async () => {
    const prompts: string[] = [];
    const s = await session({
      client: {
        approve: async (p) => {
          prompts.push(p.summary);
          return p.summary.includes("ok");
        },
      },
    });
    const events: string[] = [];
    s.on("*", (e) => events.push(e.type));
    expect((await s.call("run_it", { command: "ok" })).kind).toBe("ran");
    expect((await s.call("run_it", { command: "rm -rf /" })).code).toBe("EDENIED");
    expect(prompts).toEqual(["run_it: ok", "run_it: rm -rf /"]);
    expect(events.filter((e) => e.startsWith("approval"))).toEqual([
      "approval_requested",
      "approval_resolved",
      "approval_requested",
      "approval_resolved",
    ]);
  });

  it("allows with --allow", async () => {
    const s = await session({ allow: ["runner"] });
    expect((await s.call("run_it", { command: "ls" })).kind).toBe("ran");
  });
});

describe("step", () => {
  it("runs reads concurrently and writes alone, returning results in order", async () => {
    const log: string[] = [];
    // r1 and r2 finish only once both have started: run one after the other, the step never ends.
    let bothStarted = () => {};
    const reading = new Promise<void>((resolve) => {
      bothStarted = resolve;
    });
    const slow = (name: string, access: "read" | "write") =>
      defineTool({
        name,
        family: "t",
        access,
        description: name,
        input: z.object({ id: z.string() }),
        execute: async (input) => {
          log.push(`start ${input.id}`);
          if (log.includes("start r1") && log.includes("start r2")) bothStarted();
          // The others yield a turn, so anything run beside them would start meanwhile.
          if (input.id === "r1" || input.id === "r2") await reading;
          else await new Promise((r) => setImmediate(r));
          log.push(`end ${input.id}`);
          return { kind: "done", id: input.id };
        },
      });
    const s = await createSession({
      root: tempRoot(),
      plugins: [definePlugin({ name: "t", tools: [slow("r", "read"), slow("w", "write")] })],
    });
    const results = await s.step([
      { tool: "r", input: { id: "r1" } },
      { tool: "r", input: { id: "r2" } },
      { tool: "w", input: { id: "w1" } },
      { tool: "w", input: { id: "w2" } },
      { tool: "r", input: { id: "r3" } },
    ]);
    expect(results.map((r) => r.id)).toEqual(["r1", "r2", "w1", "w2", "r3"]);
    expect(log.slice(0, 2)).toEqual(["start r1", "start r2"]);
    const w1 = log.indexOf("start w1");
    expect(log.indexOf("end r1")).toBeLessThan(w1);
    expect(log.indexOf("end r2")).toBeLessThan(w1);
    expect(log[w1 + 1]).toBe("end w1");
    expect(log[log.indexOf("start w2") + 1]).toBe("end w2");
  });
});

describe("writes and forks", () => {
  it("writes atomically, keeps the mode, invalidates the ledger and runs afterWrite hooks", async () => {
    const s = await session();
    const file = path.join(s.root, "a.txt");
    writeFileSync(file, "old", { mode: 0o640 });
    const content = readFileSync(file);
    s.ledger.record(file, fingerprintOf(content, statSync(file)), {
      start: 1,
      end: Number.POSITIVE_INFINITY,
    });
    s.hooks.afterWrite.add((info) => `hook saw ${info.rel}`);
    const result = await s.writeFile(file, "new");
    expect(result).toMatchObject({ created: false, bytes: 3, notes: ["hook saw a.txt"] });
    expect(readFileSync(file, "utf8")).toBe("new");
    expect(statSync(file).mode & 0o777).toBe(0o640);
    expect(s.ledger.status(file)).toBe("unread");
    await expect(s.writeFile("/tmp/elsewhere.txt", "x")).rejects.toMatchObject({ code: "EPATH_ESCAPE" });
  });

  it("gives a sub-agent its own ledger, the parent's cwd and at most the parent's tools", async () => {
    const s = await session({ config: { agent: { allowed_tools: ["echo", "boom"] } } });
    const child = await s.fork();
    expect(child.isRoot).toBe(false);
    expect(child.cwd).toBe(s.cwd);
    expect(child.ledger).not.toBe(s.ledger);
    expect(
      child
        .bind()
        .tools.map((t) => t.name)
        .sort(),
    ).toEqual(["boom", "echo"]);
  });

  it("closes forks with the parent and refuses calls after close", async () => {
    const s = await session();
    const child = await s.fork();
    await s.close();
    expect(child.closed).toBe(true);
    expect((await s.call("echo", { text: "x" })).code).toBe("EUNAVAILABLE");
  });
});

describe("inputs from strict provider schemas", () => {
  it("treats null in an optional field as not given (OpenAI strict sends null)", async () => {
    const s = await session();
    expect(await s.call("echo", { text: "x", times: null, nested: null })).toEqual({
      kind: "echo",
      text: "x",
    });
    expect((await s.call("echo", { text: null })).code).toBe("EINVAL_INPUT");
  });
});

describe("cancellation and Node argument errors", () => {
  it("a call whose signal is already aborted sees it aborted", async () => {
    let seen: boolean | undefined;
    const probe = defineTool({
      name: "probe",
      family: "t",
      access: "read",
      description: "reports its signal",
      input: z.object({}),
      execute: (_input, ctx) => {
        seen = ctx.signal.aborted;
        return { kind: "probe" };
      },
    });
    const s = await createSession({
      root: tempRoot(),
      plugins: [definePlugin({ name: "t", tools: [probe] })],
    });
    const controller = new AbortController();
    controller.abort();
    await s.call("probe", {}, { signal: controller.signal });
    expect(seen).toBe(true);
  });

  it("maps Node's argument checks (NUL bytes) to EINVAL_INPUT, not EINTERNAL", async () => {
    const { spawnSync } = await import("node:child_process");
    const nul = defineTool({
      name: "nul",
      family: "t",
      access: "read",
      description: "passes its input to a Node API",
      input: z.object({ arg: z.string() }),
      execute: (input) => {
        spawnSync("true", [input.arg]);
        return { kind: "ran" };
      },
    });
    const s = await createSession({ root: tempRoot(), plugins: [definePlugin({ name: "t", tools: [nul] })] });
    expect((await s.call("nul", { arg: "a\u0000b" })).code).toBe("EINVAL_INPUT");
  });
});

describe("rendering the model-facing text", () => {
  it("happens only when someone reads it: callWithText, or a tool_result listener", async () => {
    let renders = 0;
    const big = defineTool({
      name: "big",
      family: "plug",
      access: "read",
      description: "Returns a payload with a costly text form.",
      input: z.strictObject({}),
      execute: async () => ({ kind: "big", n: 1 }),
      render: () => {
        renders++;
        return "text";
      },
    });
    const root = mkdtempSync(path.join(os.tmpdir(), "tb-render-"));
    const s = await createSession({ root, plugins: [definePlugin({ name: "plug", tools: [big] })] });
    expect(await s.call("big", {})).toEqual({ kind: "big", n: 1 });
    expect(renders).toBe(0);
    expect((await s.callWithText("big", {})).text).toBe("text");
    expect(renders).toBe(1);
    const texts: Array<string | undefined> = [];
    s.events.on("tool_result", (e) => texts.push(e.text));
    await s.call("big", {});
    expect(renders).toBe(2);
    expect(texts).toEqual(["text"]);
    await s.close();
    rmSync(root, { recursive: true, force: true });
  });
});

describe("the process pool", () => {
  // A tool that holds a process slot until the test lets it go.
  let releaseHeld: () => void = () => {};
  const held = new Promise<void>((resolve) => {
    releaseHeld = resolve;
  });
  const spawnish = defineTool({
    name: "spawnish",
    family: "test",
    access: "read",
    description: "Takes a process slot and holds it while `hold` is set.",
    input: z.object({ hold: z.boolean() }),
    async execute(input, ctx) {
      const slot = await ctx.processSlot();
      if (input.hold) await held;
      slot.release();
      return { kind: "spawned" };
    },
  });
  const poolPlugin = definePlugin({ name: "pool-test", tools: [spawnish] });

  it("serves the sessions given one pool, states a wait as queued_ms, and puts a fork in its parent's queue", async () => {
    const pool = new ProcessPool({ max: 1 });
    const root = tempRoot();
    const a = await createSession({ root, plugins: [poolPlugin], processPool: pool });
    const b = await createSession({ root, plugins: [poolPlugin], processPool: pool });
    expect(b.processPool).toBe(pool);
    const holding = a.callWithText("spawnish", { hold: true });
    await expect.poll(() => pool.usage().running).toBe(1);
    const fork = await a.fork();
    const waiting = [
      b.callWithText("spawnish", { hold: false }),
      fork.callWithText("spawnish", { hold: false }),
    ];
    await expect.poll(() => pool.usage()).toMatchObject({ queued: 2, sessions_waiting: 2 });
    releaseHeld();
    const [first, ...rest] = await Promise.all([holding, ...waiting]);
    expect(first?.payload).not.toHaveProperty("queued_ms");
    for (const outcome of rest) {
      expect(outcome.payload.kind).toBe("spawned");
      expect(outcome.payload.queued_ms).toBeGreaterThan(0);
      expect(outcome.text).toMatch(/\[queued\] this call waited/);
    }
    expect(pool.usage()).toMatchObject({ running: 0, queued: 0 });
  });

  it("uses the process's default pool when given none", async () => {
    const s = await createSession({ root: tempRoot(), plugins: [poolPlugin] });
    expect(s.processPool).toBe(defaultProcessPool());
  });
});
