// The public API of @toolbelt/bridge: the HTTP API of `toolbelt serve --http` — its route table and
// wire types (also alone, browser-safe, as @toolbelt/bridge/wire), the server (startHttpServer), the
// server side of client-brought tools (ClientToolHub, PendingRequests) and the client SDK (connectClient).

// The ui family's one answer check, which the answer route applies before anything changes.
export { checkQuestionResponse } from "@toolbelt/ui/contrib";
export {
  type BridgeClient,
  type ClientStatus,
  type ClientTool,
  type ConnectClientOptions,
  connectClient,
} from "./client.js";
export {
  bearerToken,
  type HostAllowlist,
  hostAllowlist,
  isLoopbackHost,
  originOf,
  refusedHost,
  tokenMatches,
} from "./http-guard.js";
export { authorised, readJson, requestUrl, sendError, sendJson, unauthorised } from "./http-io.js";
export {
  type HttpServeOptions,
  type HttpServer,
  MAX_SESSIONS,
  type OpenSession,
  type QuestionStore,
  startHttpServer,
} from "./http-server.js";
export {
  type Attachment,
  CLIENT_FAMILY,
  ClientToolHub,
  type HubOptions,
  MAX_ATTACHMENTS,
  normaliseResult,
} from "./hub.js";
export { PendingRequests } from "./pending.js";
export { readSse, type SseMessage } from "./sse.js";
export {
  type ApiError,
  type ApprovalAnswer,
  type AttachRequest,
  type AttachResponse,
  type CallRequest,
  type CallResponse,
  type ClientResultRequest,
  type ClientToolSpec,
  decodePart,
  errorBody,
  type HealthResponse,
  HttpError,
  type LateAnswerMessage,
  type LateAnswersResponse,
  MAX_BODY_BYTES,
  matchRoute,
  noRoute,
  type Ok,
  type OpenSessionRequest,
  type PendingListing,
  type QuestionAnswerRequest,
  ROUTES,
  type RouteName,
  type RouteParams,
  type RouteSpec,
  type RouteTypes,
  routePath,
  type SessionInfo,
  type UserMessageRequest,
  type UserMessageResponse,
} from "./wire.js";
