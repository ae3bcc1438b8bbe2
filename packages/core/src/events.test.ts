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
