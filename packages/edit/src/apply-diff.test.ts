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
    // Few distinct lines, so runs of equal lines let the minimal diff place a change in more than one
    // place: the windowed diff must still end every hunk with its full context.
    for (const alphabet of [
      ["a", "b", "c", "", "  x", "d\r"],
      ["a", ""],
      ["a", "b"],
    ]) {
      const line = fc.constantFrom(...alphabet);
      const text = fc
        .array(line, { maxLength: 30 })
        .chain((lines) =>
          fc
            .boolean()
            .map((endsWithNewline) => lines.join("\n") + (endsWithNewline && lines.length ? "\n" : "")),
        );
      // An edit: a few lines removed or inserted at a few places of one text.
      const edited = text.chain((before) =>
        fc.tuple(
          fc.constant(before),
          fc
            .array(fc.tuple(fc.nat(40), fc.nat(3), fc.array(line, { maxLength: 4 })), { maxLength: 3 })
            .map((ops) => {
              const lines = before.split("\n");
              for (const [at, remove, insert] of ops)
                lines.splice(at % (lines.length + 1), remove, ...insert);
              return lines.join("\n");
            }),
        ),
      );
      fc.assert(
        fc.property(fc.oneof(fc.tuple(text, text), edited), ([before, after]) => {
          expect(unifiedDiff("f.txt", before, after, false).diff).toBe(reference(before, after));
        }),
        { numRuns: 1000 },
      );
    }
  });

  it("keeps three lines of context after a change the minimal diff places inside a run of equal lines", () => {
    // CI's counterexample: the common tail starts after "a", but the diff inserts the blank line below it.
    const before = "a\n\nc\nc\nd\r\n";
    const after = "\n\nc\nc\nd\r\n";
    const out = unifiedDiff("f.txt", before, after, false);
    expect(out.diff).toBe(reference(before, after));
    expect(out.diff).toContain("@@ -1,5 +1,5 @@");
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
