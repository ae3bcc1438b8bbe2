import { definePlugin, type Plugin } from "@toolbelt/core";

/** The edit family as a plugin: its tools, registered by createToolbelt(). */
export const family: Plugin = definePlugin({
  name: "edit",
  tools: [],
});
