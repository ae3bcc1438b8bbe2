import { isDeepStrictEqual } from "node:util";
import type { ModelMessage } from "ai";

/**
 * Whether the messages a tool call is executed with carry a person's approval of that very call:
 * the AI SDK runs an approved call on the next `generateText`/`streamText`, whose messages end with
 * the tool message holding the `tool-approval-response`. Read exactly as the SDK reads them to decide
 * to run the call — the response in the last message, its request naming this call's id, the call
 * itself with this name and input — and only for a request a person answered (`isAutomatic` is the
 * app's own policy, not a person, so toolbelt's policy still decides those).
 */
export function approvedInMessages(
  messages: readonly ModelMessage[],
  call: { toolCallId: string; toolName: string; input: unknown },
): boolean {
  const last = messages.at(-1);
  if (last?.role !== "tool") return false;
  const approved = new Set<string>();
  for (const part of last.content)
    if (part.type === "tool-approval-response" && part.approved === true) approved.add(part.approvalId);
  if (approved.size === 0) return false;
  let requested = false;
  let sameCall = false;
  for (const message of messages) {
    if (message.role !== "assistant" || typeof message.content === "string") continue;
    for (const part of message.content) {
      if (
        part.type === "tool-approval-request" &&
        part.toolCallId === call.toolCallId &&
        part.isAutomatic !== true &&
        approved.has(part.approvalId)
      )
        requested = true;
      if (
        part.type === "tool-call" &&
        part.toolCallId === call.toolCallId &&
        part.toolName === call.toolName &&
        isDeepStrictEqual(part.input, call.input)
      )
        sameCall = true;
    }
  }
  return requested && sameCall;
}
