import { definePlugin, type Plugin } from "@toolbelt/core";

/** The ui family as a plugin: its tools, registered by createToolbelt(). */
export const family: Plugin = definePlugin({
  name: "ui",
  tools: [],
});
