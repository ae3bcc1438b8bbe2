import { describe, expect, it } from "vitest";
import { type BoundedLine, boundedLines, HEAD_BYTES, LineSplitter } from "./bounded-lines.js";

async function lines(chunks: string[], maxBytes: number, loneCr: boolean): Promise<BoundedLine[]> {
  const out: BoundedLine[] = [];
  async function* input() {
    for (const c of chunks) yield Buffer.from(c);
  }
  for await (const line of boundedLines(input(), maxBytes, { loneCr })) out.push(line);
  return out;
}

describe("bounded line reader", () => {
  it("ends lines at \\n and \\r\\n, and at a lone \\r only when asked, a break split across chunks counting once", async () => {
    expect(await lines(["a\nb\r", "\nc\rd", "\r", "\ne"], 100, true)).toEqual(["a", "b", "c", "d", "e"]);
    // serve --mcp: a \r inside a message is no break; one before the \n is dropped.
    expect(await lines(["a\r\nb\rc\n", "d"], 100, false)).toEqual(["a", "b\rc", "d"]);
  });

  it("skips a line over the bound without holding it, keeping its head, and reads the next", async () => {
    const long = "x".repeat(3 * HEAD_BYTES);
    const got = await lines([long.slice(0, 5000), long.slice(5000), "\nnext\n"], 1000, true);
    expect(got).toEqual([{ overBytes: long.length, head: long.slice(0, HEAD_BYTES) }, "next"]);
    // Exactly at the bound is no overrun.
    expect(await lines(["y".repeat(1000), "\n"], 1000, false)).toEqual(["y".repeat(1000)]);
  });

  it("yields a line as soon as its break arrives, and an unended last line at the end", () => {
    const splitter = new LineSplitter(100, true);
    expect([...splitter.push(Buffer.from("one\ntw"))]).toEqual(["one"]);
    expect([...splitter.push(Buffer.from("o"))]).toEqual([]);
    expect([...splitter.end()]).toEqual(["two"]);
  });
});
