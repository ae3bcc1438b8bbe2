// @toolbelt/core/internal: the toolkit toolbelt's built-in families and its CLI share.
//
// NO STABILITY PROMISE. Anything here may change or go in any release, patch releases included,
// without a changeset calling it breaking. A plugin must not import it: write against
// `@toolbelt/core` (the contract, which the API report guards), and ask for what is missing there.
//
// What belongs here: logic two families would otherwise copy (bounded reads, opens that hold the
// path check, process-group tracking, the permission engine, the trust store, config plumbing).
// Only names some package outside core imports: what nothing imports stays unexported.

export { collapseCarriageReturns, stripAnsi } from "./ansi.js";
export { writeFileAtomic } from "./atomic-write.js";
export {
  type BoundedFile,
  MAX_CONFIG_BYTES,
  readDescriptorBounded,
  readFileInRoot,
  readHandleBounded,
  readRegularFile,
  readStreamBounded,
} from "./bounded-read.js";
export { explainCall } from "./call-pipeline.js";
// What a workspace's toolbelt answers about its checkpoints, checked on the host (toolbelt's link).
export { restoreResultSchema } from "./checkpoint-api.js";
export { checkpointsConfigSchema } from "./checkpoints.js";
export { type CommandEnvPolicy, scrubCommandEnv } from "./command-env.js";
export {
  CONFIG_FILE,
  configContributionsOf,
  EDIT_BACKENDS,
  mergeConfig,
  mergeDeep,
  readConfigFile,
} from "./config.js";
export { TRUST_FILE, userConfigDir } from "./config-paths.js";
export { loadTrustedConfig, untrustedPart } from "./config-sources.js";
export { defineBuiltinEvents } from "./contributions.js";
export { ENV, type EnvVar, readEnv, renderEnvTable, toolbeltHome } from "./env-vars.js";
export { EventStream, eventJsonSchema, eventTypes } from "./events.js";
export { findExecutable, isExecutable } from "./executables.js";
export { MAX_JSON_DEPTH, nestsDeeperThan, valueNestsDeeperThan } from "./json-depth.js";
export { fingerprintOf } from "./ledger.js";
export {
  cellIdsRequired,
  multilineText,
  NOTEBOOK_CELL_TYPES,
  type Notebook,
  type NotebookCell,
  type NotebookCellType,
  parseNotebook,
} from "./notebook.js";
export { PathResolver } from "./paths.js";
export {
  decide,
  listingDecision,
  type PartExplanation,
  type PolicyExplanation,
  type RuleReference,
} from "./permissions.js";
export { checkPlugin } from "./plugin.js";
export { trackProcessGroup, untrackProcessGroup } from "./process-tracking.js";
export { isProtectedPath, PROTECTED_PATHS } from "./protected-paths.js";
export { renderPayload } from "./render.js";
export { describeExampleProblem, type RuleWarning, ruleExampleProblems, ruleWarnings } from "./rules.js";
export { CheckedDir, hasProcFd, openForRead, openForReadSync } from "./safe-open.js";
export { BudgetedWorker, testLinesSafely } from "./safe-regex.js";
export { SERVER_DEFAULTS, type ServerSettings, serverSettings } from "./server-settings.js";
export { stateDir } from "./temp-files.js";
export { describeHooks } from "./tool-hooks.js";
export { UNTRUSTED } from "./trust.js";
export {
  addTrustedProject,
  listTrustedProjects,
  projectTrust,
  removeTrustedProject,
} from "./trust-store.js";
