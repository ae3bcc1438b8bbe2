import { describe, expect, it } from "vitest";
import { OutputLog } from "./output-log.js";

describe("OutputLog", () => {
  it("addresses output by absolute offsets and drops the oldest beyond capacity", () => {
    const log = new OutputLog(10);
    log.append("0123456789");
    log.append("abcde");
    expect(log.start).toBe(5);
    expect(log.end).toBe(15);
    expect(log.slice(0)).toBe("56789abcde");
    expect(log.slice(8, 12)).toBe("89ab");
  });

  it("finds the start of the line holding an offset", () => {
    const log = new OutputLog(100);
    log.append("one\ntwo\nthr");
    log.append("ee\n");
    expect(log.lineStart(10)).toBe(8);
    expect(log.lineStart(4)).toBe(4);
    expect(log.slice(log.lineStart(12))).toBe("three\n");
  });
});
