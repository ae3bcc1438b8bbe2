import { describe, expect, it } from "vitest";
import { ToolbeltError } from "./errors.js";
import { BudgetedWorker, testLinesSafely } from "./safe-regex.js";

const evil = `${"a".repeat(40)}!`;

describe("testLinesSafely", () => {
  it("tests lines like RegExp.test", () => {
    expect(testLinesSafely(/b\d/u, ["ab1", "b", "xb2y"])).toEqual([true, false, true]);
    expect(testLinesSafely(/^x/gm, ["x", "x", "y"])).toEqual([true, true, false]);
  });

  it("stops a catastrophic pattern at its budget with ETIMEOUT naming it, and works again afterwards", () => {
    let error: unknown;
    try {
      testLinesSafely(/(a+)+$/, [evil], { budgetMs: 200, what: "filter" });
    } catch (e) {
      error = e;
    }
    expect(ToolbeltError.isInstance(error)).toBe(true);
    expect((error as ToolbeltError).code).toBe("ETIMEOUT");
    expect((error as ToolbeltError).message).toMatch(
      /filter \/\(a\+\)\+\$\/ did not finish within its budget of 200 ms/,
    );
    expect(testLinesSafely(/a!/, [evil])).toEqual([true]);
  });
});

describe("BudgetedWorker.run", () => {
  const program = `(() => ({ source, text }) => new RegExp(source).test(text))()`;

  it("answers asynchronously and keeps the event loop free while a runaway pattern burns its budget", async () => {
    const worker = new BudgetedWorker(program);
    expect(
      await worker.run<boolean>({ source: "a!", text: evil }, { budgetMs: 1000, timeoutMessage: "t" }),
    ).toBe(true);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 10);
    const outcome = await worker
      .run({ source: "(a+)+$", text: evil }, { budgetMs: 300, timeoutMessage: "over budget" })
      .catch((e: ToolbeltError) => e);
    clearInterval(timer);
    expect((outcome as ToolbeltError).code).toBe("ETIMEOUT");
    expect(ticks).toBeGreaterThan(5);
    expect(
      await worker.run<boolean>({ source: "b", text: "abc" }, { budgetMs: 1000, timeoutMessage: "t" }),
    ).toBe(true);
  });

  it("stops at once on abort", async () => {
    const worker = new BudgetedWorker(program);
    const controller = new AbortController();
    const pending = worker
      .run(
        { source: "(a+)+$", text: evil },
        { budgetMs: 60_000, timeoutMessage: "t", signal: controller.signal },
      )
      .catch((e: ToolbeltError) => e);
    // The request is in the worker's hands once run() returns: the abort ends it there.
    controller.abort();
    expect(((await pending) as ToolbeltError).code).toBe("ECANCELLED");
  });
});
