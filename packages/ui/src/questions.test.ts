import { existsSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { type ClientInfo, createSession, type Session, type ToolbeltEvent } from "@toolbelt/core";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { checkQuestionResponse, type QuestionRequest } from "./contrib.js";
import { answerQuestion, family, pendingQuestions, takeLateAnswers } from "./index.js";
import { questionsFile } from "./questions.js";

let root: string;
const open: Session[] = [];
// Open questions are saved under the state dir: a private one keeps these tests out of ~/.toolbelt.
const stateDir = mkdtempSync(path.join(os.tmpdir(), "tb-ask-state-"));
const savedStateDir = process.env.TOOLBELT_STATE_DIR;
beforeAll(() => {
  process.env.TOOLBELT_STATE_DIR = stateDir;
});
afterAll(() => {
  if (savedStateDir === undefined) delete process.env.TOOLBELT_STATE_DIR;
  else process.env.TOOLBELT_STATE_DIR = savedStateDir;
  rmSync(stateDir, { recursive: true, force: true });
});
beforeEach(() => {
  root = mkdtempSync(path.join(os.tmpdir(), "tb-ask-"));
});
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
  rmSync(root, { recursive: true, force: true });
});

async function session(client?: ClientInfo): Promise<Session> {
  const s = await createSession({ root, plugins: [family], ...(client ? { client } : {}) });
  open.push(s);
  return s;
}

const DB = {
  question: "Which database?",
  header: "DB",
  options: ["Postgres", "SQLite", "MySQL"],
};
const FEATURES = { question: "Which features?", options: ["auth", "search", "billing"], multiple: true };

function recorder(s: Session) {
  const events: ToolbeltEvent[] = [];
  s.on("*", (e) => {
    if (e.type === "question" || e.type === "question_answered") events.push(e);
  });
  return events;
}

/** A promise and the function that settles it: a client that answers when the test says so. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}
/** Until the call has opened its question (waiting on the state, not on a guess at how long it takes). */
const asked = (s: Session) =>
  expect.poll(() => pendingQuestions(s).length, { timeout: 10_000 }).toBeGreaterThan(0);

describe("binding", () => {
  it("is bound only for the root agent of a client that can ask; a headless session never binds it", async () => {
    const headless = await session();
    expect(headless.bind().tools.map((t) => t.name)).not.toContain("ask_user_question");
    expect(await headless.call("ask_user_question", { questions: [DB] })).toMatchObject({
      code: "EUNKNOWN_TOOL",
    });
    const noCapability = await session({ ask: async () => ({ answers: [] }) });
    expect(noCapability.bind().tools.map((t) => t.name)).not.toContain("ask_user_question");
    const asker = await session({ capabilities: ["ask_user"] });
    expect(asker.bind().tools.map((t) => t.name)).toContain("ask_user_question");
    const child = await asker.fork();
    expect(child.bind().tools.map((t) => t.name)).not.toContain("ask_user_question");
  });
});

describe("answers", () => {
  it("blocks until the client answers; options come back as labels, notes kept", async () => {
    let seen: QuestionRequest | undefined;
    const answer = gate();
    const s = await session({
      capabilities: ["ask_user"],
      ask: async (request) => {
        seen = request;
        await answer.opened;
        return { answers: [{ options: [1] }, { options: [0, 2] }], notes: "keep it small" };
      },
    });
    const events = recorder(s);
    let returned = false;
    const call = s.callWithText("ask_user_question", { questions: [DB, FEATURES] }).finally(() => {
      returned = true;
    });
    // The client has the question and has not answered: the call is still waiting.
    await expect.poll(() => seen, { timeout: 10_000 }).toBeDefined();
    await new Promise((r) => setImmediate(r));
    expect(returned).toBe(false);
    answer.open();
    const { payload, text } = await call;
    expect(payload).toMatchObject({
      kind: "question_answers",
      answers: [
        { question: "Which database?", selected: ["SQLite"] },
        { question: "Which features?", selected: ["auth", "billing"] },
      ],
      notes: "keep it small",
    });
    expect(seen?.questions[0]).toMatchObject({ header: "DB", options: DB.options });
    expect(events.map((e) => e.type)).toEqual(["question", "question_answered"]);
    expect(events[1]).toMatchObject({
      question_id: seen?.question_id,
      answers: [{ options: [1] }, { options: [0, 2] }],
    });
    expect(events[1]).not.toHaveProperty("late");
    expect(text).toContain("A1: SQLite");
    expect(text).toContain("Notes: keep it small");
  });

  it("takes free text instead of options, never both; a bad answer leaves the question open", async () => {
    const s = await session({ capabilities: ["ask_user"] });
    const call = s.call("ask_user_question", { questions: [DB] });
    await asked(s);
    const [pending] = pendingQuestions(s);
    expect(pending).toMatchObject({ status: "waiting", questions: [{ question: "Which database?" }] });
    const id = pending?.question_id as string;
    const both = answerQuestion(s, id, { answers: [{ options: [0], text: "DuckDB" }] });
    expect(both).toMatchObject({
      kind: "error",
      code: "EINVAL_INPUT",
      message: expect.stringContaining("never both"),
    });
    expect(answerQuestion(s, id, { answers: [{ options: [0, 1] }] })).toMatchObject({
      code: "EINVAL_INPUT",
      message: expect.stringContaining("one option"),
    });
    expect(answerQuestion(s, id, { answers: [{ options: [7] }] })).toMatchObject({ code: "EINVAL_INPUT" });
    expect(answerQuestion(s, id, { answers: [] })).toMatchObject({ code: "EINVAL_INPUT" });
    expect(pendingQuestions(s)).toHaveLength(1);
    expect(answerQuestion(s, id, { answers: [{ text: "DuckDB" }] })).toEqual({
      kind: "question_answered",
      question_id: id,
      late: false,
    });
    expect(await call).toMatchObject({ kind: "question_answers", answers: [{ text: "DuckDB" }] });
    expect(pendingQuestions(s)).toEqual([]);
    expect(answerQuestion(s, id, { answers: [{ text: "again" }] })).toMatchObject({ code: "ENOENT" });
  });

  it("refuses an invalid answer from the client as an error result, not a crash", async () => {
    const s = await session({
      capabilities: ["ask_user"],
      ask: async () => ({ answers: [{ options: [9] }] }),
    });
    expect(await s.call("ask_user_question", { questions: [DB] })).toMatchObject({
      kind: "error",
      code: "EINVAL_INPUT",
      message: expect.stringContaining("the client's answer"),
    });
    const broken = await session({
      capabilities: ["ask_user"],
      ask: async () => {
        throw new Error("no tty");
      },
    });
    expect(await broken.call("ask_user_question", { questions: [DB] })).toMatchObject({
      code: "EUNAVAILABLE",
      message: expect.stringContaining("no tty"),
    });
  });
});

describe("timeouts and late answers", () => {
  it("a timeout is a readable result; the question stays answerable and a late answer is an event + queue", async () => {
    const s = await session({ capabilities: ["ask_user"] });
    const events = recorder(s);
    const { payload, text } = await s.callWithText("ask_user_question", {
      questions: [DB],
      timeout_seconds: 0.05,
    });
    expect(payload).toMatchObject({ kind: "question_pending", waited_seconds: 0.05 });
    expect(text).toContain("stays open");
    const id = payload.question_id as string;
    expect(pendingQuestions(s)).toMatchObject([{ question_id: id, status: "timed_out" }]);
    expect(takeLateAnswers(s)).toEqual([]);

    expect(answerQuestion(s, id, { answers: [{ options: [0] }] })).toMatchObject({ late: true });
    expect(events.at(-1)).toMatchObject({ type: "question_answered", question_id: id, late: true });
    const late = takeLateAnswers(s);
    expect(late).toMatchObject([{ question_id: id, answers: [{ selected: ["Postgres"] }] }]);
    expect(late[0]?.text).toContain("# Late: true");
    expect(takeLateAnswers(s)).toEqual([]);
    expect(pendingQuestions(s)).toEqual([]);
  });

  it("a client that answers after the timeout still delivers, as a late question_answered event", async () => {
    const timedOut = gate();
    const s = await session({
      capabilities: ["ask_user"],
      ask: async () => {
        // The client answers once the call has already returned question_pending.
        await timedOut.opened;
        return { answers: [{ text: "whatever is simplest" }] };
      },
    });
    const events = recorder(s);
    const late = new Promise<ToolbeltEvent>((resolve) => s.on("question_answered", resolve));
    const result = await s.call("ask_user_question", { questions: [DB], timeout_seconds: 0.02 });
    expect(result.kind).toBe("question_pending");
    timedOut.open();
    expect(await late).toMatchObject({ late: true, answers: [{ text: "whatever is simplest" }] });
    expect(events.map((e) => e.type)).toEqual(["question", "question_answered"]);
    expect(takeLateAnswers(s)[0]?.text).toContain("whatever is simplest");
  });
});

describe("superseding and cancelling", () => {
  it("a new user message supersedes a pending question and aborts the client's prompt", async () => {
    let aborted = false;
    const s = await session({
      capabilities: ["ask_user"],
      ask: (_request, signal) =>
        new Promise((_resolve, reject) => {
          signal.addEventListener("abort", () => {
            aborted = true;
            reject(signal.reason);
          });
        }),
    });
    const events = recorder(s);
    const call = s.call("ask_user_question", { questions: [DB] });
    await asked(s);
    s.userMessage("never mind, use SQLite and move on");
    expect(await call).toMatchObject({
      kind: "question_superseded",
      user_message: "never mind, use SQLite and move on",
    });
    expect(aborted).toBe(true);
    expect(events.at(-1)).toMatchObject({ type: "question_answered", superseded: true, answers: [] });
    expect(pendingQuestions(s)).toEqual([]);
  });

  it("a user message leaves a timed-out question answerable: its answer arrives late, as a new message", async () => {
    const s = await session({ capabilities: ["ask_user"] });
    const result = await s.call("ask_user_question", { questions: [DB], timeout_seconds: 0.01 });
    s.userMessage("new topic");
    expect(pendingQuestions(s)).toMatchObject([{ question_id: result.question_id, status: "timed_out" }]);
    expect(answerQuestion(s, result.question_id as string, { answers: [{ options: [0] }] })).toMatchObject({
      late: true,
    });
    expect(takeLateAnswers(s)).toMatchObject([
      { question_id: result.question_id, answers: [{ selected: ["Postgres"] }] },
    ]);
  });

  it("cancelling the call returns ECANCELLED and closes the question", async () => {
    const s = await session({ capabilities: ["ask_user"] });
    const controller = new AbortController();
    const call = s.call("ask_user_question", { questions: [DB] }, { signal: controller.signal });
    await asked(s);
    controller.abort();
    expect(await call).toMatchObject({ kind: "error", code: "ECANCELLED" });
    expect(pendingQuestions(s)).toEqual([]);
  });
});

describe("open questions across a restart", () => {
  it("a timed-out question survives the session: a new one on the root takes its answer as a late answer", async () => {
    const first = await session({ capabilities: ["ask_user"] });
    const pending = await first.call("ask_user_question", { questions: [DB], timeout_seconds: 0.01 });
    expect(pending.kind).toBe("question_pending");
    const id = String(pending.question_id);
    const file = questionsFile(first) as string;
    expect(file.startsWith(stateDir)).toBe(true);
    await first.close();
    expect(existsSync(file)).toBe(true);

    const second = await session({ capabilities: ["ask_user"] });
    expect(pendingQuestions(second)).toMatchObject([{ question_id: id, status: "timed_out" }]);
    expect(answerQuestion(second, id, { answers: [{ options: [1] }] })).toMatchObject({ late: true });
    await second.close();

    // The late answer is not lost either: the next session hands it over once.
    const third = await session({ capabilities: ["ask_user"] });
    expect(pendingQuestions(third)).toEqual([]);
    const late = takeLateAnswers(third);
    expect(late).toMatchObject([{ question_id: id, answers: [{ selected: ["SQLite"] }] }]);
    expect(late[0]?.text).toContain("Late: true");
    expect(takeLateAnswers(third)).toEqual([]);
    expect(existsSync(file)).toBe(false);
  });

  it("a user message leaves a restored question open: no call waits on it, so nothing is superseded", async () => {
    const first = await session({ capabilities: ["ask_user"] });
    const pending = await first.call("ask_user_question", { questions: [DB], timeout_seconds: 0.01 });
    await first.close();
    const second = await session({ capabilities: ["ask_user"] });
    expect(pendingQuestions(second).map((q) => q.question_id)).toEqual([pending.question_id]);
    second.userMessage("never mind, use SQLite");
    expect(pendingQuestions(second).map((q) => q.question_id)).toEqual([pending.question_id]);
    expect(
      answerQuestion(second, String(pending.question_id), { answers: [{ text: "SQLite" }] }),
    ).toMatchObject({
      late: true,
    });
    expect(takeLateAnswers(second)).toMatchObject([{ question_id: pending.question_id }]);
    expect(existsSync(questionsFile(second) as string)).toBe(false);
  });
});

describe("checkQuestionResponse (the one answer check)", () => {
  const request: QuestionRequest = {
    question_id: "q1",
    questions: [
      { question: "Which?", options: ["a", "b"] },
      { question: "Which ones?", options: ["x", "y", "z"], multiple: true },
    ],
  };

  it("keeps option indexes or text per question, and nothing else", () => {
    expect(
      checkQuestionResponse(request, {
        answers: [{ options: [0], extra: 1 }, { options: [0, 2] }],
        notes: "n",
        more: true,
      }),
    ).toEqual({ answers: [{ options: [0] }, { options: [0, 2] }], notes: "n" });
    expect(checkQuestionResponse(request, { answers: [{ text: "mine" }, { options: [1] }] })).toEqual({
      answers: [{ text: "mine" }, { options: [1] }],
    });
  });

  it.each([
    ["yes", /answers: \[/],
    [{ answers: [{ options: [0] }] }, /expected 2 answer/],
    [{ answers: [{ options: [0, 1] }, { options: [0] }] }, /takes one option/],
    [{ answers: [{ options: [7] }, { options: [0] }] }, /from 0 to 1/],
    [{ answers: [{ options: [0] }, { options: [1, 1] }] }, /chosen twice/],
    [{ answers: [{ options: [0], text: "a" }, { options: [0] }] }, /never both/],
    [{ answers: [{ text: "  " }, { options: [0] }] }, /option indexes or free text/],
    [{ answers: [{}, { options: [0] }] }, /option indexes or free text/],
    [{ answers: [{ options: "01" }, { options: [0] }] }, /options must be an array/],
    [{ answers: [{ text: 5 }, { options: [0] }] }, /text must be a string/],
    [{ answers: [{ options: [0] }, { options: [0] }], notes: 3 }, /notes must be a string/],
  ])("refuses %j", (value, why) => {
    expect(checkQuestionResponse(request, value)).toMatch(why);
  });
});
