import { describe, expect, it } from "vitest";
import { HeadTailCapture } from "./head-tail-capture.js";

describe("HeadTailCapture", () => {
  it("keeps everything under the limit", () => {
    const capture = new HeadTailCapture(100);
    capture.push(Buffer.from("hello "));
    capture.push(Buffer.from("world"));
    expect(capture.finish()).toEqual({ text: "hello world", totalBytes: 11, elidedBytes: 0 });
  });

  it("keeps head and tail of a long stream and states what was elided", () => {
    const capture = new HeadTailCapture(40);
    for (let i = 0; i < 1000; i++) capture.push(Buffer.from(`line ${String(i).padStart(4, "0")}\n`));
    const out = capture.finish();
    expect(out.totalBytes).toBe(10_000);
    expect(out.text.startsWith("line 0000\nline 0001\n")).toBe(true);
    expect(out.text.endsWith("line 0998\nline 0999\n")).toBe(true);
    expect(out.text).toContain(`[… ${out.elidedBytes} bytes of output elided (10000 bytes in all`);
    expect(out.elidedBytes).toBe(10_000 - 40);
  });

  it("never splits a UTF-8 character at a cut", () => {
    const capture = new HeadTailCapture(11);
    capture.push(Buffer.from("é".repeat(100)));
    const out = capture.finish();
    expect(out.text).not.toContain("\uFFFD");
  });
});
