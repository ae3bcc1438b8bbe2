import { describe, expect, it } from "vitest";
import { AnsiStripper, collapseCarriageReturns, stripAnsi } from "./ansi.js";

describe("stripAnsi", () => {
  it("removes colours, cursor moves, titles and stray controls but keeps text", () => {
    const raw = "\x1b[1;31mError\x1b[0m: \x1b]0;title\x07bad\x1b[2K\x1b[1Gthing\x07\x1b(B done\t!";
    expect(stripAnsi(raw)).toBe("Error: badthing done\t!");
  });

  it("leaves plain text untouched", () => {
    expect(stripAnsi("plain\ntext\r\n")).toBe("plain\ntext\r\n");
  });
});

describe("collapseCarriageReturns", () => {
  it("keeps the last state of a progress line and turns CRLF into LF", () => {
    expect(collapseCarriageReturns("a\r\n 10%\r 50%\r100%\nnext\r")).toBe("a\n100%\nnext");
  });
});

describe("AnsiStripper", () => {
  it("strips a sequence split across chunks", () => {
    const stripper = new AnsiStripper();
    const out = [
      stripper.push("red: \x1b[3"),
      stripper.push("1mX\x1b"),
      stripper.push("[0m!"),
      stripper.flush(),
    ];
    expect(out.join("")).toBe("red: X!");
  });

  it("does not hold back an unterminated escape forever", () => {
    const stripper = new AnsiStripper();
    const text = stripper.push(`\x1b]${"x".repeat(600)}`);
    expect(text.length).toBeGreaterThan(500);
  });
});
