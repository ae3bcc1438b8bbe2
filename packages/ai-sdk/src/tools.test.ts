// The adapter end to end through the AI SDK: generateText/streamText drive a scripted model (the AI
// SDK's MockLanguageModelV4, no network) against a real session — real files, the real shell.
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
import {
  definePlugin,
  defineTool,
  type Plugin,
  type Session,
  type ToolbeltEvent,
  toolJsonSchema,
  z,
} from "@toolbelt/core";
import { createToolbelt } from "@toolbelt/toolbelt";
import { generateText, isStepCount, type ModelMessage, streamText, type ToolApprovalResponse } from "ai";
import { afterEach, describe, expect, it } from "vitest";
import { scriptedModel, type Turn } from "./__fixtures__/scripted-model.js";
import { createToolbeltTools } from "./tools.js";

const roots: string[] = [];
const sessions: Session[] = [];
afterEach(async () => {
  for (const s of sessions.splice(0)) await s.close();
  for (const d of roots.splice(0)) rmSync(d, { recursive: true, force: true });
});

function project(): string {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), "tb-ai-sdk-")));
  roots.push(root);
  mkdirSync(path.join(root, "src"));
  writeFileSync(path.join(root, "src/math.ts"), "export const add = (a: number, b: number) => a - b;\n");
  return root;
}

interface Opened {
  session: Session;
  events: ToolbeltEvent[];
  /** Prompts the session's own approver saw (it always says no): toolbelt asking a second time. */
  asked: string[];
}

async function open(
  root: string,
  config: Record<string, unknown> = {},
  plugins: Plugin[] = [],
): Promise<Opened> {
  const asked: string[] = [];
  const session = await createToolbelt({
    root,
    config: { agent: { edit_tool: "edit_file" }, ...config },
    plugins,
    client: {
      approve: async (prompt) => {
        asked.push(prompt.summary);
        return false;
      },
    },
  });
  sessions.push(session);
  const events: ToolbeltEvent[] = [];
  session.on("*", (e) => events.push(e));
  return { session, events, asked };
}

const call =
  (tool: string, input: unknown): Turn =>
  () => ({ calls: [{ tool, input }] });
const say =
  (text: string): Turn =>
  () => ({ text });

/** Answers every approval request of a result the same way, as the app's user would. */
function answer(content: ReadonlyArray<{ type: string }>, approved: boolean): ModelMessage {
  const responses: ToolApprovalResponse[] = content
    .filter(
      (p): p is { type: "tool-approval-request"; approvalId: string } => p.type === "tool-approval-request",
    )
    .map((p) => ({ type: "tool-approval-response", approvalId: p.approvalId, approved }));
  return { role: "tool", content: responses };
}

describe("createToolbeltTools", () => {
  it("gives every bound tool with toolbelt's JSON schema; the result is the payload, the model reads toolbelt's text", async () => {
    const root = project();
    const { session, events } = await open(root);
    const { tools } = createToolbeltTools(session);
    const bound = session.bind().tools;
    expect(Object.keys(tools).sort()).toEqual(bound.map((t) => t.name).sort());
    const readFile = session.bindings().find((b) => b.name === "read_file");
    const schema = tools.read_file?.inputSchema as { jsonSchema: unknown } | undefined;
    expect(schema?.jsonSchema).toEqual(toolJsonSchema(readFile?.tool ?? { input: z.object({}) }));

    const script = scriptedModel([call("read_file", { path: "src/math.ts" }), say("done")]);
    const result = await generateText({
      model: script.model,
      tools,
      stopWhen: isStepCount(4),
      prompt: "Read src/math.ts",
    });
    expect(result.text).toBe("done");
    const first = result.steps[0]?.toolResults[0];
    expect(first?.output).toMatchObject({ kind: "file_content", path: "src/math.ts" });
    const seen = script.views[1]?.results[0];
    const { text } = await session.callWithText("read_file", { path: "src/math.ts" });
    // The second read is toolbelt's de-duplication notice; the model read the full text the first time.
    expect(text).toContain("file_unchanged");
    expect(seen?.output).toEqual({
      type: "text",
      value: session.renderResult("read_file", first?.output as never),
    });
    expect(String(seen?.output.value)).toContain("a - b");
    // The session's events name the AI SDK's tool call.
    expect(events.find((e) => e.type === "tool_result" && e.tool === "read_file")).toMatchObject({
      call_id: first?.toolCallId,
    });
  });

  it("runs what the policy allows; an edit writes the real file", async () => {
    const root = project();
    const { session } = await open(root);
    const { tools, toolApproval } = createToolbeltTools(session);
    const script = scriptedModel([
      call("read_file", { path: "src/math.ts" }),
      call("edit_file", { path: "src/math.ts", old_text: "a - b", new_text: "a + b" }),
      say("fixed"),
    ]);
    const result = await generateText({
      model: script.model,
      tools,
      toolApproval,
      stopWhen: isStepCount(5),
      prompt: "Fix add",
    });
    expect(result.text).toBe("fixed");
    expect(result.content.some((p) => p.type === "tool-approval-request")).toBe(false);
    expect(readFileSync(path.join(root, "src/math.ts"), "utf8")).toContain("a + b");
  });

  it("asks through the AI SDK's approvals when toolbelt would ask; approved, the command runs once, unasked by toolbelt", async () => {
    const root = project();
    const { session, events, asked } = await open(root);
    const { tools, toolApproval } = createToolbeltTools(session);
    const script = scriptedModel([
      call("shell", { command: "echo ran > marker.txt && cat marker.txt" }),
      say("ok"),
    ]);
    const messages: ModelMessage[] = [{ role: "user", content: "make a marker" }];
    const first = await generateText({
      model: script.model,
      tools,
      toolApproval,
      messages,
      stopWhen: isStepCount(4),
    });
    const request = first.content.find((p) => p.type === "tool-approval-request");
    expect(request).toMatchObject({
      type: "tool-approval-request",
      reason: "shell: echo ran > marker.txt && cat marker.txt",
    });
    expect(existsSync(path.join(root, "marker.txt"))).toBe(false);
    expect(events.some((e) => e.type === "tool_call")).toBe(false);

    messages.push(...first.response.messages, answer(first.content, true));
    const second = await generateText({
      model: script.model,
      tools,
      toolApproval,
      messages,
      stopWhen: isStepCount(4),
    });
    expect(second.text).toBe("ok");
    expect(readFileSync(path.join(root, "marker.txt"), "utf8")).toBe("ran\n");
    const shellResult = script.views[1]?.results.find((r) => r.toolName === "shell");
    expect(String(shellResult?.output.value)).toContain("ran");
    expect(asked).toEqual([]);
    expect(events.filter((e) => e.type === "approval_resolved")).toMatchObject([
      { approved: true, by: "ai-sdk" },
    ]);
  });

  it("never runs a call the user denied", async () => {
    const root = project();
    const { session, events } = await open(root);
    const { tools, toolApproval } = createToolbeltTools(session);
    const script = scriptedModel([call("shell", { command: "touch marker.txt" }), say("understood")]);
    const messages: ModelMessage[] = [{ role: "user", content: "touch it" }];
    const first = await generateText({
      model: script.model,
      tools,
      toolApproval,
      messages,
      stopWhen: isStepCount(4),
    });
    messages.push(...first.response.messages, answer(first.content, false));
    const second = await generateText({
      model: script.model,
      tools,
      toolApproval,
      messages,
      stopWhen: isStepCount(4),
    });
    expect(second.text).toBe("understood");
    expect(existsSync(path.join(root, "marker.txt"))).toBe(false);
    expect(events.some((e) => e.type === "tool_call")).toBe(false);
    expect(script.views[1]?.results[0]?.output.type).toBe("execution-denied");
  });

  it("leaves a policy deny a refusal: no approval asked, toolbelt's EDENIED reaches the model as an error", async () => {
    const root = project();
    const { session } = await open(root, { tools: { shell: { mode: "deny" } } });
    const { tools, toolApproval } = createToolbeltTools(session);
    const script = scriptedModel([call("shell", { command: "touch marker.txt" }), say("blocked")]);
    const result = await generateText({
      model: script.model,
      tools,
      toolApproval,
      prompt: "x",
      stopWhen: isStepCount(4),
    });
    expect(result.content.some((p) => p.type === "tool-approval-request")).toBe(false);
    expect(result.steps[0]?.toolResults[0]?.output).toMatchObject({ kind: "error", code: "EDENIED" });
    expect(script.views[1]?.results[0]?.output).toMatchObject({ type: "error-text" });
    expect(String(script.views[1]?.results[0]?.output.value)).toMatch(/^# Error: EDENIED/);
    expect(existsSync(path.join(root, "marker.txt"))).toBe(false);
  });

  it("asks before a protected path is written, naming it; approved, the file is written", async () => {
    const root = project();
    const { session, asked } = await open(root);
    const { tools, toolApproval } = createToolbeltTools(session);
    const script = scriptedModel([
      call("write_file", { path: ".mcp.json", content: "{}\n" }),
      say("written"),
    ]);
    const messages: ModelMessage[] = [{ role: "user", content: "write it" }];
    const first = await generateText({
      model: script.model,
      tools,
      toolApproval,
      messages,
      stopWhen: isStepCount(4),
    });
    const request = first.content.find((p) => p.type === "tool-approval-request") as
      | { reason?: string }
      | undefined;
    expect(request?.reason).toContain("protected: .mcp.json");
    expect(existsSync(path.join(root, ".mcp.json"))).toBe(false);
    messages.push(...first.response.messages, answer(first.content, true));
    await generateText({ model: script.model, tools, toolApproval, messages, stopWhen: isStepCount(4) });
    expect(readFileSync(path.join(root, ".mcp.json"), "utf8")).toBe("{}\n");
    expect(asked).toEqual([]);
  });

  it("without the approval rules, what toolbelt would ask about is refused by toolbelt itself", async () => {
    const root = project();
    const { session, asked } = await open(root);
    const { tools } = createToolbeltTools(session);
    const script = scriptedModel([call("shell", { command: "touch marker.txt" }), say("no")]);
    const result = await generateText({ model: script.model, tools, prompt: "x", stopWhen: isStepCount(4) });
    expect(result.steps[0]?.toolResults[0]?.output).toMatchObject({ kind: "error", code: "EDENIED" });
    expect(asked).toEqual(["shell: touch marker.txt"]);
    expect(existsSync(path.join(root, "marker.txt"))).toBe(false);
  });

  it("defers tools behind tool_search: the AI SDK's tool search binds them with toolbelt's, for the next step", async () => {
    const root = project();
    const counted: string[] = [];
    const wordCount = defineTool({
      name: "word_count",
      family: "words",
      access: "read",
      deferrable: true,
      description: "Counts the words of a text.",
      input: z.object({ text: z.string() }),
      execute: (input) => {
        counted.push(input.text);
        return { kind: "word_count", words: input.text.split(/\s+/).filter(Boolean).length };
      },
    });
    const { session, events } = await open(root, { agent: { edit_tool: "edit_file", tool_search: "on" } }, [
      definePlugin({ name: "words", tools: [wordCount] }),
    ]);
    expect(session.bind().deferred).toContain("word_count");
    const { tools } = createToolbeltTools(session);
    const script = scriptedModel([
      call("tool_search", { query: "count words" }),
      call("word_count", { text: "one two three" }),
      say("three words"),
    ]);
    const result = await generateText({
      model: script.model,
      tools,
      prompt: "count",
      stopWhen: isStepCount(5),
    });
    expect(result.text).toBe("three words");
    expect(script.views[0]?.tools).toContain("tool_search");
    expect(script.views[0]?.tools).not.toContain("word_count");
    expect(script.views[1]?.tools).toContain("word_count");
    expect(script.views[2]?.results.at(-1)?.output.value).toContain("# Words: 3");
    expect(counted).toEqual(["one two three"]);
    // toolbelt's tool_search ran (its events), and the session keeps the tool bound for later generations.
    expect(events.find((e) => e.type === "tool_result" && e.tool === "tool_search")).toBeDefined();
    expect(session.bind().deferred).not.toContain("word_count");
    expect(createToolbeltTools(session).tools.word_count?.deferLoading).toBeUndefined();
  });

  it("ends a running command when the generation is aborted", async () => {
    const root = project();
    // Allowed here, so the command runs without an approval round.
    const allowed = await createToolbelt({
      root,
      config: { agent: { edit_tool: "edit_file" } },
      allow: ["shell"],
    });
    sessions.push(allowed);
    const { tools } = createToolbeltTools(allowed);
    const started = new Promise<void>((resolve) =>
      allowed.on("shell_output", (e) => {
        if (e.data.includes("started")) resolve();
      }),
    );
    const finished = new Promise<ToolbeltEvent & { type: "tool_result" }>((resolve) =>
      allowed.on("tool_result", (e) => {
        if (e.tool === "shell") resolve(e);
      }),
    );
    const controller = new AbortController();
    const script = scriptedModel([
      call("shell", { command: "echo started; sleep 600; echo never" }),
      say("-"),
    ]);
    const stream = streamText({
      model: script.model,
      tools,
      prompt: "wait",
      abortSignal: controller.signal,
      stopWhen: isStepCount(3),
    });
    // The aborted stream rejects; what is asserted is what the session did with the running command.
    const consumed = Promise.resolve(stream.consumeStream()).catch(() => {});
    await started;
    controller.abort(new Error("user stopped"));
    expect((await finished).result).toMatchObject({ kind: "error", code: "ECANCELLED" });
    await consumed;
  });
});
