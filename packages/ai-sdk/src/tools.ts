import { type Binding, type Payload, type Session, ToolbeltError, toolJsonSchema } from "@toolbelt/core";
import {
  dynamicTool,
  jsonSchema,
  type ModelMessage,
  type Tool,
  type ToolApprovalStatus,
  type ToolSet,
  toolSearch,
} from "ai";
import { approvedInMessages } from "./approvals.js";

/** What `toModelOutput` returns (the AI SDK exports no name for it). */
type ToolResultOutput = Awaited<ReturnType<NonNullable<Tool["toModelOutput"]>>>;

/** toolbelt's own deferred-tool finder; in the tools object it is the AI SDK's `toolSearch()`, searching with it. */
const TOOL_SEARCH = "tool_search";

export interface ToolbeltToolsOptions {
  /**
   * Who an approval given through the AI SDK's tool approvals is recorded as: the `by` of the
   * session's `approval_resolved` event. Default `"ai-sdk"`.
   */
  approvedBy?: string;
  /** How many deferred tools one `tool_search` may bind (1–20; default 5). */
  toolSearchMaxResults?: number;
}

/** The approval rule of one toolbelt tool, as the AI SDK's `toolApproval` map takes it. */
export type ToolbeltApproval = (
  input: unknown,
  options: { toolCallId: string; messages: ModelMessage[] },
) => Promise<ToolApprovalStatus>;

export interface ToolbeltAiSdk {
  /**
   * The session's tools as AI SDK tools (dynamic tools: the set is known only at run time), keyed by
   * the name the model sees. Deferred tools are there with `deferLoading`, behind `tool_search`.
   */
  tools: ToolSet;
  /**
   * For `generateText`/`streamText`/`ToolLoopAgent`'s `toolApproval`: a call toolbelt's policy would ask
   * about becomes an AI SDK approval request (its `reason` is what toolbelt would show an approver).
   */
  toolApproval: Record<string, ToolbeltApproval>;
}

/**
 * The session's tools for the AI SDK. Each tool's input schema is toolbelt's JSON Schema
 * (`jsonSchema()`); `execute` runs `session.call` with the step's abort signal, the AI SDK's
 * `toolCallId` as the call id (so the session's events name the same call), and — when the call comes
 * back approved through the AI SDK's tool approvals — that approval, so toolbelt does not ask again.
 * The result is the structured payload (for UIs); the model reads toolbelt's text (`toModelOutput`).
 *
 * Build it for each generation: it reflects the session's tools now (tools `tool_search` bound, MCP
 * servers' tools, a switched project).
 */
export function createToolbeltTools(session: Session, options: ToolbeltToolsOptions = {}): ToolbeltAiSdk {
  const by = options.approvedBy ?? "ai-sdk";
  const maxResults = options.toolSearchMaxResults ?? 5;
  if (!Number.isInteger(maxResults) || maxResults < 1 || maxResults > 20)
    throw new ToolbeltError(
      "EINVAL_INPUT",
      `toolSearchMaxResults must be an integer from 1 to 20, got ${String(maxResults)}`,
    );
  const tools: ToolSet = {};
  const toolApproval: Record<string, ToolbeltApproval> = {};
  for (const binding of session.bindings()) {
    if (binding.name === TOOL_SEARCH) {
      tools[TOOL_SEARCH] = searchTool(session, maxResults);
      continue;
    }
    tools[binding.name] = aiTool(session, binding, by);
    toolApproval[binding.name] = async (input) => {
      const check = await session.checkCall(binding.name, input);
      // Only an ask becomes the AI SDK's approval flow: a deny runs into toolbelt's own refusal
      // (EDENIED, with its events), and an allow runs.
      return check.decision === "ask" ? { type: "user-approval", reason: check.summary } : undefined;
    };
  }
  return { tools, toolApproval };
}

function aiTool(session: Session, binding: Binding, by: string): Tool {
  const name = binding.name;
  return dynamicTool({
    description: binding.variant?.description ?? binding.tool.description,
    // No validate function: toolbelt validates the input itself and answers EINVAL_INPUT in its own words.
    inputSchema: jsonSchema(
      toolJsonSchema(binding.tool, binding.variant?.input) as Parameters<typeof jsonSchema>[0],
    ),
    ...(binding.deferred ? { deferLoading: true } : {}),
    execute: (input, { toolCallId, messages, abortSignal }) => {
      const approved = approvedInMessages(messages, { toolCallId, toolName: name, input });
      return session.call(name, input, {
        callId: toolCallId,
        ...(abortSignal ? { signal: abortSignal } : {}),
        ...(approved ? { approval: { by } } : {}),
      });
    },
    toModelOutput: ({ output }) =>
      modelOutput(session.renderResult(name, output as Payload), output as Payload),
  });
}

/** What the model reads: toolbelt's text; an error as an error; an image as an image with its text. */
function modelOutput(text: string, payload: Payload): ToolResultOutput {
  if (payload.kind === "error") return { type: "error-text", value: text };
  const image = payload as { kind: string; base64?: unknown; mime_type?: unknown };
  if (image.kind === "image" && typeof image.base64 === "string" && typeof image.mime_type === "string")
    return {
      type: "content",
      value: [
        { type: "text", text },
        { type: "file", mediaType: image.mime_type, data: { type: "data", data: image.base64 } },
      ],
    };
  return { type: "text", value: text };
}

/**
 * The AI SDK's own tool search over the deferred tools, ranked and bound by toolbelt's `tool_search`
 * (a real call: its events, and the session's tools bound for every later generation too). The AI SDK
 * makes the matches callable from the next step.
 */
function searchTool(session: Session, maxResults: number): Tool {
  return toolSearch({
    maxResults,
    search: async ({ query }) => {
      const found = await session.call(TOOL_SEARCH, { query, max_results: maxResults });
      if (found.kind === "error") throw new ToolbeltError(found.code, found.message);
      return found.kind === "tool_search_results" ? found.bound : [];
    },
  });
}
