import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import {
  APPLY_CLASSES,
  buildCases,
  CLASSES,
  judge,
  REFUSE_CLASSES,
  rng,
  sourceFiles,
} from "../../../benchmarks/edit-accuracy/corpus.mjs";
import { decodeDocument, encodeDocument } from "./document.js";
import { planEdit } from "./edit-file.js";
import { isFailure } from "./match-report.js";

// A small run of benchmarks/edit-accuracy: real third-party files from node_modules, every perturbation class.
const repo = fileURLToPath(new URL("../../../", import.meta.url));

describe("edit accuracy on real files (small corpus)", () => {
  const all = sourceFiles(path.join(repo, "node_modules"));
  const rand = rng(11);
  const files = [...all].sort(() => rand() - 0.5).slice(0, 16);
  const cases = buildCases(files, { perClass: 10, seed: 5 });

  it("builds cases of every class from real files", () => {
    expect(files.length).toBeGreaterThan(5);
    for (const cls of CLASSES) expect(cases.filter((c) => c.cls === cls).length).toBeGreaterThan(3);
  });

  it("never applies an edit wrongly, refuses duplicates and near misses, applies >= 95% of the rest", () => {
    const tally = new Map<string, { correct: number; refused: number; wrong: number }>();
    const wrong: string[] = [];
    for (const c of cases) {
      const doc = decodeDocument(new TextEncoder().encode(c.content), "case");
      const planned = planEdit(doc, c.oldText, c.newText);
      const after = isFailure(planned) ? undefined : encodeDocument(planned.after);
      const verdict = judge(c, after);
      const t = tally.get(c.cls) ?? { correct: 0, refused: 0, wrong: 0 };
      t[verdict]++;
      tally.set(c.cls, t);
      if (verdict === "wrong") wrong.push(`${c.cls} in ${path.relative(repo, c.source)}`);
    }
    expect(wrong).toEqual([]);
    for (const cls of REFUSE_CLASSES) expect(tally.get(cls)?.correct ?? 0).toBe(0);
    const applyTotal = APPLY_CLASSES.reduce(
      (n, cls) => n + Object.values(tally.get(cls) ?? {}).reduce((a, b) => a + b, 0),
      0,
    );
    const applied = APPLY_CLASSES.reduce((n, cls) => n + (tally.get(cls)?.correct ?? 0), 0);
    expect(applied / applyTotal).toBeGreaterThanOrEqual(0.95);
  });
});
