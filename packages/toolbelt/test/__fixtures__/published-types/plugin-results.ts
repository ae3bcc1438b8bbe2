// Compiled against the packed packages (packaging.test.ts): a plugin declares its tool's output and
// adds the result to ToolResultMap by declaration merging; session.call() then narrows it too.
import { readFile } from "node:fs/promises";
import { createToolbelt, definePlugin, defineTool, type ToolResult } from "@toolbelt/toolbelt";
import { z } from "zod";

const is = <T>(value: T): T => value;

export const wordCount = defineTool({
  name: "word_count",
  family: "words",
  access: "read",
  description: "Count the words of a text file in the project.",
  input: z.object({ path: z.string() }),
  output: z.object({ kind: z.literal("word_count"), path: z.string(), words: z.number().int() }),
  async execute(input, ctx) {
    const file = ctx.resolve(input.path);
    if (!file.exists) return { kind: "error", code: "ENOENT", message: `no such file: ${file.rel}` };
    const text = await readFile(file.abs, "utf8");
    return { kind: "word_count", path: file.rel, words: text.split(/\s+/).filter(Boolean).length };
  },
  render: (payload) => `${payload.path}: ${is<number>(payload.words)} words`,
});

declare module "@toolbelt/core" {
  interface ToolResultMap {
    word_count: ToolResult<typeof wordCount>;
  }
}

const session = await createToolbelt({
  root: ".",
  plugins: [definePlugin({ name: "words", tools: [wordCount] })],
});
const counted = await session.call("word_count", { path: "README.md" });
if (counted.kind === "word_count") is<number>(counted.words);
if (counted.kind === "error") is<string>(counted.message);
await session.close();

// execute must return what `output` declares.
// @ts-expect-error words is declared a number
defineTool({ name: "bad_count", family: "words", access: "read", description: "d", input: z.object({}), output: z.object({ kind: z.literal("word_count"), words: z.number() }), execute: () => ({ kind: "word_count" as const, words: "many" }) });
