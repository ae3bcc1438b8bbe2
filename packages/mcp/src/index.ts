// The public API of @toolbelt/mcp. The SDK client and transports stay internal: callers get session
// tools, statuses and the family, never an MCP Client.
export {
  type ConnectionHooks,
  DEFAULT_CALL_TIMEOUT_MS,
  DEFAULT_START_TIMEOUT_MS,
  McpConnection,
  type ServerState,
} from "./connection.js";
export { contributions, type McpServerConfig, mcpConfig } from "./contrib.js";
export {
  doctorChecks,
  family,
  MAX_MCP_DEPTH,
  McpServers,
  type McpStatusPayload,
  mcpServersOf,
  mcpStatusTool,
  type ServerStatus,
  startServers,
} from "./family.js";
export { type LoginOptions, type LoginResult, login } from "./login.js";
export { oauthDir, oauthFile, removeSignIn, signInState } from "./oauth.js";
export type { McpResults } from "./results.js";
export {
  describeSpec,
  expandEnv,
  type HttpServerSpec,
  hasMcpServers,
  type IdentityProvider,
  MCP_JSON,
  type ResolvedOAuth,
  readServerSpecs,
  type ServerProblem,
  type ServerSpec,
  type ServerSpecs,
  type StdioServerSpec,
} from "./server-config.js";
export {
  accessFor,
  MCP_LIMITS,
  type McpContent,
  type McpResultPayload,
  payloadOf,
  planTools,
  renderResult,
  type ServerToolPlan,
  toolNameFor,
} from "./tools.js";
