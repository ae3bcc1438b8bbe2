import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { PROGRESS_INTERVAL_MS, ProgressThrottle } from "./progress-events.js";
import type { SearchProgress } from "./results.js";

// The clock is vitest's: the interval is stepped through, never slept on.
beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe("ProgressThrottle", () => {
  it("reports the first totals at once, then at most once per interval with the latest", () => {
    const sent: SearchProgress[] = [];
    const throttle = new ProgressThrottle((found) => sent.push(found));
    for (let i = 1; i <= 1000; i++) throttle.update({ files: i, matches: 2 * i });
    expect(sent).toEqual([{ files: 1, matches: 2 }]);
    vi.advanceTimersByTime(PROGRESS_INTERVAL_MS - 1);
    expect(sent).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(sent).toEqual([
      { files: 1, matches: 2 },
      { files: 1000, matches: 2000 },
    ]);
    // Nothing new: nothing sent.
    vi.advanceTimersByTime(10 * PROGRESS_INTERVAL_MS);
    expect(sent).toHaveLength(2);
    // Quiet for longer than the interval: the next totals go out at once again.
    throttle.update({ files: 1001, matches: 2002 });
    expect(sent.at(-1)).toEqual({ files: 1001, matches: 2002 });
  });

  it("sends nothing after stop, not even the totals it was holding", () => {
    const sent: SearchProgress[] = [];
    const throttle = new ProgressThrottle((found) => sent.push(found));
    throttle.update({ files: 1, matches: 1 });
    throttle.update({ files: 2, matches: 2 });
    throttle.stop();
    vi.advanceTimersByTime(10 * PROGRESS_INTERVAL_MS);
    throttle.update({ files: 3, matches: 3 });
    expect(sent).toEqual([{ files: 1, matches: 1 }]);
  });
});
