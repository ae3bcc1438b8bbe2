import { definePlugin, type Plugin } from "@toolbelt/core";
import { sandboxWrapper } from "./command-wrapper.js";
import { contributions } from "./contrib.js";
import { shellDoctor } from "./doctor.js";
import { shellSessionTool } from "./shell-session-tool.js";
import { shellTool } from "./shell-tool.js";

/** The shell family as a plugin: its tools, registered by createToolbelt(). */
export const family: Plugin = definePlugin({
  name: "shell",
  contributes: contributions,
  tools: [shellTool, shellSessionTool],
  doctor: shellDoctor,
  // Language servers started by other families run under the same sandbox (session.wrapCommand).
  setup: (session) => {
    session.hooks.wrapCommand.add(sandboxWrapper(session));
  },
});

export type { ShellStatus } from "./background-shell.js";
export { sandboxWrapper } from "./command-wrapper.js";
export {
  contributions,
  DEFAULT_MAX_PROCESSES as SHELL_DEFAULT_MAX_PROCESSES,
  type SandboxMode,
  sandboxMode,
  shellConfig,
  shellEvents,
} from "./contrib.js";
export type {
  ShellResult,
  ShellSessionList,
  ShellSessionSummary,
  ShellSessionView,
  ShellStarted,
} from "./payloads.js";
export type { ShellResults } from "./results.js";
export {
  DEFAULT_MAX_PROCESSES,
  probeSandbox,
  type SandboxProbe,
  type SandboxStatus,
  sandboxProtectedPaths,
  TOOLCHAIN_HOME_PATHS,
} from "./sandbox.js";
export { type ShellSessionInput, shellSessionInput, shellSessionTool } from "./shell-session-tool.js";
export { DEFAULT_TIMEOUT_SECONDS, type ShellInput, shellInput, shellTool } from "./shell-tool.js";
