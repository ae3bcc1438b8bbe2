// The public API of @toolbelt/bridge: the server side of client-brought tools (ClientToolHub,
// PendingRequests) used by `toolbelt serve --http`, the client SDK (connectClient), and the wire types.
export {
  type BridgeClient,
  type ClientStatus,
  type ClientTool,
  type ConnectClientOptions,
  connectClient,
} from "./client.js";
export {
  type Attachment,
  CLIENT_FAMILY,
  ClientToolHub,
  type HubOptions,
  MAX_ATTACHMENTS,
  normaliseResult,
} from "./hub.js";
export { checkQuestionResponse, PendingRequests } from "./pending.js";
export { readSse, type SseMessage } from "./sse.js";
export type {
  ApiError,
  AttachRequest,
  AttachResponse,
  CallRequest,
  ClientResultRequest,
  ClientToolSpec,
  LateAnswerMessage,
  LateAnswersResponse,
  PendingListing,
  UserMessageRequest,
  UserMessageResponse,
} from "./wire.js";
