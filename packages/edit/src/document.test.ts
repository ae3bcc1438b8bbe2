import { describe, expect, it } from "vitest";
import { decodeDocument, encodeDocument, eolStyle, keepFinalNewline, spliceDocument } from "./document.js";

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
});
