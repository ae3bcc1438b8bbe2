import { createSession, type Payload, type ToolbeltEvent } from "@toolbelt/core";
import { afterEach, describe, expect, it } from "vitest";
import { ClientToolHub, MAX_ATTACHMENTS, normaliseResult } from "./hub.js";

const spec = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  description: `${name} on the client`,
  input_schema: { type: "object", properties: { n: { type: "number" } }, required: ["n"] },
  deferrable: false,
  ...extra,
});

async function setup(options: { toolSearch?: "on" | "off" } = {}) {
  const capabilities: string[] = ["ask_user"];
  const session = await createSession({
    root: process.cwd(),
    config: { agent: { tool_search: options.toolSearch ?? "off" } },
    client: { capabilities },
  });
  const events: ToolbeltEvent[] = [];
  session.on("*", (e) => events.push(e));
  const hub = new ClientToolHub(session, { capabilities, connectGraceMs: 50 });
  return { session, hub, events, capabilities };
}

/** The `n`-th (from 0) client_tool_call event, once the session has sent it to the client. */
async function forwardedCall(events: ToolbeltEvent[], n = 0): Promise<ToolbeltEvent> {
  const nth = () => events.filter((e) => e.type === "client_tool_call")[n];
  await expect.poll(nth, { timeout: 10_000 }).toBeDefined();
  return nth() as ToolbeltEvent;
}

const sessions: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const s of sessions.splice(0)) await s.close();
});

describe("ClientToolHub", () => {
  it("offers an attachment's tools only while its stream is connected", async () => {
    const { session, hub } = await setup();
    sessions.push(session);
    const attachment = hub.attach({ client: "phone", tools: [spec("phone_add")] });
    expect(session.bind().tools.map((t) => t.name)).not.toContain("phone_add");
    const disconnect = hub.connect(attachment.id);
    const schema = session.bind().tools.find((t) => t.name === "phone_add");
    expect(schema?.inputSchema).toEqual(spec("phone_add").input_schema);
    disconnect();
    expect(session.bind().tools.map((t) => t.name)).not.toContain("phone_add");
    expect(() => hub.connect(attachment.id)).toThrow(/no attachment/);
  });

  it("forwards a call as client_tool_call and returns what the client posts back", async () => {
    const { session, hub, events } = await setup();
    sessions.push(session);
    hub.connect(hub.attach({ tools: [spec("phone_add")] }).id);
    const call = session.call("phone_add", { n: 2 });
    const forwarded = await forwardedCall(events);
    expect(forwarded).toMatchObject({ tool: "phone_add", input: { n: 2 } });
    const callId = (forwarded as { call_id: string }).call_id;
    expect(hub.resolve(callId, { kind: "sum", value: 4 })).toBe(true);
    expect(await call).toEqual({ kind: "sum", value: 4 });
    expect(hub.resolve(callId, { kind: "late" })).toBe(false);
    expect(events.find((e) => e.type === "client_tool_result")).toMatchObject({ call_id: callId });
  });

  it("refuses an answer from an attachment other than the one the call was sent to", async () => {
    const { session, hub, events } = await setup();
    sessions.push(session);
    const a = hub.attach({ client: "a", tools: [spec("a_add")] });
    const b = hub.attach({ client: "b", tools: [spec("b_add")] });
    hub.connect(a.id);
    hub.connect(b.id);
    // The attachment id is what lets a client answer: it never shows up in the session's events.
    expect(JSON.stringify(events)).not.toContain(a.id);
    const call = session.call("a_add", { n: 1 });
    const callId = ((await forwardedCall(events)) as { call_id: string }).call_id;
    expect(() => hub.resolve(callId, { kind: "forged" }, b.id)).toThrow(/another attachment/);
    expect(hub.resolve(callId, { kind: "sum", value: 1 }, a.id)).toBe(true);
    expect(await call).toEqual({ kind: "sum", value: 1 });
  });

  it("holds a bounded number of attachments", async () => {
    const { session, hub } = await setup();
    sessions.push(session);
    for (let i = 0; i < MAX_ATTACHMENTS; i++) hub.attach({ tools: [] });
    expect(() => hub.attach({ tools: [] })).toThrow(`${MAX_ATTACHMENTS} attachments`);
  });

  it("validates input against the client's schema before the client sees it", async () => {
    const { session, hub, events } = await setup();
    sessions.push(session);
    hub.connect(hub.attach({ tools: [spec("phone_add")] }).id);
    expect(await session.call("phone_add", { n: "two" })).toMatchObject({
      kind: "error",
      code: "EINVAL_INPUT",
    });
    expect(events.some((e) => e.type === "client_tool_call")).toBe(false);
  });

  it("times out, cancels, and fails calls whose client disconnects", async () => {
    const { session, hub, events } = await setup();
    sessions.push(session);
    const attachment = hub.attach({ tools: [spec("phone_wait")], timeout_ms: 30 });
    const disconnect = hub.connect(attachment.id);
    expect(await session.call("phone_wait", { n: 1 })).toMatchObject({ code: "ETIMEOUT" });

    hub.update(attachment.id, { tools: [spec("phone_wait")], timeout_ms: 60_000 });
    const controller = new AbortController();
    const cancelled = session.call("phone_wait", { n: 1 }, { signal: controller.signal });
    controller.abort();
    expect(await cancelled).toMatchObject({ code: "ECANCELLED" });

    const before = events.filter((e) => e.type === "client_tool_call").length;
    const orphaned = session.call("phone_wait", { n: 1 });
    // Disconnected once the call is on its way to the client.
    await forwardedCall(events, before);
    disconnect();
    expect(await orphaned).toMatchObject({ code: "EUNAVAILABLE" });
  });

  it("refuses names already in the session or held by another attachment, and non-object schemas", async () => {
    const { session, hub } = await setup({ toolSearch: "on" });
    sessions.push(session);
    hub.attach({ tools: [spec("phone_a")] });
    expect(() => hub.attach({ tools: [spec("phone_a")] })).toThrow(/already/);
    expect(() => hub.attach({ tools: [spec("tool_search")] })).toThrow(/already/);
    expect(() => hub.attach({ tools: [spec("phone_b", { input_schema: { type: "string" } })] })).toThrow(
      /object schema/,
    );
    expect(() => hub.attach({ tools: [spec("bad name")] })).toThrow(/EINVAL|letters/);
  });

  it("drops the tools a client stops permitting, and lends its capabilities while attached", async () => {
    const { session, hub, capabilities } = await setup();
    sessions.push(session);
    const attachment = hub.attach({
      tools: [spec("phone_a"), spec("phone_b")],
      capabilities: ["generative_ui"],
    });
    const disconnect = hub.connect(attachment.id);
    expect(capabilities).toEqual(["ask_user", "generative_ui"]);
    hub.update(attachment.id, { tools: [spec("phone_a")] });
    const names = session.bind().tools.map((t) => t.name);
    expect(names).toContain("phone_a");
    expect(names).not.toContain("phone_b");
    expect(capabilities).toEqual(["ask_user"]);
    disconnect();
    expect(capabilities).toEqual(["ask_user"]);
  });

  it("defers deferrable client tools like any other", async () => {
    const { session, hub } = await setup({ toolSearch: "on" });
    sessions.push(session);
    hub.connect(hub.attach({ tools: [spec("phone_later", { deferrable: true })] }).id);
    expect(session.bind().deferred).toContain("phone_later");
  });
});

describe("normaliseResult", () => {
  it("gives every result a kind and keeps error codes in the stable set", () => {
    expect(normaliseResult("t", 42)).toEqual({ kind: "client_result", tool: "t", value: 42 });
    expect(normaliseResult("t", { a: 1 })).toEqual({ kind: "client_result", tool: "t", a: 1 });
    expect(normaliseResult("t", { kind: "ok" })).toEqual({ kind: "ok" });
    const error = normaliseResult("t", { kind: "error", code: "EWEIRD", message: "boom" }) as Payload;
    expect(error).toEqual({ kind: "error", code: "EINTERNAL", message: "boom", client_code: "EWEIRD" });
    expect(normaliseResult("t", { kind: "error", code: "ETIMEOUT" })).toMatchObject({
      code: "ETIMEOUT",
      message: "t failed on the client",
    });
  });
});
