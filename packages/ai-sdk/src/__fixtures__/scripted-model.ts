// A language model for tests: the AI SDK's own MockLanguageModelV4 (from `ai/test`), answering each
// model call with the next turn of a script. A turn sees what a model would: the prompt (tool results
// included, as the model reads them) and the tools it was given for this step.
import { MockLanguageModelV4 } from "ai/test";

export interface ModelView {
  /** Names of the tools sent with this step. */
  tools: string[];
  /** The tool results in the prompt, latest last, as the model reads them. */
  results: Array<{ toolCallId: string; toolName: string; output: { type: string; value?: unknown } }>;
}

export type Turn = (view: ModelView) => { calls: Array<{ tool: string; input: unknown }> } | { text: string };

interface PromptPart {
  type: string;
  toolCallId?: string;
  toolName?: string;
  output?: { type: string; value?: unknown };
}

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};

export interface ScriptedModel {
  model: MockLanguageModelV4;
  /** The view each model call had, in order. */
  views: ModelView[];
}

let callIds = 0;

/** Plays `turns` in order, one per model call, for generateText (doGenerate) and streamText (doStream). */
export function scriptedModel(turns: Turn[]): ScriptedModel {
  const views: ModelView[] = [];
  const next = (options: { prompt: unknown; tools?: Array<{ name: string }> }) => {
    const results: ModelView["results"] = [];
    for (const message of options.prompt as Array<{ role: string; content: unknown }>) {
      if (message.role !== "tool" || !Array.isArray(message.content)) continue;
      for (const part of message.content as PromptPart[])
        if (part.type === "tool-result" && part.toolCallId && part.toolName && part.output)
          results.push({ toolCallId: part.toolCallId, toolName: part.toolName, output: part.output });
    }
    const view = { tools: (options.tools ?? []).map((t) => t.name), results };
    views.push(view);
    const turn = turns[views.length - 1];
    if (!turn) throw new Error(`the script has ${turns.length} turns; model call ${views.length} has none`);
    const reply = turn(view);
    if ("text" in reply) return { content: [{ type: "text" as const, text: reply.text }], finish: "stop" as const };
    return {
      content: reply.calls.map((c) => ({
        type: "tool-call" as const,
        toolCallId: `call-${++callIds}`,
        toolName: c.tool,
        input: JSON.stringify(c.input),
      })),
      finish: "tool-calls" as const,
    };
  };
  const model = new MockLanguageModelV4({
    doGenerate: async (options) => {
      const { content, finish } = next(options);
      return { content, finishReason: { unified: finish, raw: undefined }, usage, warnings: [] };
    },
    doStream: async (options) => {
      const { content, finish } = next(options);
      const chunks: unknown[] = [{ type: "stream-start", warnings: [] }];
      for (const part of content) {
        if (part.type === "text") {
          chunks.push({ type: "text-start", id: "t" });
          chunks.push({ type: "text-delta", id: "t", delta: part.text });
          chunks.push({ type: "text-end", id: "t" });
        } else chunks.push(part);
      }
      chunks.push({ type: "finish", finishReason: { unified: finish, raw: undefined }, usage });
      const stream = new ReadableStream({
        start(controller) {
          for (const chunk of chunks) controller.enqueue(chunk);
          controller.close();
        },
      });
      return { stream } as Awaited<ReturnType<MockLanguageModelV4["doStream"]>>;
    },
  });
  return { model, views };
}
