import { describe, expect, it } from "vitest";
import { type FileFingerprint, ReadLedger } from "./ledger.js";

const v1: FileFingerprint = { size: 10, mtimeMs: 1, hash: "a" };
const v2: FileFingerprint = { size: 10, mtimeMs: 1, hash: "b" };
const END = Number.POSITIVE_INFINITY;

describe("ReadLedger windows", () => {
  it("merges overlapping and adjacent windows, and reports the seen parts of a window", () => {
    const ledger = new ReadLedger();
    ledger.record("/f", v1, { start: 1, end: 10 });
    ledger.record("/f", v1, { start: 11, end: 20 });
    ledger.record("/f", v1, { start: 40, end: 50 });
    expect(ledger.covers("/f", v1, { start: 5, end: 20 })).toBe(true);
    expect(ledger.covers("/f", v1, { start: 5, end: 21 })).toBe(false);
    expect(ledger.seenWithin("/f", v1, { start: 15, end: 45 })).toEqual([
      { start: 15, end: 20 },
      { start: 40, end: 45 },
    ]);
    ledger.record("/f", v1, { start: 45, end: END });
    expect(ledger.covers("/f", v1, { start: 100, end: END })).toBe(true);
  });

  it("reports nothing seen for another version (the content hash differs)", () => {
    const ledger = new ReadLedger();
    ledger.record("/f", v1, { start: 1, end: END });
    expect(ledger.seenWithin("/f", v2, { start: 1, end: 5 })).toEqual([]);
    expect(ledger.covers("/f", v2, { start: 1, end: 5 })).toBe(false);
    ledger.record("/f", v2, { start: 3, end: 4 });
    expect(ledger.seenWithin("/f", v2, { start: 1, end: 10 })).toEqual([{ start: 3, end: 4 }]);
  });
});
