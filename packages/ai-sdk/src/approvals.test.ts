import type { ModelMessage } from "ai";
import { describe, expect, it } from "vitest";
import { approvedInMessages } from "./approvals.js";

const call = { toolCallId: "c1", toolName: "shell", input: { command: "make" } };

function history(options: {
  approved?: boolean;
  isAutomatic?: boolean;
  input?: unknown;
  after?: ModelMessage[];
}) {
  const messages: ModelMessage[] = [
    { role: "user", content: "build it" },
    {
      role: "assistant",
      content: [
        {
          type: "tool-call",
          toolCallId: "c1",
          toolName: "shell",
          input: options.input ?? { command: "make" },
        },
        {
          type: "tool-approval-request",
          approvalId: "a1",
          toolCallId: "c1",
          ...(options.isAutomatic ? { isAutomatic: true } : {}),
        },
      ],
    },
    {
      role: "tool",
      content: [{ type: "tool-approval-response", approvalId: "a1", approved: options.approved ?? true }],
    },
    ...(options.after ?? []),
  ];
  return messages;
}

describe("approvedInMessages", () => {
  it("finds the approval a person gave this call", () => {
    expect(approvedInMessages(history({}), call)).toBe(true);
  });

  it("is false for a denial, another call, other input, an automatic approval, or an older exchange", () => {
    expect(approvedInMessages(history({ approved: false }), call)).toBe(false);
    expect(approvedInMessages(history({}), { ...call, toolCallId: "c2" })).toBe(false);
    expect(approvedInMessages(history({}), { ...call, toolName: "write_file" })).toBe(false);
    expect(approvedInMessages(history({ input: { command: "make install" } }), call)).toBe(false);
    expect(approvedInMessages(history({ isAutomatic: true }), call)).toBe(false);
    // The approval is answered only by the messages that end with it (the generation that runs it).
    expect(approvedInMessages(history({ after: [{ role: "user", content: "and again" }] }), call)).toBe(
      false,
    );
  });
});
