// The public API of @toolbelt/core. Internal helpers (the lenient symlink walk, the listener sets)
// are deliberately not exported.

// zod, bundled into this file (see tsup.config.ts): the built-in families take `z` from here.
export { z } from "zod";
export {
  type AtomicWriteOptions,
  type AtomicWriteResult,
  KeyedLock,
  removeFileAt,
  writeFileAtomic,
} from "./atomic-write.js";
export {
  type BoundedFile,
  type BoundedReadOptions,
  type BoundedReadRefusal,
  MAX_CONFIG_BYTES,
  readDescriptorBounded,
  readFileInRoot,
  readHandleBounded,
  readRegularFile,
} from "./bounded-read.js";
export {
  type CheckpointFileDiff,
  type RestoreResult,
  type RestoreWriter,
  SessionCheckpoints,
} from "./checkpoint-api.js";
export {
  type Checkpoint,
  type CheckpointFile,
  type CheckpointRecorder,
  CheckpointStore,
  type CheckpointsConfig,
  type Conflict,
  checkpointDir,
  checkpointsConfigSchema,
  type FileState,
  type RecordedFile,
} from "./checkpoints.js";
export {
  COMMAND_ENV_DENY,
  COMMAND_ENV_KEEP,
  COMMAND_ENV_NEVER,
  type CommandEnvPolicy,
  commandEnvVerdict,
  envNameMatches,
  scrubbedNames,
  scrubCommandEnv,
} from "./command-env.js";
export {
  agentSchema,
  CONFIG_FILE,
  type ContributedAgentConfig,
  type ContributedAgentConfigInput,
  type ContributedConfig,
  type ContributedConfigInput,
  type ContributedToolFields,
  composeConfigSchema,
  configContributionsOf,
  configSchema,
  EDIT_BACKENDS,
  type EditBackend,
  type Limits,
  limitsSchema,
  loadConfig,
  mergeDeep,
  type ParseOptions,
  PERMISSION_MODES,
  type PermissionEntry,
  type PermissionMode,
  parseConfig,
  permissionEntrySchema,
  readConfigFile,
  type ToolbeltConfig,
  type ToolbeltConfigInput,
  type ToolSearchMode,
  toolSearchMode,
} from "./config.js";
export {
  type ConfigLayer,
  type ConfigSourceOptions,
  type IgnoredSetting,
  loadTrustedConfig,
  mergeLayers,
  untrustedPart,
} from "./config-sources.js";
export { type GatheredContributions, gatherContributions } from "./contribution-set.js";
export {
  type ConfigContribution,
  type ContributedKey,
  type ContributedKeys,
  type Contributions,
  DROP,
  defineBuiltinEvents,
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
  ESCAPE_LEGEND,
  type EscapeOptions,
  elideMiddle,
  escapeName,
  escapePath,
  escapeText,
  SPACE_RUN_MIN,
  unescapeText,
  type VisibleText,
  visibleText,
} from "./escape.js";
export {
  composeEventSchema,
  EVENT_SCHEMA_VERSION,
  EVENT_TYPES,
  type EventFieldsOf,
  type EventInput,
  type EventMap,
  type EventOf,
  EventStream,
  type EventType,
  eventJsonSchema,
  eventSchema,
  eventSchemas,
  eventTypes,
  type ToolbeltEvent,
} from "./events.js";
export { findExecutable, isExecutable } from "./executables.js";
export type { CommandSpec, CommandWrapper, LaunchPurpose } from "./launch.js";
export { type FileFingerprint, fingerprintOf, type LineWindow, ReadLedger } from "./ledger.js";
export { PathResolver, type ResolvedPath } from "./paths.js";
export {
  allowlistFilter,
  checkToolKeys,
  DEFAULT_MODES,
  type Decision,
  decide,
  FILE_TOOLS_KEY,
  knownToolKeys,
  listingDecision,
  type NamedTool,
  type PolicySubject,
  policyKeys,
  toolEnabled,
} from "./permissions.js";
export {
  checkPlugin,
  type DoctorCheck,
  type DoctorContext,
  definePlugin,
  PLUGIN_API_VERSION,
  type Plugin,
  type PluginInput,
  type Skill,
} from "./plugin.js";
export { trackedProcessGroups, trackProcessGroup, untrackProcessGroup } from "./process-tracking.js";
export { isProtectedPath, PROTECTED_ALLOW, PROTECTED_PATHS } from "./protected-paths.js";
export { renderPayload } from "./render.js";
export { requireLater } from "./require-later.js";
export {
  type CommandPart,
  commandRuleMatches,
  pathRuleMatches,
  type RuleSubjects,
  type RulesConfig,
} from "./rules.js";
export { CheckedDir, DirRef, hasProcFd, openForRead, openForReadSync } from "./safe-open.js";
export {
  type BudgetedCallOptions,
  BudgetedWorker,
  REGEX_BUDGET_MS,
  type SafeTestOptions,
  testLinesSafely,
} from "./safe-regex.js";
export {
  type BoundToolSchema,
  inputJsonSchema,
  type JsonSchema,
  type OpenAIFunctionTool,
  type ToolAnnotations,
  toAnthropicTool,
  toMcpTool,
  toOpenAIStrictSchema,
  toOpenAITool,
  toolJsonSchema,
} from "./schema-export.js";
export {
  type AfterWriteInfo,
  type ApprovalPrompt,
  type Binding,
  type BindResult,
  type CallOptions,
  type CallOutcome,
  type ClientInfo,
  createSession,
  Session,
  type SessionOptions,
} from "./session.js";
export { stateDir } from "./temp-files.js";
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
  renderText,
  renderTree,
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
  type ToolContext,
  type ToolDefinition,
  type ToolRequirements,
  type WriteResult,
} from "./tool.js";
export {
  type AfterToolCallAnswer,
  type AfterToolCallHook,
  type AfterToolCallInfo,
  type BeforeToolCallAnswer,
  type BeforeToolCallHook,
  DEFAULT_COMMAND_HOOK_TIMEOUT_MS,
  describeHooks,
  FUNCTION_HOOK_TIMEOUT_MS,
  HOOK_DENY_EXIT,
  HOOK_OUTPUT_MAX_BYTES,
  type HookEntry,
  type ToolCallHooks,
  type ToolCallInfo,
  type ToolHooksConfig,
} from "./tool-hooks.js";
export { discoveredFromHistory, searchTools, toolSearchTool } from "./tool-search.js";
export {
  type FileChange,
  runTransaction,
  type TransactionEnv,
  type TransactionResult,
  type WriteFilesOptions,
} from "./transaction.js";
export { type TrustInfo, UNTRUSTED } from "./trust.js";
export {
  addTrustedProject,
  listTrustedProjects,
  type ProjectTrustOptions,
  projectTrust,
  removeTrustedProject,
  TRUST_FILE,
  type TrustedProject,
  trustedEntryFor,
  USER_CONFIG_FILE,
  userConfigDir,
} from "./trust-store.js";
export { undoTool } from "./undo-tool.js";
