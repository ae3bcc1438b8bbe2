// The public API of @toolbelt/core: the contract a plugin author writes against and an SDK user reads.
// Changing it is a breaking change for someone: `npm run api:check` compares it with the checked-in
// report (api/core.api.md), and `npm run api:update` rewrites the report when a change is meant.
//
// Deliberately not here: the toolkit the built-in families share (bounded reads, safe opens, process
// tracking, the permission engine, the trust store, ...). It lives in `@toolbelt/core/internal`, which
// carries no stability promise. Classes a session hands out (PathResolver, ReadLedger, EventStream,
// SessionCheckpoints) are exported as types only: a caller uses the session's, never builds one.

// zod, bundled into core's file (see tsup.config.ts): the built-in families take `z` from here.
export { z } from "zod";
export type { AtomicWriteOptions, AtomicWriteResult } from "./atomic-write.js";
export type {
  CheckpointFileDiff,
  CheckpointsSummary,
  RemoteCheckpoints,
  RestoreResult,
  SessionCheckpoints,
} from "./checkpoint-api.js";
export type { Checkpoint, CheckpointFile, Conflict, FileState } from "./checkpoints.js";
export type {
  ContributedAgentConfig,
  ContributedAgentConfigInput,
  ContributedConfig,
  ContributedConfigInput,
  ContributedToolFields,
  EditBackend,
  Limits,
  ParseOptions,
  PermissionEntry,
  PermissionMode,
  ToolbeltConfig,
  ToolbeltConfigInput,
  ToolSearchMode,
} from "./config.js";
export { parseConfig } from "./config.js";
export { type ConfigLayer, type IgnoredSetting, mergeLayers } from "./config-sources.js";
export type { GatheredContributions } from "./contribution-set.js";
export {
  type ConfigContribution,
  type ContributedKey,
  type ContributedKeys,
  type Contributions,
  DROP,
  defineConfigSection,
  defineEvents,
  type EventContribution,
  type EventShapes,
  type SectionInputs,
  type SectionValues,
  type TrustContext,
  type TrustRule,
  trustRules,
  type UntrustedFileSetting,
} from "./contributions.js";
export {
  ERROR_CODES,
  type ErrorCode,
  type ErrorPayload,
  errorPayload,
  isErrorPayload,
  normaliseError,
  ToolbeltError,
} from "./errors.js";
export {
  type Elided,
  type EscapeOptions,
  elideMiddle,
  escapeName,
  escapePath,
  escapeText,
  type UnescapeOptions,
  unescapeText,
  type VisibleText,
  visibleText,
} from "./escape.js";
export type {
  EventEmitter,
  EventFieldsOf,
  EventInput,
  EventMap,
  EventOf,
  EventStream,
  EventType,
  ToolbeltEvent,
} from "./events.js";
export type { CommandSpec, CommandWrapper, LaunchPurpose } from "./launch.js";
export type { FileFingerprint, LineWindow, ReadLedger } from "./ledger.js";
export type { OutsideFiles, PathResolver, ResolvedPath } from "./paths.js";
export {
  type DoctorCheck,
  type DoctorContext,
  definePlugin,
  PLUGIN_API_VERSION,
  type Plugin,
  type PluginInput,
  type Skill,
} from "./plugin.js";
export {
  defaultProcessPool,
  machineProcessLimits,
  ProcessPool,
  type ProcessPoolOptions,
  type ProcessPoolUsage,
  type ProcessSlot,
  type ProcessSlotRequest,
} from "./process-pool.js";
export {
  errorPayloadSchema,
  type PayloadImage,
  payloadImages,
  payloadSchema,
  type ToolResult,
  type ToolResultFor,
  type ToolResultMap,
} from "./results.js";
export type { CommandPart, RuleSubjects } from "./rules.js";
export type { SavedOutputFile, SavedOutputs } from "./saved-outputs.js";
export {
  type BoundToolSchema,
  inputJsonSchema,
  type JsonSchema,
  type OpenAIFunctionTool,
  outputJsonSchema,
  type ToolAnnotations,
  toAnthropicTool,
  toMcpTool,
  toOpenAIStrictSchema,
  toOpenAITool,
  toolJsonSchema,
} from "./schema-export.js";
export {
  type AfterWriteInfo,
  type AfterWriteReport,
  type ApprovalPrompt,
  type Binding,
  type BindResult,
  type CallCheck,
  type CallOptions,
  type CallOutcome,
  type ClientInfo,
  createSession,
  type GrantedApproval,
  type ProcessSlotOptions,
  Session,
  type SessionOptions,
} from "./session.js";
export {
  type CountHeader,
  countWithCap,
  type HeaderValue,
  OUTPUT_STRUCTURES,
  type OutputStructure,
  type ParsedToolText,
  parseToolText,
  renderEntries,
  renderFlat,
  renderHeaders,
  renderSections,
  renderText,
  renderTree,
  type TextSection,
  type TreeEntry,
  type TreeMatch,
} from "./text-format.js";
export {
  type Access,
  type AnyTool,
  type ApprovalRequest,
  asAnyTool,
  defineTool,
  type Payload,
  type ProfileInputContext,
  type ProfileVariant,
  type ToolBase,
  type ToolContext,
  type ToolDefinition,
  type ToolOutput,
  type ToolRequirements,
  type ToolWithOutput,
  type WriteResult,
} from "./tool.js";
export {
  type AfterToolCallAnswer,
  type AfterToolCallHook,
  type AfterToolCallInfo,
  type BeforeToolCallAnswer,
  type BeforeToolCallHook,
  FUNCTION_HOOK_TIMEOUT_MS,
  type HookEntry,
  type ToolCallHooks,
  type ToolCallInfo,
  type ToolHooksConfig,
} from "./tool-hooks.js";
export { discoveredFromHistory } from "./tool-search.js";
export type { FileChange, TransactionResult, WriteFilesOptions } from "./transaction.js";
export type { TrustInfo } from "./trust.js";
export {
  type NewDiagnostic,
  newDiagnosticSchema,
  WRITE_DIAGNOSTIC_SEVERITIES,
  type WriteDiagnostics,
  writeDiagnosticsHeader,
  writeDiagnosticsLines,
  writeDiagnosticsSchema,
} from "./write-diagnostics.js";
