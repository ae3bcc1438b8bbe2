import { describe, expect, it } from "vitest";
import { encodeDocument, fromRaw, spliceDocument } from "./document.js";
import { locate, locateAll, type Match, type MatchFailure, STRICT_STRATEGIES } from "./matcher.js";

const apply = (source: string, search: string, replace: string) => {
  const doc = fromRaw(source);
  const m = locate(doc, search, replace);
  if ("code" in m) return m;
  return { ...m, result: encodeDocument(spliceDocument(doc, m.start, m.end, m.replacement)) };
};

const ok = (r: ReturnType<typeof apply>) => {
  if ("code" in r) throw new Error(`expected a match, got ${r.code}: ${r.message}`);
  return r as Match & { result: string };
};
const failed = (r: ReturnType<typeof apply>) => {
  if (!("code" in r)) throw new Error(`expected a refusal, got a match by ${r.strategy}`);
  return r as MatchFailure;
};

const TS = `export function total(items: Item[]): number {
  let sum = 0;
  for (const item of items) {
    if (item.price > 0) {
      sum += item.price * item.quantity;
    }
  }
  return sum;
}

export function count(items: Item[]): number {
  return items.length;
}
`;

describe("edit_file matching stages", () => {
  it("matches exactly first", () => {
    const r = ok(apply(TS, "  return items.length;", "  return items.length + 0;"));
    expect(r.strategy).toBe("exact");
    expect(r.result).toContain("return items.length + 0;");
  });

  it("ignores line endings in the search text (line_endings)", () => {
    const r = ok(
      apply(
        TS,
        "  let sum = 0;\r\n  for (const item of items) {",
        "  let sum = 1;\n  for (const item of items) {",
      ),
    );
    expect(r.strategy).toBe("line_endings");
    expect(r.result).toContain("let sum = 1;");
  });

  it("matches trimmed lines and re-indents the replacement to the file's depth", () => {
    const search = "if (item.price > 0) {\n  sum += item.price * item.quantity;\n}";
    const replace = "if (item.price > 0) {\n  sum += item.price * item.quantity;\n  seen++;\n}";
    const r = ok(apply(TS, search, replace));
    expect(r.strategy).toBe("indentation");
    expect(r.result).toContain(
      "    if (item.price > 0) {\n      sum += item.price * item.quantity;\n      seen++;\n    }\n",
    );
  });

  it("converts tabs in the search to the file's spaces and back", () => {
    const tabbed = TS.replace(/^( +)/gm, (m) => "\t".repeat(m.length / 2));
    const search = "    if (item.price > 0) {\n        sum += item.price * item.quantity;\n    }";
    const replace = "    if (item.price >= 0) {\n        sum += item.price * item.quantity;\n    }";
    const r = ok(apply(tabbed, search, replace));
    expect(r.strategy).toBe("indentation");
    expect(r.result).toContain(
      "\t\tif (item.price >= 0) {\n\t\t\tsum += item.price * item.quantity;\n\t\t}\n",
    );
  });

  it("refuses an indentation match whose nesting differs (meaning could differ)", () => {
    const py = "if ready:\n    start()\n    finish()\n";
    const r = failed(apply(py, "if ready:\n    start()\nfinish()", "x"));
    expect(r.code).toBe("ENO_MATCH");
  });

  it("tolerates formatting: blank lines, spaces around punctuation, lines breaking where the file's do", () => {
    const search = "let sum=0;\n\n\nfor(const item of items){\n  if (item.price>0) {";
    const replace = "let sum = 0;\nfor (const item of items) {\n  if (item.price >= 0) {";
    const r = ok(apply(TS, search, replace));
    expect(r.strategy).toBe("formatting");
    expect(r.result).toContain("  let sum = 0;\n  for (const item of items) {\n    if (item.price >= 0) {\n");
  });

  it("tolerates line wrapping: the same code broken into lines elsewhere (line_wrapping)", () => {
    const search =
      "let sum=0;\nfor (const item of items) { if (item.price > 0) {\n sum += item.price * item.quantity; } }";
    const replace = "let sum = 0;\nfor (const item of items) {\n  sum += item.price;\n}";
    const r = ok(apply(TS, search, replace));
    expect(r.strategy).toBe("line_wrapping");
    expect(r.result).toContain(
      "  let sum = 0;\n  for (const item of items) {\n    sum += item.price;\n  }\n  return sum;",
    );
    // A call wrapped one argument per line matches it on one line, and the other way round.
    const one = "function f() {\n  const result = compute(alpha, beta, gamma);\n  return result;\n}\n";
    const wrapped = "const result = compute(\n  alpha,\n  beta,\n  gamma\n);";
    const w = ok(apply(one, wrapped, "const result = compute(alpha, beta, gamma, delta);"));
    expect(w).toMatchObject({ strategy: "line_wrapping", startLine: 2, endLine: 2 });
    expect(w.result).toBe(one.replace("gamma)", "gamma, delta)"));
    const back = ok(
      apply(
        `function f() {\n  ${wrapped.replace(/\n/g, "\n  ")}\n}\n`,
        "const result = compute(alpha, beta, gamma);",
        "const result = 0;",
      ),
    );
    expect(back).toMatchObject({ strategy: "line_wrapping", startLine: 2, endLine: 6 });
    expect(back.result).toBe("function f() {\n  const result = 0;\n}\n");
  });

  it("line wrapping: ambiguity is EMULTI_MATCH, changed code ENO_MATCH", () => {
    const one = "a();\nconst r = compute(alpha, beta);\nb();\nconst r = compute(alpha, beta);\n";
    const many = failed(apply(one, "const r = compute(\n  alpha,\n  beta\n);", "x"));
    expect(many).toMatchObject({ code: "EMULTI_MATCH", strategy: "line_wrapping", lines: [2, 4] });
    expect(many.message).toContain("line-wrapping-tolerant");
    for (const changed of [
      "const r = compute(\n  alpha,\n  gamma\n);",
      "const r = compute(\n  alpha,\n  beta,\n);",
      "const r = compute(alpha\n  beta);",
    ])
      expect(failed(apply("const r = compute(alpha, beta);\n", changed, "x")).code).toBe("ENO_MATCH");
  });

  it("line wrapping: a search that lost a closing brace does not borrow the next one at another depth", () => {
    // The file's block ends with braces at 10, 8, 6 and 4 columns; the search text (wrapped) lost the
    // one at 6, so its last brace (at 4) is the file's fifth line, not its fourth.
    const src = [
      "    for (const m of ms) {",
      "      if (m.ok) {",
      "        for (const p of m.parts) {",
      "          if (p.call) {",
      "            ids.set(p.id, p.name);",
      "          }",
      "        }",
      "      }",
      "    }",
      "    done();",
      "",
    ].join("\n");
    const search = [
      "            ids.set(",
      "              p.id,",
      "              p.name",
      "            );",
      "          }",
      "        }",
      "    }",
    ].join("\n");
    expect(failed(apply(src, search, "x")).code).toBe("ENO_MATCH");
    // With every brace there, the same wrapped search matches.
    const whole = [...search.split("\n").slice(0, 6), "      }", "    }"].join("\n");
    expect(ok(apply(src, whole, "x")).strategy).toBe("line_wrapping");
  });

  it("line wrapping never joins or splits tokens: `a b` is not `ab`, `+ +` is not `++`", () => {
    const src = "const t = beta gamma;\nconst s = a + +b;\nconst u = betagamma;\n";
    expect(failed(apply(src, "const u = beta\n  gamma;", "x")).code).toBe("ENO_MATCH");
    expect(failed(apply(src, "const t = betagamma;", "x")).code).toBe("ENO_MATCH");
    expect(failed(apply(src, "const s = a\n  ++b;", "x")).code).toBe("ENO_MATCH");
    expect(ok(apply(src, "const s = a +\n  +b;", "x")).strategy).toBe("line_wrapping");
  });

  it("line wrapping keeps whitespace inside strings, line breaks included", () => {
    expect(failed(apply('log("hello world");\n', 'log("hello\nworld");', "x")).code).toBe("ENO_MATCH");
    const template = "const s = `a\n    b`;\nnext();\n";
    expect(failed(apply(template, "const s = `a\nb`;", "x")).code).toBe("ENO_MATCH");
    expect(failed(apply(template, "const s = `a     b`;", "x")).code).toBe("ENO_MATCH");
    expect(ok(apply(template, "const s =\n  `a\n    b`;", "x")).strategy).toBe("line_wrapping");
    const py = 'def f():\n    """Return one.\n\n    Always."""\n    return 1\n';
    expect(failed(apply(py, 'def f():\n    """Return one. Always."""\n    return 1', "x")).code).toBe(
      "ENO_MATCH",
    );
  });

  it("line wrapping never moves code into or out of a line comment", () => {
    const src = "// explain\nrun();\n# not a heading\nstep()\n";
    expect(failed(apply(src, "// explain run();", "x")).code).toBe("ENO_MATCH");
    expect(failed(apply(src, "# not a heading step()", "x")).code).toBe("ENO_MATCH");
    expect(failed(apply("x = a  # note\ny = b\n", "x = a # note y = b", "z")).code).toBe("ENO_MATCH");
  });

  it("keeps whitespace inside string literals significant", () => {
    const src = 'const a = "x  y";\nconst b = 1;\n';
    expect(failed(apply(src, 'const a = "x y";\nconst b = 1;', "z")).code).toBe("ENO_MATCH");
  });

  it("keeps operators apart: `x < -1` is not `x <- 1`", () => {
    const src = "if (x < -1) {\n  y();\n}\n";
    expect(failed(apply(src, "if (x <- 1) {\n  y();\n}", "z")).code).toBe("ENO_MATCH");
  });

  it("unescapes a JSON-escaped block once", () => {
    const search = JSON.stringify("  let sum = 0;\n  for (const item of items) {").slice(1, -1);
    const replace = JSON.stringify("  let sum = 10;\n  for (const item of items) {").slice(1, -1);
    const r = ok(apply(TS, search, replace));
    expect(r.strategy).toBe("unescaped");
    expect(r.via).toBe("exact");
    expect(r.result).toContain("  let sum = 10;\n  for (const item");
  });

  it("reports ambiguity at the exact stage instead of taking the first match", () => {
    const r = failed(apply(TS, "(items: Item[]): number {", "x"));
    expect(r.code).toBe("EMULTI_MATCH");
    expect(r.strategy).toBe("exact");
    expect(r.lines).toEqual([1, 11]);
  });

  it("reports ambiguity at a fuzzy stage", () => {
    const src = "function a() {\n  go(1);\n  stop();\n}\nfunction b() {\n    go(1);\n    stop();\n}\n";
    const r = failed(apply(src, "go(1);\nstop();", "x"));
    expect(r.code).toBe("EMULTI_MATCH");
    expect(r.strategy).toBe("indentation");
    expect(r.lines).toEqual([2, 6]);
  });

  it("refuses whitespace-only and empty search text", () => {
    expect(failed(apply(TS, "   \n\t", "x")).code).toBe("EINVAL_INPUT");
    expect(failed(apply(TS, "", "x")).code).toBe("EINVAL_INPUT");
  });

  it("refuses near misses and shows the closest candidate with line numbers", () => {
    const r = failed(apply(TS, "  let sum = 1;\n  for (const item of items) {", "x"));
    expect(r.code).toBe("ENO_MATCH");
    expect(r.candidate?.start_line).toBe(2);
    expect(r.message).toContain("2:   let sum = 0;");
    expect(r.message).toContain('the search text has "  let sum = 1;"');
    expect(r.message).toContain("tried: exact, line-ending-insensitive");
  });

  it("refuses a search text that is missing a line the file has", () => {
    const r = failed(apply(TS, "  let sum = 0;\n  return sum;", "x"));
    expect(r.code).toBe("ENO_MATCH");
  });

  it("matches a call spread over far more lines than the search text, as line wrapping", () => {
    const src = `call(${Array.from({ length: 12 }, (_, i) => `\n  arg${i},`).join("")}\n);\n`;
    const search = `call(${Array.from({ length: 12 }, (_, i) => `arg${i},`).join(" ")});`;
    const r = ok(apply(src, search, "call();"));
    expect(r).toMatchObject({ strategy: "line_wrapping", startLine: 1, endLine: 14 });
    expect(r.result).toBe("call();\n");
  });

  it("never matches part of a line in the fuzzy stages", () => {
    const src = "const total = price * qty;\nconst other = 2;\n";
    expect(failed(apply(src, "price  *  qty;", "x")).code).toBe("ENO_MATCH");
  });

  it("restricts search_replace_block-style strict matching to exact and line endings", () => {
    const m = locate(fromRaw(TS), "let sum = 0;\nfor (const item of items) {", "x", {
      strategies: STRICT_STRATEGIES,
    });
    expect("code" in m && m.code).toBe("ENO_MATCH");
    expect((m as MatchFailure).tried).toEqual(["exact", "line_endings"]);
  });
});

describe("line numbers of a match", () => {
  it("are the same whether the document's lines were split by an earlier stage or not", () => {
    const source = "a\nb\nneedle one\nneedle two\nc\n  indented x\n  indented y\n";
    const cases: Array<[string, number, number]> = [
      ["needle one\nneedle two", 3, 4],
      ["needle two\n", 4, 4],
      ["a", 1, 1],
      ["indented y\n", 7, 7],
    ];
    // A fresh document per search: only the exact stage ran, nothing split it into lines.
    const fresh = cases.map(([search]) => locate(fromRaw(source), search, "X") as Match);
    // One document, first made to build its line index by an indentation-stage search.
    const shared = fromRaw(source);
    expect(ok({ ...(locate(shared, "indented x\nindented y", "Z") as Match), result: "" }).strategy).toBe(
      "indentation",
    );
    const split = cases.map(([search]) => locate(shared, search, "X") as Match);
    for (const [i, [, start, end]] of cases.entries()) {
      expect([fresh[i]?.startLine, fresh[i]?.endLine]).toEqual([start, end]);
      expect([split[i]?.startLine, split[i]?.endLine]).toEqual([start, end]);
    }
  });

  it("are the same for every match of replace_all and of an ambiguous search, split or not", () => {
    const source = Array.from({ length: 300 }, (_, i) => (i % 3 === 0 ? `k${i} dup\n` : `x${i}\n`)).join("");
    const lineOf = (text: string, at: number) => text.slice(0, at).split("\n").length;
    const fresh = fromRaw(source);
    const all = locateAll(fresh, "dup", "y");
    expect(all).toHaveLength(100);
    for (const m of all)
      expect([m.startLine, m.endLine]).toEqual([lineOf(source, m.start), lineOf(source, m.start)]);
    // A document whose index an indentation-stage search split first answers the same.
    const shared = fromRaw(source);
    locate(shared, "  x1\n  x2", "Z");
    expect(locateAll(shared, "dup", "y")).toEqual(all);
    const crlf = fromRaw(source.replace(/\n/g, "\r\n"));
    expect(locateAll(crlf, "dup", "y").map((m) => m.startLine)).toEqual(all.map((m) => m.startLine));
    for (const doc of [fromRaw(source), shared, crlf]) {
      const many = locate(doc, "dup", "y") as MatchFailure & { lines?: number[] };
      expect(many.code).toBe("EMULTI_MATCH");
      expect(JSON.stringify(many)).toContain(`${all[0]?.startLine}`);
    }
  });
});
