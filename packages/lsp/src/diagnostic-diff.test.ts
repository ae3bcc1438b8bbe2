import { describe, expect, it } from "vitest";
import type { Diagnostic } from "vscode-languageserver-protocol";
import { newDiagnostics, unchangedEnds } from "./diagnostic-diff.js";

function at(line: number, message: string, character = 0, code: string | number = "E1"): Diagnostic {
  return {
    range: { start: { line, character }, end: { line, character: character + 3 } },
    severity: 1,
    code,
    message,
  };
}

const lines = (...l: string[]) => l.join("\n");

describe("unchangedEnds", () => {
  it("finds the lines both texts share at each end, never counting a line twice", () => {
    expect(unchangedEnds(["a", "b", "c"], ["a", "x", "c"])).toEqual({ head: 1, tail: 1 });
    expect(unchangedEnds(["a", "a"], ["a", "a", "a"])).toEqual({ head: 2, tail: 0 });
    expect(unchangedEnds([], ["a"])).toEqual({ head: 0, tail: 0 });
  });
});

describe("newDiagnostics", () => {
  it("a problem below the change that moved with its lines is not new", () => {
    const before = lines("a", "b", "bad()");
    const after = lines("a", "inserted", "also inserted", "b", "bad()");
    expect(newDiagnostics(before, after, [at(2, "nope")], [at(4, "nope")])).toEqual([]);
  });

  it("a problem that appeared on an unchanged line (caused elsewhere) is new", () => {
    const before = lines("let x: number = 1;", "use(x);");
    const after = lines("let x: string = 1;", "use(x);");
    const appeared = at(1, "x is not a number");
    expect(newDiagnostics(before, after, [], [at(0, "type"), appeared])).toEqual([at(0, "type"), appeared]);
  });

  it("the same problem at a different place outside the change is new", () => {
    const text = lines("a", "b", "c", "d");
    const edited = lines("a", "B", "c", "d");
    expect(newDiagnostics(text, edited, [at(2, "p")], [at(3, "p")])).toEqual([at(3, "p")]);
  });

  it("on the changed lines a problem is the same when the replaced lines had it", () => {
    const before = lines("a", "bad(1)", "z");
    const after = lines("a", "// comment", "bad(2)", "z");
    // Same message and code, moved inside the edited span: not new; a second one is.
    const second = at(1, "bad call", 3);
    expect(newDiagnostics(before, after, [at(1, "bad call")], [at(2, "bad call"), second])).toEqual([second]);
    // Another code with the same message is another problem.
    const other = at(2, "bad call", 0, "E2");
    expect(newDiagnostics(before, after, [at(1, "bad call")], [other])).toEqual([other]);
  });

  it("counts repeats: two problems where there was one means one new", () => {
    const before = lines("x", "y");
    const after = lines("x", "y", "y");
    const found = newDiagnostics(before, after, [at(1, "dup")], [at(1, "dup"), at(2, "dup")]);
    expect(found).toEqual([at(2, "dup")]);
  });

  it("a fix reports nothing new", () => {
    expect(newDiagnostics(lines("a", "bad"), lines("a", "good"), [at(1, "bad")], [])).toEqual([]);
  });

  it("treats CRLF and LF line ends as the server does (one line each)", () => {
    const before = "a\r\nb\r\nbad\r\n";
    const after = "new\r\na\r\nb\r\nbad\r\n";
    expect(newDiagnostics(before, after, [at(2, "p")], [at(3, "p")])).toEqual([]);
  });
});
