// A plugin object that skipped defineTool and forgot a tool's execute, loaded from config in the
// plugin-errors tests.
import { definePlugin, z } from "@toolbelt/core";

export default definePlugin({
  name: "broken",
  tools: [
    {
      name: "shout",
      family: "broken",
      access: "read",
      description: "Shouts (it would, with an execute).",
      input: z.object({ text: z.string() }),
    },
  ],
});
