import { definePlugin, type Plugin } from "@toolbelt/core";

/** The shell family as a plugin: its tools, registered by createToolbelt(). */
export const family: Plugin = definePlugin({
  name: "shell",
  tools: [],
});
