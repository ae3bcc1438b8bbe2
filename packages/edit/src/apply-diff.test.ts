import { createTwoFilesPatch, FILE_HEADERS_ONLY } from "diff";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { unifiedDiff } from "./apply.js";

const reference = (before: string, after: string) =>
  createTwoFilesPatch("a/f.txt", "b/f.txt", before, after, undefined, undefined, {
    context: 3,
    headerOptions: FILE_HEADERS_ONLY,
  });

describe("unifiedDiff", () => {
  it("gives the same patch as a whole-file diff for small edits", () => {
    const line = fc.constantFrom("a", "b", "c", "", "  x", "d\r");
    const text = fc
      .array(line, { maxLength: 30 })
      .chain((lines) =>
        fc
          .boolean()
          .map((endsWithNewline) => lines.join("\n") + (endsWithNewline && lines.length ? "\n" : "")),
      );
    fc.assert(
      fc.property(text, text, (before, after) => {
        expect(unifiedDiff("f.txt", before, after, false).diff).toBe(reference(before, after));
      }),
      { numRuns: 500 },
    );
  });

  it("counts added and removed lines from the hunks, not from the truncated text", () => {
    const before = Array.from({ length: 1000 }, (_, i) => `old ${i}`).join("\n");
    const after = Array.from({ length: 1000 }, (_, i) => `new ${i}`).join("\n");
    const out = unifiedDiff("f.txt", before, after, false);
    expect(out.removed).toBe(1000);
    expect(out.added).toBe(1000);
    expect(out.diff).toContain("diff truncated");
  });

  it("replacing a 20k-line span of a 100k-line file costs the change, not a minimal-diff search", () => {
    const lines = Array.from({ length: 100_000 }, (_, i) => `line ${i} ${i % 7 === 0 ? "x" : "y"}`);
    const before = `${lines.join("\n")}\n`;
    const after = `${[...lines.slice(0, 40_000), "replacement", ...lines.slice(60_000)].join("\n")}\n`;
    const out = unifiedDiff("f.txt", before, after, false);
    expect(out.removed).toBe(20_000);
    expect(out.added).toBe(1);
    expect(out.diff).toContain("@@ -39998,20006 +39998,7 @@");
    expect(out.diff.startsWith("--- a/f.txt\n+++ b/f.txt\n")).toBe(true);
  });
});
