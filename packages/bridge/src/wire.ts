// The HTTP API between `toolbelt serve --http` and a client, as JSON shapes. The server and
// connectClient() both build against these, so they are the one place the wire format is written down.

import type { ApprovalPrompt } from "@toolbelt/core";
import type { QuestionRequest } from "@toolbelt/ui/contrib";

/** A tool a client brings: the server runs no code for it, it forwards calls to the client. */
export type ClientToolSpec = {
  name: string;
  description: string;
  /** JSON Schema of the input (an object schema). */
  input_schema: Record<string, unknown>;
  /** Offered by name only until tool_search binds it, when the session defers tools (default true). */
  deferrable?: boolean;
};

/** POST /api/sessions/:id/attach (and PUT /api/sessions/:id/attach/:attachment_id to update). */
export type AttachRequest = {
  client?: string;
  tools: ClientToolSpec[];
  /** Client capabilities added to the session while attached (e.g. `generative_ui`). */
  capabilities?: string[];
  /** How long a call may wait for this client's answer (default 60 000 ms). */
  timeout_ms?: number;
};

export type AttachResponse = {
  attachment_id: string;
  /** The session's last event sequence number: open the stream with `since=last_seq`. */
  last_seq: number;
  tools: string[];
};

/** POST /api/sessions/:id/client-results */
export type ClientResultRequest = {
  /** The attachment the call was sent to: an answer from any other attachment is refused (403). */
  attachment_id: string;
  call_id: string;
  result: unknown;
};

/** POST /api/sessions/:id/calls */
export type CallRequest = {
  tool: string;
  input?: unknown;
  call_id?: string;
};

/** GET /api/sessions/:id/pending */
export type PendingListing = {
  questions: QuestionRequest[];
  approvals: ApprovalPrompt[];
};

/**
 * POST /api/sessions/:id/messages: a new user message. It supersedes every open question (their
 * calls return `question_superseded`, timed-out ones close); the host still sends it to its model.
 */
export type UserMessageRequest = { text: string };

export type UserMessageResponse = {
  /** The questions the message closed. */
  superseded: string[];
};

/** One answer that came after its question timed out (or after a restart), for the model as a new message. */
export type LateAnswerMessage = {
  question_id: string;
  answers: Array<{ question: string; options?: number[]; selected?: string[]; text?: string }>;
  notes?: string;
  /** The model-facing text to send as a user message. */
  text: string;
};

/** POST /api/sessions/:id/late-answers: takes the late answers not yet taken (each is handed over once). */
export type LateAnswersResponse = { answers: LateAnswerMessage[] };

/** Every non-2xx answer of the API. */
export type ApiError = { error: { code: string; message: string } };
