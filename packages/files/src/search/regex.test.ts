import { describe, expect, it } from "vitest";
import { searchBuffer } from "./js-search.js";
import { compileQuery, requiredLiteral } from "./regex.js";

describe("requiredLiteral", () => {
  it.each([
    ["function\\s+\\w+Sync", "function"],
    ["fooSync", "fooSync"],
    ["colou?r", "colo"],
    ["ab+c", "ab"],
    ["a\\.b\\(c", "a.b(c"],
    ["x[0-9]+longer_tail", "longer_tail"],
    ["(foo|bar)baz", "baz"],
    ["foo|bar", undefined],
    ["\\d+", undefined],
    ["ab{2,3}cd", "cd"],
  ])("%s → %s", (source, expected) => {
    expect(requiredLiteral(source)).toBe(expected);
  });
});

describe("searchBuffer", () => {
  const run = (query: string, text: string) => searchBuffer(Buffer.from(text), compileQuery(query));

  it("never lets a match run across a newline", () => {
    expect(run("foo\\s+bar", "foo\nbar\nfoo  bar\n")).toEqual([{ line: 3, text: "foo  bar" }]);
    expect(run("a[^x]*b", "a\nb\nab\n")).toEqual([{ line: 3, text: "ab" }]);
  });

  it("anchors ^ and $ at line boundaries only, not at a carriage return", () => {
    expect(run("x$", "x\r\nx\n")).toEqual([{ line: 2, text: "x" }]);
    expect(run("^b", "a\rb\nb\n")).toEqual([{ line: 2, text: "b" }]);
  });

  it("lets . match a lone carriage return, as Rust regex does", () => {
    expect(run("a.b", "a\rb\n")).toEqual([{ line: 1, text: "a\rb" }]);
  });

  it("counts lines correctly on the literal fast path", () => {
    expect(run("needle", "a\nneedle\nb\nc needle\n\nneedle")).toEqual([
      { line: 2, text: "needle" },
      { line: 4, text: "c needle" },
      { line: 6, text: "needle" },
    ]);
  });

  it("skips binary data", () => {
    expect(searchBuffer(Buffer.from("needle\0"), compileQuery("needle"))).toBeUndefined();
  });

  it("gives \\w, \\d and \\b their Unicode meaning, as Rust regex does", () => {
    expect(run("^\\w+$", "café\n")).toEqual([{ line: 1, text: "café" }]);
    expect(run("^\\d+$", "١٢٣\n")).toHaveLength(1);
    expect(run("caf\\b", "café\ncaf é\n")).toEqual([{ line: 2, text: "caf é" }]);
    expect(run("[\\w-]+é", "a-bé\n")).toHaveLength(1);
    expect(run("\\bfoo\\b", "éfoo\nfooé\nx foo.\n")).toEqual([{ line: 3, text: "x foo." }]);
    expect(run("\\bf?oo", "oo\n")).toEqual([{ line: 1, text: "oo" }]);
    expect(run("\\b\\d", "a1\n 1\n")).toEqual([{ line: 2, text: " 1" }]);
  });

  it("translates a leading (?i), \\A and \\z", () => {
    expect(run("(?i)HELLO", "hello\n")).toHaveLength(1);
    expect(run("\\Ahello\\z", "hello\nhello world\n")).toEqual([{ line: 1, text: "hello" }]);
  });
});
