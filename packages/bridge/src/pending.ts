import { type ApprovalPrompt, ToolbeltError } from "@toolbelt/core";
import type { QuestionRequest, QuestionResponse } from "@toolbelt/ui/contrib";
import type { PendingListing } from "./wire.js";

type Waiter<T> = { settle: (value: T) => void; fail: (error: Error) => void };

const DEFAULT_APPROVAL_TIMEOUT_MS = 10 * 60_000;

/**
 * Approvals and questions of a session waiting for an answer from outside (a POST over HTTP, a
 * click in the console). The session's ClientInfo.approve / ClientInfo.ask call into it.
 */
export class PendingRequests {
  readonly #approvals = new Map<string, { prompt: ApprovalPrompt } & Waiter<boolean>>();
  readonly #questions = new Map<string, { request: QuestionRequest } & Waiter<QuestionResponse>>();
  readonly #approvalTimeoutMs: number;

  constructor(options: { approvalTimeoutMs?: number } = {}) {
    this.#approvalTimeoutMs = options.approvalTimeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS;
  }

  /**
   * Waits for a POST; nobody answering within the timeout is a denial, never a silent allow.
   * `signal` is the caller's: when it aborts (the caller hung up) the approval is withdrawn and the
   * promise rejects with the reason, which the session reports as a denial naming it.
   */
  approve(prompt: ApprovalPrompt, signal?: AbortSignal): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        this.#approvals.delete(prompt.request_id);
      };
      const timer = setTimeout(() => {
        done();
        resolve(false);
      }, this.#approvalTimeoutMs);
      timer.unref?.();
      const settle = (value: boolean) => {
        done();
        resolve(value);
      };
      const onAbort = () => {
        done();
        const reason: unknown = signal?.reason;
        reject(
          // A bare abort() carries a generic AbortError: say what it means here instead.
          reason instanceof Error && reason.name !== "AbortError"
            ? reason
            : new ToolbeltError("ECANCELLED", `approval ${prompt.request_id} was withdrawn by its caller`),
        );
      };
      if (signal?.aborted) return onAbort();
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#approvals.set(prompt.request_id, { prompt, settle, fail: () => settle(false) });
    });
  }

  /**
   * Waits for the answer to a question until it comes or `signal` aborts (ECANCELLED). No timeout
   * here on purpose: ask_user_question stops waiting itself and still takes a late answer.
   */
  ask(request: QuestionRequest, signal?: AbortSignal): Promise<QuestionResponse> {
    return new Promise<QuestionResponse>((resolve, reject) => {
      const id = request.question_id;
      const cleanup = () => {
        signal?.removeEventListener("abort", onAbort);
        this.#questions.delete(id);
      };
      const onAbort = () => {
        cleanup();
        reject(new ToolbeltError("ECANCELLED", `question ${id} was cancelled`));
      };
      if (signal?.aborted) return onAbort();
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#questions.set(id, {
        request,
        settle: (value) => {
          cleanup();
          resolve(value);
        },
        fail: (error) => {
          cleanup();
          reject(error);
        },
      });
    });
  }

  list(): PendingListing {
    return {
      questions: [...this.#questions.values()].map(({ request }) => ({
        question_id: request.question_id,
        questions: request.questions,
        ...(request.timeout_seconds !== undefined ? { timeout_seconds: request.timeout_seconds } : {}),
      })),
      approvals: [...this.#approvals.values()].map(({ prompt }) => ({ ...prompt })),
    };
  }

  /** False when no approval with that id is waiting (already answered, timed out or unknown). */
  answerApproval(requestId: string, approved: boolean): boolean {
    const entry = this.#approvals.get(requestId);
    if (!entry) return false;
    entry.settle(approved);
    return true;
  }

  answerQuestion(questionId: string, response: QuestionResponse): boolean {
    const entry = this.#questions.get(questionId);
    if (!entry) return false;
    entry.settle(response);
    return true;
  }

  /** Denies every approval and fails every question (the session is closing). */
  close(): void {
    for (const entry of [...this.#approvals.values()]) entry.settle(false);
    for (const entry of [...this.#questions.values()])
      entry.fail(new ToolbeltError("EUNAVAILABLE", "the session closed before the question was answered"));
  }
}
