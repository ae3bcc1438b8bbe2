/**
 * PDFs written by hand for the tests, so no binary fixture is committed: every byte here is explained.
 * A PDF is a header, numbered objects, a cross-reference table giving each object's byte offset, and a
 * trailer naming the catalog. Pages show their text with Helvetica (a standard font, nothing embedded).
 */
import { createHash } from "node:crypto";
import { deflateSync } from "node:zlib";

/** RC4 (the cipher of the standard security handler, revision 2), written out: OpenSSL 3 disables it. */
function rc4(key: Uint8Array, data: Uint8Array): Buffer {
  const s = Array.from({ length: 256 }, (_, i) => i);
  let j = 0;
  for (let i = 0; i < 256; i++) {
    j = (j + (s[i] as number) + (key[i % key.length] as number)) & 255;
    [s[i], s[j]] = [s[j] as number, s[i] as number];
  }
  const out = Buffer.alloc(data.length);
  let a = 0;
  let b = 0;
  for (let k = 0; k < data.length; k++) {
    a = (a + 1) & 255;
    b = (b + (s[a] as number)) & 255;
    [s[a], s[b]] = [s[b] as number, s[a] as number];
    out[k] = (data[k] as number) ^ (s[((s[a] as number) + (s[b] as number)) & 255] as number);
  }
  return out;
}

const md5 = (...parts: Uint8Array[]) => {
  const hash = createHash("md5");
  for (const part of parts) hash.update(part);
  return hash.digest();
};

/** The 32-byte padding of the standard security handler (PDF 1.7, 7.6.3.3, Algorithm 2). */
const PAD = Buffer.from("28bf4e5e4e758a4164004e56fffa01082e2e00b6d0683e802f0ca9fe6453697a", "hex");
const padded = (password: string) => Buffer.concat([Buffer.from(password, "latin1"), PAD]).subarray(0, 32);

/** Encryption with the standard security handler, revision 2 (40-bit RC4): what `qpdf --encrypt u o 40` makes. */
interface Encryption {
  /** Encrypts one object's strings and streams. */
  object(num: number, data: Buffer): Buffer;
  dictionary: string;
  id: Buffer;
}

function standardEncryption(user: string, owner: string): Encryption {
  const permissions = -44;
  const ownerKey = md5(padded(owner)).subarray(0, 5);
  const o = rc4(ownerKey, padded(user));
  const id = Buffer.from("0123456789abcdef0123456789abcdef", "hex");
  const p = Buffer.alloc(4);
  p.writeInt32LE(permissions);
  const fileKey = md5(padded(user), o, p, id).subarray(0, 5);
  const u = rc4(fileKey, PAD);
  return {
    object(num, data) {
      const salt = Buffer.from([num & 255, (num >> 8) & 255, (num >> 16) & 255, 0, 0]);
      return rc4(md5(fileKey, salt).subarray(0, 10), data);
    },
    dictionary: `<< /Filter /Standard /V 1 /R 2 /O <${o.toString("hex")}> /U <${u.toString("hex")}> /P ${permissions} >>`,
    id,
  };
}

/** A PDF string literal: backslash, parentheses escaped. */
const pdfString = (text: string) => `(${text.replace(/[\\()]/g, (c) => `\\${c}`)})`;

/** Objects (1-based, in order) and the trailer's extra entries, as a whole file with a correct xref table. */
function assemble(objects: Buffer[], trailerExtra = ""): Buffer {
  const parts: Buffer[] = [Buffer.from("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n", "latin1")];
  let at = parts[0]?.length ?? 0;
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    const obj = Buffer.concat([Buffer.from(`${i + 1} 0 obj\n`), body, Buffer.from("\nendobj\n")]);
    offsets.push(at);
    parts.push(obj);
    at += obj.length;
  });
  const xref = [
    "xref",
    `0 ${objects.length + 1}`,
    "0000000000 65535 f ",
    ...offsets.map((o) => `${String(o).padStart(10, "0")} 00000 n `),
    "trailer",
    `<< /Size ${objects.length + 1} /Root 1 0 R${trailerExtra} >>`,
    "startxref",
    String(at),
    "%%EOF",
    "",
  ].join("\n");
  parts.push(Buffer.from(xref, "latin1"));
  return Buffer.concat(parts);
}

const stream = (dict: string, data: Buffer) =>
  Buffer.concat([
    Buffer.from(`<< ${dict}/Length ${data.length} >>\nstream\n`),
    data,
    Buffer.from("\nendstream"),
  ]);

export interface PdfOptions {
  /** Encrypt with this user password (empty: opens without one) and owner password. */
  encrypt?: { user: string; owner: string };
}

/**
 * A page: its text (each line shown on a line of its own), or a bomb: a content stream of
 * `inflatedMiB` MiB of spaces, deflated to about a thousandth of that. A parser that keeps what it
 * inflates (pdf.js does) needs all of it in memory.
 */
export type PdfPage = string | { inflatedMiB: number };

/** A PDF with one page per entry of `pages`. */
export function pdfDocument(pages: PdfPage[], options: PdfOptions = {}): Buffer {
  const encryption = options.encrypt
    ? standardEncryption(options.encrypt.user, options.encrypt.owner)
    : undefined;
  // 1 catalog, 2 page tree, 3 font, then a page object and its content stream per page.
  const pageNums = pages.map((_, i) => 4 + i * 2);
  const objects: Buffer[] = [
    Buffer.from("<< /Type /Catalog /Pages 2 0 R >>"),
    Buffer.from(
      `<< /Type /Pages /Kids [${pageNums.map((n) => `${n} 0 R`).join(" ")}] /Count ${pages.length} >>`,
    ),
    Buffer.from("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"),
  ];
  pages.forEach((page, i) => {
    const contentNum = 5 + i * 2;
    let content: Buffer;
    let filter = "";
    if (typeof page === "string") {
      const lines = page.split("\n").map((line) => `${pdfString(line)} Tj T*`);
      content = Buffer.from(`BT /F1 12 Tf 14 TL 72 720 Td\n${lines.join("\n")}\nET`, "latin1");
    } else {
      content = deflateSync(Buffer.alloc(page.inflatedMiB * 1024 * 1024, 0x20), { level: 9 });
      filter = "/Filter /FlateDecode ";
    }
    if (encryption) content = encryption.object(contentNum, content);
    objects.push(
      Buffer.from(
        `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents ${contentNum} 0 R >>`,
      ),
      stream(filter, content),
    );
  });
  if (!encryption) return assemble(objects);
  objects.push(Buffer.from(encryption.dictionary));
  const id = encryption.id.toString("hex");
  return assemble(objects, ` /Encrypt ${objects.length} 0 R /ID [<${id}> <${id}>]`);
}

/**
 * One page drawing `count` short strings, each its own text-showing operator: a few hundred kilobytes
 * deflated, and millions of text items for a parser to build.
 */
export function pdfManyOperators(count: number): Buffer {
  const content = deflateSync(Buffer.from(`BT /F1 12 Tf ${"(abcdefgh) Tj ".repeat(count)}ET`), { level: 9 });
  return assemble([
    Buffer.from("<< /Type /Catalog /Pages 2 0 R >>"),
    Buffer.from("<< /Type /Pages /Kids [3 0 R] /Count 1 >>"),
    Buffer.from(
      "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
    ),
    stream("/Filter /FlateDecode ", content),
    Buffer.from("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"),
  ]);
}
