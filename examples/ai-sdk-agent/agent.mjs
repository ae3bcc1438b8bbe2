// An AI SDK agent loop over toolbelt's tools, with no network: the model is the AI SDK's own mock
// (`MockLanguageModelV4` from `ai/test`) playing a script. Swap `scriptedModel()` for a real provider's
// model (`openai("…")`, `anthropic("…")`) and the rest stays as it is.
//
// Part 1, generateText: the model reads a file, fixes it, and runs a shell command. toolbelt's policy
// asks before a shell command, so the AI SDK stops with a tool-approval request; the app shows it,
// the user approves, and the next generateText runs the command (toolbelt does not ask again).
// Part 2, streamText: the model finds a deferred tool with tool_search and calls it in the next step.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createToolbeltTools } from "@toolbelt/ai-sdk";
import { definePlugin, defineTool, z } from "@toolbelt/core";
import { createToolbelt } from "@toolbelt/toolbelt";
import { generateText, isStepCount, streamText } from "ai";
import { MockLanguageModelV4 } from "ai/test";

const root = mkdtempSync(path.join(os.tmpdir(), "ai-sdk-agent-"));
mkdirSync(path.join(root, "src"));
writeFileSync(path.join(root, "src/math.mjs"), "export const add = (a, b) => a - b;\n");

// A client-brought tool, deferred: the model sees it only after tool_search finds it.
const wordCount = defineTool({
  name: "word_count",
  family: "words",
  access: "read",
  deferrable: true,
  description: "Counts the words of a text.",
  input: z.object({ text: z.string() }),
  execute: ({ text }) => ({ kind: "word_count", words: text.split(/\s+/).filter(Boolean).length }),
});

const session = await createToolbelt({
  root,
  config: { agent: { edit_tool: "edit_file", tool_search: "on" } },
  plugins: [definePlugin({ name: "words", tools: [wordCount] })],
});
// Events come from the session itself (the adapter adds no event channel of its own): the AI SDK's
// toolCallId is the call_id, so they line up with the AI SDK's steps.
session.on("approval_resolved", (e) => console.log(`[event] approval_resolved by ${e.by}: ${e.approved}`));
session.on("tool_result", (e) => {
  const shown = e.result.kind === "shell_result" ? ` → ${e.result.stdout.trim()}` : "";
  console.log(`[event] tool_result ${e.tool}: ${e.result.kind}${shown}`);
});

// Build the tools for each generation: tools bound by tool_search in one are plain tools in the next.
const { tools, toolApproval } = createToolbeltTools(session);

const model = scriptedModel([
  { tool: "read_file", input: { path: "src/math.mjs" } },
  { tool: "edit_file", input: { path: "src/math.mjs", old_text: "a - b", new_text: "a + b" } },
  {
    tool: "shell",
    input: { command: `node -e "import('./src/math.mjs').then(m => console.log('2 + 3 =', m.add(2, 3)))"` },
  },
  { text: "Fixed add(): it adds now (2 + 3 = 5)." },
  { tool: "tool_search", input: { query: "count words" } },
  { tool: "word_count", input: { text: "toolbelt for the AI SDK" } },
  { text: "Five words." },
]);

// Part 1: generateText, with one approval round.
const messages = [{ role: "user", content: "add() is wrong; fix it and show it works" }];
let result = await generateText({ model, tools, toolApproval, messages, stopWhen: isStepCount(10) });
for (;;) {
  messages.push(...result.response.messages);
  const requests = result.content.filter((part) => part.type === "tool-approval-request");
  if (requests.length === 0) break;
  const responses = requests.map((request) => {
    // A real app shows request.reason (toolbelt's summary: the command, the rule, protected paths)
    // and waits for the user; this one approves.
    console.log(`approve? ${request.reason} → yes`);
    return { type: "tool-approval-response", approvalId: request.approvalId, approved: true };
  });
  messages.push({ role: "tool", content: responses });
  result = await generateText({ model, tools, toolApproval, messages, stopWhen: isStepCount(10) });
}
console.log(`assistant: ${result.text}`);
console.log(`src/math.mjs: ${readFileSync(path.join(root, "src/math.mjs"), "utf8").trim()}\n`);

// Part 2: streamText, with a deferred tool found by tool_search. The AI SDK's tool search makes the
// match callable from the next step; no prepareStep is needed.
const stream = streamText({
  model,
  ...createToolbeltTools(session),
  prompt: "How many words are in 'toolbelt for the AI SDK'?",
  stopWhen: isStepCount(5),
});
for await (const part of stream.fullStream) {
  if (part.type === "tool-call") console.log(`→ ${part.toolName} ${JSON.stringify(part.input)}`);
  if (part.type === "text-delta") process.stdout.write(`assistant: ${part.text}`);
}
process.stdout.write("\n");

await session.close();
rmSync(root, { recursive: true, force: true });

/**
 * The AI SDK's mock model playing `turns` in order, one per model call, for generateText and
 * streamText alike: a turn is a tool call or the final text.
 */
function scriptedModel(turns) {
  let next = 0;
  const usage = {
    inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: 1, text: 1, reasoning: undefined },
  };
  const reply = () => {
    const turn = turns[next++];
    if (!turn) throw new Error("the script has ended");
    if (turn.text) return { content: [{ type: "text", text: turn.text }], finish: "stop" };
    const call = {
      type: "tool-call",
      toolCallId: `call-${next}`,
      toolName: turn.tool,
      input: JSON.stringify(turn.input),
    };
    return { content: [call], finish: "tool-calls" };
  };
  return new MockLanguageModelV4({
    doGenerate: async () => {
      const { content, finish } = reply();
      return { content, finishReason: { unified: finish, raw: undefined }, usage, warnings: [] };
    },
    doStream: async () => {
      const { content, finish } = reply();
      const chunks = [{ type: "stream-start", warnings: [] }];
      for (const part of content)
        if (part.type === "text")
          chunks.push(
            { type: "text-start", id: "t" },
            { type: "text-delta", id: "t", delta: part.text },
            { type: "text-end", id: "t" },
          );
        else chunks.push(part);
      chunks.push({ type: "finish", finishReason: { unified: finish, raw: undefined }, usage });
      return {
        stream: new ReadableStream({
          start(controller) {
            for (const chunk of chunks) controller.enqueue(chunk);
            controller.close();
          },
        }),
      };
    },
  });
}
