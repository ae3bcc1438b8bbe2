// A plugin with event mistakes, loaded from config in the plugin-errors tests: `wave` emits a type
// nothing declares, `wave_badly` emits its declared type with a field of the wrong type.
import { defineEvents, definePlugin, defineTool, z } from "@toolbelt/core";

export default definePlugin({
  name: "wave",
  version: "1.0.0",
  contributes: { events: [defineEvents("wave", { greeted: { name: z.string() } })] },
  tools: [
    defineTool({
      name: "wave",
      family: "wave",
      access: "read",
      description: "Waves, and says so in an event it never declared.",
      input: z.object({}),
      execute: (_input, ctx) => {
        ctx.emit({ type: "wave/waved", at_whom: "everyone" });
        return { kind: "waved" };
      },
    }),
    defineTool({
      name: "wave_badly",
      family: "wave",
      access: "read",
      description: "Emits its declared event with a number where a string belongs.",
      input: z.object({}),
      execute: (_input, ctx) => {
        ctx.emit({ type: "wave/greeted", name: 42 });
        return { kind: "waved" };
      },
    }),
  ],
});
