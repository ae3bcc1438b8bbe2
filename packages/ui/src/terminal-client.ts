import { createInterface, type Interface } from "node:readline";
import { type ApprovalPrompt, type ClientInfo, elideMiddle, escapeText } from "@toolbelt/core";
import type { QuestionRequest, QuestionResponse } from "./contrib.js";

/** Approval summaries longer than this show their head and tail and offer the rest (`v`). */
export const APPROVAL_SHOWN_CHARS = 1000;

/** Text the model or a file chose, as a terminal may show it: no control character reaches it raw. */
const shown = (text: string) => escapeText(text, { reversible: false });

export type TerminalClientOptions = {
  /** Where answers are read from (default: process.stdin). */
  input?: NodeJS.ReadableStream;
  /** Where questions are written (default: process.stderr, so stdout stays machine-readable). */
  output?: NodeJS.WritableStream;
  /** Also answer permission prompts on the terminal (default true). */
  approve?: boolean;
  name?: string;
};

/**
 * Parses one typed answer: comma- or space-separated option numbers (1-based, as shown) pick options;
 * anything else is the user's own words. Returns a reason when numbers are out of range.
 */
export function parseTypedAnswer(
  line: string,
  question: QuestionRequest["questions"][number],
): { options: number[] } | { text: string } | { retry: string } {
  const trimmed = line.trim();
  if (trimmed === "")
    return {
      retry: question.options.length ? "type an option number or your own answer" : "type your answer",
    };
  // Without options a typed number is the answer itself (an MCP server's form asking for a number).
  if (question.options.length > 0 && /^\d+([\s,]+\d+)*$/.test(trimmed)) {
    const picked = [...new Set(trimmed.split(/[\s,]+/).map((n) => Number(n) - 1))];
    if (picked.some((n) => n < 0 || n >= question.options.length))
      return { retry: `choose numbers from 1 to ${question.options.length}` };
    if (picked.length > 1 && !question.multiple) return { retry: "choose one option" };
    return { options: picked };
  }
  return { text: trimmed };
}

/**
 * A client for an interactive terminal: asks ask_user_question's questions with readline (numbered
 * options, or the user's own words, then optional notes) and, unless turned off, permission prompts.
 * It advertises `ask_user`; pass it as `client` to createToolbelt/createSession.
 */
export function terminalClient(options: TerminalClientOptions = {}): ClientInfo {
  const input = options.input ?? process.stdin;
  const output = options.output ?? process.stderr;
  // One prompt at a time: parallel tool calls must not interleave questions on one terminal.
  let queue: Promise<unknown> = Promise.resolve();
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const next = queue.then(fn, fn);
    queue = next.catch(() => undefined);
    return next;
  };

  const withLines = async <T>(
    signal: AbortSignal | undefined,
    fn: (ask: (q: string) => Promise<string>) => Promise<T>,
  ): Promise<T> => {
    const rl: Interface = createInterface({ input, output, terminal: false });
    const lines: string[] = [];
    let waiting: ((line: string | undefined) => void) | undefined;
    let ended = false;
    rl.on("line", (line) => {
      if (waiting) {
        const w = waiting;
        waiting = undefined;
        w(line);
      } else lines.push(line);
    });
    rl.on("close", () => {
      ended = true;
      waiting?.(undefined);
    });
    const ask = (prompt: string): Promise<string> => {
      output.write(prompt);
      const queued = lines.shift();
      if (queued !== undefined) return Promise.resolve(queued);
      if (ended) return Promise.reject(new Error("the terminal closed before an answer"));
      return new Promise((resolve, reject) => {
        const onAbort = () => reject(signal?.reason ?? new Error("aborted"));
        signal?.addEventListener("abort", onAbort, { once: true });
        waiting = (line) => {
          signal?.removeEventListener("abort", onAbort);
          if (line === undefined) reject(new Error("the terminal closed before an answer"));
          else resolve(line);
        };
      });
    };
    try {
      return await fn(ask);
    } finally {
      waiting = undefined;
      rl.close();
    }
  };

  const client: ClientInfo = {
    name: options.name ?? "terminal",
    capabilities: ["ask_user"],
    ask: (request, signal) =>
      serial(() =>
        withLines(signal, async (ask): Promise<QuestionResponse> => {
          const answers: QuestionResponse["answers"] = [];
          for (const [i, q] of request.questions.entries()) {
            const title = shown(q.header ? `[${q.header}] ${q.question}` : q.question);
            output.write(
              `\n? ${request.questions.length > 1 ? `(${i + 1}/${request.questions.length}) ` : ""}${title}\n`,
            );
            q.options.forEach((option, n) => {
              output.write(`  ${n + 1}. ${shown(option)}\n`);
            });
            const hint = q.multiple ? "numbers (e.g. 1,3)" : "a number";
            const prompt = q.options.length ? `Answer with ${hint} or your own words: ` : "Answer: ";
            for (;;) {
              const parsed = parseTypedAnswer(await ask(prompt), q);
              if ("retry" in parsed) {
                output.write(`  ${parsed.retry}\n`);
                continue;
              }
              answers.push(parsed);
              break;
            }
          }
          const notes = (await ask("Notes (optional, Enter to skip): ")).trim();
          return notes ? { answers, notes } : { answers };
        }),
      ),
  };
  if (options.approve !== false) {
    client.approve = (prompt: ApprovalPrompt) =>
      serial(() =>
        withLines(undefined, async (ask) => {
          // The summary arrives escaped from core; escaping again here only catches raw controls
          // in summaries from elsewhere, and it never cuts: what is left out is counted and offered.
          const summary = shown(prompt.summary);
          const { head, tail, hidden } = elideMiddle(summary, APPROVAL_SHOWN_CHARS);
          const what = hidden
            ? `${head} … [${hidden} characters hidden, type v to view all] … ${tail}`
            : summary;
          output.write(`\n! ${what} (${shown(prompt.tool)}, ${shown(prompt.access)})\n`);
          for (;;) {
            const reply = (await ask(hidden ? "Allow? [y/N/v] " : "Allow? [y/N] ")).trim().toLowerCase();
            if (hidden && (reply === "v" || reply === "view")) {
              output.write(`${summary}\n`);
              continue;
            }
            return reply === "y" || reply === "yes";
          }
        }),
      ).catch(() => false);
  }
  return client;
}
