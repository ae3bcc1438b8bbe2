// Step 1: a plugin is a plain object of tools. definePlugin fills in the plugin API version.

import { readFile } from "node:fs/promises";
import { definePlugin, defineTool, renderText, z } from "@toolbelt/core";

// Step 2: a tool declares its input as a zod schema; toolbelt validates it and derives the JSON Schema.
const wordCount = defineTool({
  name: "word_count",
  family: "words",
  access: "read", // read tools run without asking; "write" and "execute" go through the policy
  description: "Count the lines, words and characters of a text file in the project.",
  input: z.object({ path: z.string().describe("file path, relative to the project root") }),
  // Step 3: declare what it returns (errors are always possible and need no declaring): TypeScript
  // callers get typed results, and MCP clients get it as the tool's outputSchema.
  output: z.object({
    kind: z.literal("word_count"),
    path: z.string(),
    lines: z.number().int(),
    words: z.number().int(),
    chars: z.number().int(),
  }),
  // Step 4: name the paths the call touches, so allowlists and approvals see them.
  paths: (input) => [input.path],
  async execute(input, ctx) {
    // Step 5: resolve every path through the session: anything outside the root is refused.
    const file = ctx.resolve(input.path);
    if (!file.exists) return { kind: "error", code: "ENOENT", message: `no such file: ${file.rel}` };
    const text = await readFile(file.abs, "utf8");
    return {
      kind: "word_count",
      path: file.rel,
      lines: text.split("\n").length - (text.endsWith("\n") ? 1 : 0),
      words: text.split(/\s+/).filter(Boolean).length,
      chars: text.length,
    };
  },
  // Step 6 (optional): the text the model reads — header lines, then a body.
  render: (p) =>
    renderText(
      [
        ["Kind", p.kind],
        ["Path", p.path],
      ],
      `${p.lines} lines, ${p.words} words, ${p.chars} characters`,
    ),
});

export default definePlugin({ name: "words", version: "1.0.0", tools: [wordCount] });
