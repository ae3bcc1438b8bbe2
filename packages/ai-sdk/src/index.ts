// The public API of @toolbelt/ai-sdk: a toolbelt session for the Vercel AI SDK (`ai`).

export { createToolbeltSandbox } from "./sandbox.js";
export {
  createToolbeltTools,
  type ToolbeltAiSdk,
  type ToolbeltApproval,
  type ToolbeltToolsOptions,
} from "./tools.js";
