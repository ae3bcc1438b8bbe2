import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { type FileFingerprint, fingerprintOf, ReadLedger } from "./ledger.js";

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

describe("fingerprintOf", () => {
  const sha1 = (b: Uint8Array) => createHash("sha1").update(b).digest("hex");
  const stat = { size: 3, mtimeMs: 5 };

  it("hashes the content as it was when read, whatever the caller does to it later", () => {
    const content = Buffer.from("abc");
    const fp = fingerprintOf(content, stat);
    content.fill(0);
    expect(fp.hash).toBe(sha1(Buffer.from("abc")));
    expect(JSON.parse(JSON.stringify(fp))).toEqual({ size: 3, mtimeMs: 5, hash: sha1(Buffer.from("abc")) });
  });

  it("tells versions apart by content when size and mtime agree", () => {
    const ledger = new ReadLedger();
    ledger.record("/f", fingerprintOf(Buffer.from("one"), stat), { start: 1, end: END });
    expect(ledger.status("/f", fingerprintOf(Buffer.from("one"), stat))).toBe("current");
    expect(ledger.status("/f", fingerprintOf(Buffer.from("two"), stat))).toBe("stale");
  });
});
