import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ToolbeltError } from "@toolbelt/core";
import { BudgetedWorker } from "@toolbelt/core/internal";
import { describe, expect, it, vi } from "vitest";
import { SEARCH_BUDGET_BASE_MS, searchWithJs } from "./js-search.js";
import { compileQuery } from "./regex.js";

// `!y` puts the x line past the literal prefilter of `(x+x+)+y`.
function tree(): string {
  const root = mkdtempSync(path.join(tmpdir(), "toolbelt-js-search-"));
  writeFileSync(path.join(root, "evil.txt"), `${"a".repeat(48)}!\n${"x".repeat(48)}!y\n`);
  writeFileSync(path.join(root, "ok.txt"), "fine line\n");
  return root;
}

const search = (root: string, query: string, signal?: AbortSignal) =>
  searchWithJs({
    root,
    start: root,
    isFile: false,
    query: compileQuery(query),
    maxMatches: 100,
    ...(signal ? { signal } : {}),
  });

describe("searchWithJs bounds", () => {
  it.each(["(a+)+$", "(x+x+)+y", "(a|aa)+$"])(
    "answers ETIMEOUT naming the budget for %s, keeps the event loop free, and searches again afterwards",
    async (query) => {
      const root = tree();
      let ticks = 0;
      const timer = setInterval(() => ticks++, 20);
      const error = await search(root, query).catch((e: unknown) => e);
      clearInterval(timer);
      expect(ToolbeltError.isInstance(error)).toBe(true);
      expect((error as ToolbeltError).code).toBe("ETIMEOUT");
      expect((error as ToolbeltError).message).toContain(`budget of ${SEARCH_BUDGET_BASE_MS + 1} ms`);
      expect((error as ToolbeltError).message).toContain("evil.txt");
      expect(ticks).toBeGreaterThan(10);
      const again = await search(root, "fine");
      expect(again.files.map((f) => f.path)).toEqual(["ok.txt"]);
    },
  );

  it("stops a runaway search as soon as it is aborted", async () => {
    const root = tree();
    const controller = new AbortController();
    // Aborted once the text is in the worker's hands, where the pattern backtracks (the real worker
    // runs it: the spy only watches for the hand-off).
    const run = BudgetedWorker.prototype.run;
    const handedOff = vi.spyOn(BudgetedWorker.prototype, "run").mockImplementation(function (
      this: BudgetedWorker,
      ...args: Parameters<BudgetedWorker["run"]>
    ) {
      const pending = run.apply(this, args);
      controller.abort();
      return pending;
    });
    try {
      const error = await search(root, "(a+)+$", controller.signal).catch((e: unknown) => e);
      expect(handedOff).toHaveBeenCalled();
      expect((error as ToolbeltError).code).toBe("ECANCELLED");
    } finally {
      handedOff.mockRestore();
    }
  });
});
