import { describe, expect, it } from "vitest";
import { fromRaw } from "./document.js";
import { locate, MATCH_BUDGET, type Match, type MatchFailure } from "./matcher.js";

const N = 100_000;
const M = 20_000;
const doc = (lines: string[]) => fromRaw(`${lines.join("\n")}\n`);
const failure = (r: Match | MatchFailure) => r as MatchFailure;

describe("locate on a 100k-line file with a 20k-line search text", () => {
  const distinct = Array.from({ length: N }, (_, i) => `  const v${i} = compute(${i});`);

  it("finds an exact span of distinct lines", () => {
    const old = distinct.slice(40_000, 40_000 + M).join("\n");
    const r = locate(doc(distinct), old, "X") as Match;
    expect(r).toMatchObject({ strategy: "exact", startLine: 40_001, endLine: 40_000 + M });
  });

  it("answers ENO_MATCH for a fuzzy variant that matches nowhere", () => {
    const old = distinct.slice(40_000, 40_000 + M).map((l) => l.trim());
    old[M / 2] = "nowhere();";
    expect(failure(locate(doc(distinct), old.join("\n"), "X")).code).toBe("ENO_MATCH");
  });

  it("refuses a search text repeated all over the file as EMULTI_MATCH, naming the first places", () => {
    const same = Array.from({ length: N }, () => "  x = 1;");
    const exact = failure(locate(doc(same), same.slice(0, M).join("\n"), "X"));
    expect(exact.code).toBe("EMULTI_MATCH");
    expect(exact.message).toMatch(/matches more than 100 places \(starting at lines 1, 2, 3/);
    const reindented = failure(
      locate(
        doc(same),
        same
          .slice(0, M)
          .map((l) => `\t${l.trim()}`)
          .join("\n"),
        "X",
      ),
    );
    expect(reindented).toMatchObject({ code: "EMULTI_MATCH", strategy: "indentation" });
    // Near miss in the middle of a periodic text: the case where a native indexOf is O(n·m).
    const near = same.slice(0, M);
    near[M / 2] = "  x = 2;";
    expect(failure(locate(doc(same), near.join("\n"), "X")).code).toBe("ENO_MATCH");
  });

  it("answers ETOO_LARGE naming the bound when every place needs a full check and none passes", () => {
    // Trimmed lines match at every even line, but the nesting never does: each place costs 20k checks.
    const file = Array.from({ length: N }, (_, i) => (i % 2 ? "b;" : "a;"));
    const search = Array.from({ length: M }, (_, i) => (i % 2 ? "  b;" : "a;"));
    const r = failure(locate(doc(file), search.join("\n"), "X", { label: "old_text" }));
    expect(r.code).toBe("ETOO_LARGE");
    expect(r.message).toContain(`bound of ${MATCH_BUDGET} line comparisons per call`);
    expect(r.message).toContain("old_text (20000 lines)");
  });
});

describe("long search texts (the linear substring search)", () => {
  it("finds the same places as indexOf, overlapping ones included", () => {
    const unit = "ab\nab\na";
    for (let reps = 5; reps < 40; reps += 7) {
      const text = unit.repeat(reps);
      const needle = unit.repeat(5);
      const expected: number[] = [];
      for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + 1)) expected.push(i);
      const r = locate(fromRaw(text), needle, "X");
      if (expected.length === 1) expect((r as Match).start).toBe(expected[0]);
      else expect(failure(r).code).toBe(expected.length === 0 ? "ENO_MATCH" : "EMULTI_MATCH");
    }
  });

  it("matches a unique long span exactly where it is", () => {
    const lines = Array.from({ length: 400 }, (_, i) => `line ${i % 7} ${i % 13} ${i % 11}`);
    const old = lines.slice(100, 160).join("\n");
    const r = locate(fromRaw(lines.join("\n")), old, "NEW") as Match;
    expect(r).toMatchObject({ strategy: "exact", startLine: 101, endLine: 160 });
  });
});
