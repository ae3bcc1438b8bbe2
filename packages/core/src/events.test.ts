import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineBuiltinEvents } from "./contributions.js";
import {
  EVENT_TYPES,
  EventStream,
  eventJsonSchema,
  eventSchema,
  eventTypes,
  type ToolbeltEvent,
} from "./events.js";

// Stand-ins for the families' contributions (core's tests may not import families).
const fake = defineBuiltinEvents("fake", {
  todos: {
    todos: z.array(
      z.object({ content: z.string(), status: z.enum(["pending", "in_progress", "completed"]) }),
    ),
  },
  shell_output: { shell_id: z.string(), data: z.string() },
});

describe("events", () => {
  it("sequences, stamps and validates every event", () => {
    const stream = new EventStream("s1", [fake]);
    const a = stream.emit({ type: "todos", todos: [{ content: "x", status: "in_progress" }] });
    const b = stream.emit({ type: "shell_output", shell_id: "sh1", data: "hi" });
    expect(a).toMatchObject({ v: 1, seq: 0, session: "s1", type: "todos" });
    expect(b.seq).toBe(1);
    expect(Number.isNaN(Date.parse(a.at))).toBe(false);
    expect(() =>
      stream.emit({ type: "todos", todos: [{ content: "x", status: "nope" }] } as never),
    ).toThrow();
  });

  it("delivers to on() listeners by type and to async iterators", async () => {
    const stream = new EventStream("s2", [fake]);
    const seen: string[] = [];
    const off = stream.on("shell_output", (e) => seen.push(e.data));
    const collected: ToolbeltEvent[] = [];
    const done = (async () => {
      for await (const e of stream) collected.push(e);
    })();
    await Promise.resolve();
    stream.emit({ type: "shell_output", shell_id: "a", data: "one" });
    stream.emit({ type: "tools_bound", bound: [], deferred: [], reason: "test" });
    off();
    stream.emit({ type: "shell_output", shell_id: "a", data: "two" });
    stream.close();
    await done;
    expect(seen).toEqual(["one"]);
    expect(collected.map((e) => e.type)).toEqual(["shell_output", "tools_bound", "shell_output"]);
  });

  it("a throwing listener does not break emit", () => {
    const stream = new EventStream("s3");
    stream.on("*", () => {
      throw new Error("boom");
    });
    expect(() => stream.emit({ type: "tools_bound", bound: [], deferred: [], reason: "x" })).not.toThrow();
  });

  it("exports every event type as JSON Schema", () => {
    const schema = JSON.stringify(eventJsonSchema([fake]));
    for (const type of eventTypes([fake])) expect(schema).toContain(`"${type}"`);
    expect(eventTypes([fake])).toEqual([...EVENT_TYPES, "todos", "shell_output"]);
    expect(eventSchema.options).toHaveLength(EVENT_TYPES.length);
  });
});

describe("the call events' fast path", () => {
  // What zod's parse returns for the same input: the fast path must build exactly that (keys in the
  // schema's order, extra keys dropped, the result copied), and refuse exactly what zod refuses.
  const viaZod = (input: Record<string, unknown>, seq: number, at: string) =>
    eventSchema.parse({ ...input, v: 1, seq, session: "s", at });
  /** zod refuses `input`, and emit refuses it with zod's own error as the cause. */
  const refusedAsZodDoes = (input: Record<string, unknown>) => {
    let zodError: unknown;
    try {
      viaZod(input, 0, new Date().toISOString());
    } catch (error) {
      zodError = error;
    }
    expect(zodError, JSON.stringify(input)).toBeInstanceOf(z.ZodError);
    let refused: unknown;
    try {
      new EventStream("s", [fake]).emit(input as never);
    } catch (error) {
      refused = error;
    }
    expect(((refused as Error).cause as Error).message).toBe((zodError as Error).message);
  };
  const same = (input: Record<string, unknown>) => {
    const stream = new EventStream("s", [fake]);
    const event = stream.emit(input as never);
    const expected = viaZod(input, event.seq, event.at);
    expect(event).toStrictEqual(expected);
    expect(JSON.stringify(event)).toBe(JSON.stringify(expected));
    expect(Object.keys(event)).toEqual(Object.keys(expected));
    return event;
  };

  it("builds tool_call and tool_result as zod would", () => {
    same({ type: "tool_call", call_id: "c1", tool: "read_file", input: { path: "a" } });
    same({ input: null, tool: "t", call_id: "c", type: "tool_call" });
    same({ type: "tool_result", call_id: "c", tool: "t", result: { kind: "x", n: 1 }, duration_ms: 0 });
    same({ type: "tool_result", call_id: "c", tool: "t", result: { kind: "x" }, text: "hi", duration_ms: 2 });
    // A present-but-undefined optional key stays a key, as zod keeps it.
    same({
      type: "tool_result",
      call_id: "c",
      tool: "t",
      result: { kind: "x" },
      text: undefined,
      duration_ms: 2,
    });
    same({
      type: "tool_result",
      call_id: "c",
      tool: "t",
      result: { kind: "x", u: undefined },
      duration_ms: 1,
    });
    same({
      type: "tool_result",
      call_id: "c",
      tool: "t",
      result: Object.assign(Object.create(null), { kind: "y" }),
      duration_ms: 1,
    });
    // zod takes a present-but-undefined input (an absent one it refuses).
    same({ type: "tool_call", call_id: "c", tool: "t", input: undefined });
    // Unknown keys are dropped, as zod's object strips them.
    same({ type: "tool_call", call_id: "c", tool: "t", input: 1, extra: true });
    same({ type: "tool_result", call_id: "c", tool: "t", result: { kind: "x" }, duration_ms: 1, extra: 1 });
  });

  it("builds tools_bound as zod would, and refuses what zod refuses", () => {
    same({ type: "tools_bound", bound: ["read_file", "list_dir"], deferred: [], reason: "session started" });
    same({ reason: "r", deferred: ["x"], bound: [], type: "tools_bound" });
    same({ type: "tools_bound", bound: [], deferred: [], reason: "r", extra: 1 });
    const bound = ["a"];
    const event = same({ type: "tools_bound", bound, deferred: [], reason: "r" });
    expect(event.type === "tools_bound" && event.bound).not.toBe(bound);
    const bad: Array<Record<string, unknown>> = [
      { type: "tools_bound", bound: ["a", 1], deferred: [], reason: "r" },
      { type: "tools_bound", bound: new Array(2).fill("a", 1), deferred: [], reason: "r" },
      { type: "tools_bound", bound: "a", deferred: [], reason: "r" },
      { type: "tools_bound", bound: [], deferred: [], reason: 1 },
      { type: "tools_bound", bound: [], reason: "r" },
    ];
    for (const input of bad) refusedAsZodDoes(input);
  });

  it("copies the result record, so a listener sees what zod would hand it", () => {
    const result = { kind: "x" };
    const event = same({ type: "tool_result", call_id: "c", tool: "t", result, duration_ms: 1 });
    expect(event.type === "tool_result" && event.result).not.toBe(result);
  });

  it("refuses what zod refuses, with zod's error", () => {
    const bad: Array<Record<string, unknown>> = [
      { type: "tool_call", call_id: 1, tool: "t", input: {} },
      { type: "tool_call", call_id: "c", tool: "t" },
      { type: "tool_result", call_id: "c", tool: "t", result: [], duration_ms: 1 },
      { type: "tool_result", call_id: "c", tool: "t", result: new Map(), duration_ms: 1 },
      { type: "tool_result", call_id: "c", tool: "t", result: { [Symbol("s")]: 1 }, duration_ms: 1 },
      { type: "tool_result", call_id: "c", tool: "t", result: { kind: "x" }, duration_ms: -1 },
      { type: "tool_result", call_id: "c", tool: "t", result: { kind: "x" }, duration_ms: Number.NaN },
      { type: "tool_result", call_id: "c", tool: "t", result: { kind: "x" }, text: 3, duration_ms: 1 },
      { type: "tool_result", call_id: "c", tool: "t", duration_ms: 1 },
    ];
    for (const input of bad) refusedAsZodDoes(input);
  });
});
