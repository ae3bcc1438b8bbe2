import { describe, expect, it } from "vitest";
import { PendingRequests } from "./pending.js";

const prompt = { request_id: "r1", tool: "shell", family: "shell", access: "execute", summary: "shell: ls" };
const question = {
  question_id: "q1",
  questions: [
    { question: "Which?", options: ["a", "b"] },
    { question: "Which ones?", options: ["x", "y", "z"], multiple: true },
  ],
};

describe("PendingRequests", () => {
  it("resolves an approval from its answer and lists it until then", async () => {
    const pending = new PendingRequests();
    const approval = pending.approve(prompt);
    expect(pending.list().approvals).toEqual([prompt]);
    expect(pending.answerApproval("nope", true)).toBe(false);
    expect(pending.answerApproval("r1", true)).toBe(true);
    expect(await approval).toBe(true);
    expect(pending.list().approvals).toEqual([]);
  });

  it("withdraws an approval when its caller's signal aborts, rejecting with the reason", async () => {
    const pending = new PendingRequests();
    const caller = new AbortController();
    const approval = pending.approve(prompt, caller.signal);
    expect(pending.list().approvals).toHaveLength(1);
    caller.abort(new Error("the HTTP caller disconnected"));
    await expect(approval).rejects.toThrow("the HTTP caller disconnected");
    expect(pending.list().approvals).toEqual([]);
    expect(pending.answerApproval("r1", true)).toBe(false);
    const early = new AbortController();
    early.abort();
    await expect(pending.approve(prompt, early.signal)).rejects.toThrow(/withdrawn/);
  });

  it("denies an approval nobody answers in time", async () => {
    const pending = new PendingRequests({ approvalTimeoutMs: 20 });
    expect(await pending.approve(prompt)).toBe(false);
  });

  it("answers a question, and fails it as cancelled when its signal aborts", async () => {
    const pending = new PendingRequests();
    const asked = pending.ask(question);
    expect(pending.list().questions[0]?.question_id).toBe("q1");
    pending.answerQuestion("q1", { answers: [{ options: [1] }, { text: "both" }] });
    expect(await asked).toEqual({ answers: [{ options: [1] }, { text: "both" }] });
    const controller = new AbortController();
    const cancelled = pending.ask({ ...question, question_id: "q2" }, controller.signal);
    controller.abort();
    await expect(cancelled).rejects.toMatchObject({ code: "ECANCELLED" });
  });

  it("denies and fails everything still waiting when closed", async () => {
    const pending = new PendingRequests();
    const approval = pending.approve(prompt);
    const asked = pending.ask(question);
    pending.close();
    expect(await approval).toBe(false);
    await expect(asked).rejects.toMatchObject({ code: "EUNAVAILABLE" });
  });
});
