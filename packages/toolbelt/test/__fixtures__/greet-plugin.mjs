// A plugin written only against the public SDK, loaded from config in the CLI tests.
import { definePlugin, defineTool, z } from "@toolbelt/core";

export default definePlugin({
  name: "greet",
  version: "1.0.0",
  tools: [
    defineTool({
      name: "greet",
      family: "greet",
      access: "read",
      description: "Greets someone by name.",
      input: z.object({ name: z.string().min(1) }),
      execute: (input) => ({ kind: "greeting", text: `hello ${input.name}` }),
    }),
  ],
});
