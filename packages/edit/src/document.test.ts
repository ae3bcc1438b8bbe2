import { describe, expect, it } from "vitest";
import {
  decodeDocument,
  encodeDocument,
  encodedText,
  eolStyle,
  keepFinalNewline,
  spliceDocument,
  spliceEach,
} from "./document.js";

const bytes = (s: string) => new TextEncoder().encode(s);

describe("documents keep their bytes", () => {
  it("round-trips CRLF, a BOM and no final newline exactly", () => {
    const raw = "\uFEFFone\r\ntwo\r\nthree";
    const doc = decodeDocument(bytes(raw), "f");
    expect(doc.bom).toBe(true);
    expect(doc.text).toBe("one\ntwo\nthree");
    expect(encodeDocument(doc)).toBe(raw);
  });

  it("gives new lines in a CRLF file CRLF endings", () => {
    const doc = decodeDocument(bytes("a\r\nb\r\nc\r\n"), "f");
    const start = doc.text.indexOf("b");
    const after = spliceDocument(doc, start, start + 1, "b1\nb2");
    expect(encodeDocument(after)).toBe("a\r\nb1\r\nb2\r\nc\r\n");
    expect(eolStyle(after)).toBe("crlf");
  });

  it("leaves the other lines of a mixed file as they were", () => {
    const doc = decodeDocument(bytes("a\r\nb\nc\r\nd\n"), "f");
    const start = doc.text.indexOf("c");
    expect(encodeDocument(spliceDocument(doc, start, start + 1, "C"))).toBe("a\r\nb\nC\r\nd\n");
    expect(eolStyle(doc)).toBe("mixed");
  });

  it("keeps the final newline as it was when an edit touches the end", () => {
    const doc = decodeDocument(bytes("x\ny\n"), "f");
    const cut = spliceDocument(doc, 2, 4, "z");
    expect(encodeDocument(keepFinalNewline(doc, cut))).toBe("x\nz\n");
    const none = decodeDocument(bytes("x\ny"), "f");
    const grown = spliceDocument(none, 2, 3, "z\n");
    expect(encodeDocument(keepFinalNewline(none, grown))).toBe("x\nz");
  });

  it("refuses binary and non-UTF-8 files", () => {
    expect(() => decodeDocument(new Uint8Array([0x61, 0, 0x62]), "f")).toThrow(/binary/);
    expect(() => decodeDocument(new Uint8Array([0xff, 0xfe, 0x61]), "f")).toThrow(/UTF-8/);
  });

  it("decodes exactly as a strict UTF-8 decoder does, and refuses what it refuses", () => {
    const strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
    for (const raw of ["plain ascii\n", "\uFEFFbom\r\n", "é ü 漢字 😀\n", "\uFEFF", ""]) {
      const doc = decodeDocument(bytes(raw), "f");
      expect((doc.bom ? "\uFEFF" : "") + doc.text.replace(/\n/g, "")).toBe(
        strict.decode(bytes(raw)).replace(/\r?\n/g, ""),
      );
      expect(encodeDocument(doc)).toBe(raw);
    }
    for (const bad of [[0xc3], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xc0, 0x80], [0xe2, 0x82]]) {
      const u = Uint8Array.from([0x61, ...bad, 0x62]);
      expect(() => strict.decode(u)).toThrow();
      expect(() => decodeDocument(u, "f")).toThrow(/UTF-8/);
    }
  });

  it("knows the encoding of the documents it made without walking them, and it is encodeDocument's", () => {
    const files = [
      "a\nb\nc\n",
      "a\nb\nc",
      "\uFEFFa\nb\n",
      "a\r\nb\r\nc\r\n",
      "a\r\nb\nc",
      "x\ry\n",
      "",
      "\n",
    ];
    for (const raw of files) {
      const doc = decodeDocument(bytes(raw), "f");
      const shapes = [doc];
      for (const [from, to, text] of [
        [0, 1, "A\nA2"],
        [doc.text.length, doc.text.length, "tail\n"],
        [Math.max(0, doc.text.length - 1), doc.text.length, ""],
        [0, doc.text.length, "all new"],
      ] as const) {
        shapes.push(spliceDocument(doc, from, to, text));
        shapes.push(keepFinalNewline(doc, spliceDocument(doc, from, to, text)));
      }
      for (const d of shapes) {
        expect(encodedText(d)).toBe(encodeDocument(d));
        expect(eolStyle(d)).toBe(eolStyle({ ...d, eols: [...d.eols] }));
        expect(d.eols.length).toBe(d.text.split("\n").length);
      }
    }
  });

  it("gives a splice the same terminators whether or not the caller names the start line", () => {
    const doc = decodeDocument(bytes("a\r\nb\nc\r\nd\n"), "f");
    const start = doc.text.indexOf("c");
    expect(spliceDocument(doc, start, start + 2, "C\nC2\n", 2)).toEqual(
      spliceDocument(doc, start, start + 2, "C\nC2\n"),
    );
    const many = "x\n".repeat(5000);
    const big = spliceDocument(doc, start, start + 2, many);
    expect(encodeDocument(big)).toBe(`a\r\nb\n${"x\r\n".repeat(5000)}d\n`);
  });

  it("splices every span at once as one splice per span, last first, would (terminators, dominant one, encoding)", () => {
    // A small deterministic generator: files of short lines with LF, CRLF and none mixed, spans of
    // one to a few characters, replacements with and without line breaks.
    let seed = 7;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const pick = <T>(xs: readonly T[]) => xs[rand(xs.length)] as T;
    for (let round = 0; round < 400; round++) {
      let raw = rand(4) === 0 ? "\uFEFF" : "";
      const lines = 1 + rand(12);
      for (let i = 0; i < lines; i++)
        raw +=
          pick(["ab", "a", "", "xa", "aa"]) +
          (i < lines - 1 ? pick(["\n", "\r\n", "\r\n"]) : pick(["", "\n"]));
      const doc = decodeDocument(bytes(raw), "f");
      const spans: Array<{ start: number; end: number; replacement: string }> = [];
      for (let at = doc.text.indexOf("a"); at !== -1; at = doc.text.indexOf("a", at + 1)) {
        if (rand(3) === 0) continue;
        const end = Math.min(doc.text.length, at + 1 + rand(3));
        spans.push({ start: at, end, replacement: pick(["b", "", "b\nb", "\n", "c\n\nc"]) });
        at = end - 1;
      }
      let one = doc;
      for (const sp of [...spans].reverse()) one = spliceDocument(one, sp.start, sp.end, sp.replacement);
      const all = spliceEach(doc, spans);
      expect(all, JSON.stringify({ raw, spans })).toEqual(one);
      expect(encodedText(all)).toBe(encodeDocument(one));
      expect(encodedText(keepFinalNewline(doc, all))).toBe(encodeDocument(keepFinalNewline(doc, one)));
    }
    expect(() =>
      spliceEach(decodeDocument(bytes("abc"), "f"), [
        { start: 1, end: 2, replacement: "" },
        { start: 0, end: 1, replacement: "" },
      ]),
    ).toThrow(RangeError);
  });
});
