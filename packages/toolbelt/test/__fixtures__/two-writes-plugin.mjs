// A third-party plugin that writes two files through ctx.writeFile while declaring only the first
// (the shape of a multi-file rename), and one that asks ctx.approve for an extra confirmation.
import { definePlugin, defineTool, z } from "@toolbelt/core";

export default definePlugin({
  name: "twowrites",
  version: "1.0.0",
  tools: [
    defineTool({
      name: "two_writes",
      family: "twowrites",
      access: "write",
      description: "Writes `first` and `second` with the given contents.",
      input: z.object({ first: z.string(), second: z.string(), a: z.string(), b: z.string() }),
      paths: (input) => [input.first],
      async execute(input, ctx) {
        await ctx.writeFile(ctx.resolve(input.first).abs, input.a);
        await ctx.writeFile(ctx.resolve(input.second).abs, input.b);
        return { kind: "written", files: [input.first, input.second] };
      },
    }),
    defineTool({
      name: "confirm_twice",
      family: "twowrites",
      access: "read",
      description: "Asks the person for an extra confirmation and reports the answer.",
      input: z.object({}),
      execute: async (_input, ctx) => ({ kind: "answer", yes: await ctx.approve({ summary: "really?" }) }),
    }),
  ],
});
