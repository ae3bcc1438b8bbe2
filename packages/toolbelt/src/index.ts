// The public API of @toolbelt/toolbelt: what an agent framework needs from one import — a session
// with every built-in family (createToolbelt), the types of what it returns and emits, the schema
// converters for model providers, and defineTool/definePlugin for tools of its own. The report in
// api/toolbelt.api.md guards it (`npm run api:check`; `npm run api:update` after a deliberate change).
//
// Deliberately not exported:
// - the rest of @toolbelt/core (config plumbing, contribution helpers, the text format's parser
//   internals): a plugin author imports @toolbelt/core itself, whose API is the plugin contract;
// - @toolbelt/core/internal and the families' own modules (the toolkit they share, no stability promise);
// - how the CLI opens sessions (openToolbelt and its CLI-only options), the built-in contribution
//   tables and the family loaders: the CLI's business, free to change;
// - the CLI itself (bin.ts and its commands).
export {
  type AfterToolCallAnswer,
  type AfterToolCallHook,
  type AfterToolCallInfo,
  type AnyTool,
  type ApprovalPrompt,
  type ApprovalRequest,
  type BeforeToolCallAnswer,
  type BeforeToolCallHook,
  type Binding,
  type BindResult,
  type BoundToolSchema,
  type CallOptions,
  type CallOutcome,
  type Checkpoint,
  type CheckpointFile,
  type ClientInfo,
  definePlugin,
  defineTool,
  discoveredFromHistory,
  ERROR_CODES,
  type ErrorCode,
  type ErrorPayload,
  type EventOf,
  type EventType,
  inputJsonSchema,
  isErrorPayload,
  type JsonSchema,
  type Limits,
  type OpenAIFunctionTool,
  outputJsonSchema,
  type ParsedToolText,
  type Payload,
  type Plugin,
  parseToolText,
  type RestoreResult,
  type Session,
  type ToolbeltConfig,
  type ToolbeltConfigInput,
  ToolbeltError,
  type ToolbeltEvent,
  type ToolCallHooks,
  type ToolCallInfo,
  type ToolContext,
  type ToolDefinition,
  type ToolResult,
  type ToolResultFor,
  type ToolResultMap,
  type TrustInfo,
  toAnthropicTool,
  toMcpTool,
  toOpenAITool,
  z,
} from "@toolbelt/core";
// Each family's results by tool name. Importing them also brings the families' additions to core's
// ToolResultMap into a program that imports only this package, so session.call() results are typed.
export type { EditResults } from "@toolbelt/edit";
export type { FilesResults } from "@toolbelt/files";
export type { LspResults } from "@toolbelt/lsp";
export type { McpResults } from "@toolbelt/mcp";
export type { McpServerConfig } from "@toolbelt/mcp/contrib";
export type { ProjectsResults } from "@toolbelt/projects";
export type { ShellResults } from "@toolbelt/shell";
export type { UiResults } from "@toolbelt/ui";
export type { QuestionRequest, QuestionResponse } from "@toolbelt/ui/contrib";
export type { WorkspaceSpec } from "@toolbelt/workspace";
export { eventJsonSchema } from "./contributions.js";
export { createToolbelt, type ToolbeltOptions, type WorkspaceOption } from "./create.js";
export { FAMILY_NAMES, type FamilyName, loadFamilies } from "./families.js";
