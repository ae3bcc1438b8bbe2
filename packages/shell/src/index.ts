import { definePlugin, type Plugin } from "@toolbelt/core";
import { shellDoctor } from "./doctor.js";
import { shellSessionTool } from "./shell-session-tool.js";
import { shellTool } from "./shell-tool.js";

/** The shell family as a plugin: its tools, registered by createToolbelt(). */
export const family: Plugin = definePlugin({
  name: "shell",
  tools: [shellTool, shellSessionTool],
  doctor: shellDoctor,
});

export type { ShellStatus } from "./background-shell.js";
export type {
  ShellResult,
  ShellSessionList,
  ShellSessionSummary,
  ShellSessionView,
  ShellStarted,
} from "./payloads.js";
export { probeSandbox, type SandboxProbe, type SandboxStatus } from "./sandbox.js";
export { type ShellSessionInput, shellSessionInput, shellSessionTool } from "./shell-session-tool.js";
export { DEFAULT_TIMEOUT_SECONDS, type ShellInput, shellInput, shellTool } from "./shell-tool.js";
