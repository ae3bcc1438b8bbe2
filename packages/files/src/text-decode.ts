/** How a file's bytes can be turned into text. */
export const TEXT_ENCODINGS = ["utf-8", "utf-8-bom", "utf-16le", "utf-16be"] as const;

export type TextEncoding = (typeof TEXT_ENCODINGS)[number];

export type DecodedText = { text: string; encoding: TextEncoding };

/** The byte-order mark, if any, and the encoding it announces. */
export function sniffBom(bytes: Uint8Array): { encoding: TextEncoding; length: number } {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf)
    return { encoding: "utf-8-bom", length: 3 };
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return { encoding: "utf-16le", length: 2 };
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return { encoding: "utf-16be", length: 2 };
  return { encoding: "utf-8", length: 0 };
}

/**
 * Decodes text the way ripgrep does: a UTF-8 BOM is dropped, UTF-16 with a BOM is transcoded,
 * anything else is UTF-8 with invalid bytes replaced. Returns undefined for binary data
 * (a NUL byte in the decoded text), which ripgrep also skips.
 */
export function decodeText(bytes: Uint8Array): DecodedText | undefined {
  const bom = sniffBom(bytes);
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let text: string;
  if (bom.encoding === "utf-16le" || bom.encoding === "utf-16be") {
    text = new TextDecoder(bom.encoding, { fatal: false }).decode(buf.subarray(bom.length));
    if (text.includes("\0")) return undefined;
    return { text, encoding: bom.encoding };
  }
  if (buf.indexOf(0) !== -1) return undefined;
  text = buf.toString("utf8", bom.length);
  return { text, encoding: bom.encoding };
}

const IMAGE_TYPES: Record<string, string> = {
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".bmp": "image/bmp",
  ".ico": "image/x-icon",
};

/** The image mime type for a file name, by extension (case-insensitive). */
export function imageMimeType(name: string): string | undefined {
  const dot = name.lastIndexOf(".");
  if (dot === -1) return undefined;
  return IMAGE_TYPES[name.slice(dot).toLowerCase()];
}
