import { closeSync, fstatSync, readSync, type Stats } from "node:fs";
import { defineTool, type LineWindow, renderText, ToolbeltError, type ToolContext, z } from "@toolbelt/core";
import { fingerprintOf } from "@toolbelt/core/internal";
import { type NotebookPayload, notebookPayload, readNotebook, renderNotebook } from "./read-notebook.js";
import { isPdf, type PdfContentPayload, pdfContentPayload, readPdf, renderPdf } from "./read-pdf.js";
import { decodeText, imageMimeType, TEXT_ENCODINGS } from "./text-decode.js";

/** Files larger than this are not read whole for a window (hashing needs every byte). */
const MAX_READ_BYTES = 256 * 1024 * 1024;

export const TRUNCATION_NOTE = "... (truncated - use offset/limit to read more)";
/** The mouaif profile's parameters are startLine/endLine: its notes and errors name those. */
export const MOUAIF_TRUNCATION_NOTE = "... (truncated - use startLine/endLine to read more)";

const lineEndings = z.enum(["lf", "crlf"]);

export const fileContentPayload = z.object({
  kind: z.literal("file_content"),
  path: z.string(),
  content: z.string().describe("`cat -n` numbered lines of the window"),
  start_line: z.number().int(),
  end_line: z.number().int(),
  total_lines: z.number().int(),
  truncated: z.boolean().describe("more lines follow the window"),
  cut_lines: z.array(z.number().int()).describe("line numbers whose text was cut at fileReadMaxLineChars"),
  byte_capped: z
    .number()
    .int()
    .optional()
    .describe("the window ended early at limits.fileReadMaxBytes (the cap, in bytes)"),
  encoding: z.enum(TEXT_ENCODINGS),
  line_endings: lineEndings,
  next_offset: z
    .number()
    .int()
    .optional()
    .describe(
      "when truncated: the `offset` to pass next, in the caller's profile numbering (mewbo's is 0-based)",
    ),
  profile: z
    .literal("mouaif")
    .optional()
    .describe(
      "set in the mouaif profile: the text then speaks of startLine (next_offset is the next startLine)",
    ),
  already_shown: z
    .array(z.object({ start: z.number().int(), end: z.number().int() }))
    .optional()
    .describe(
      "ranges of the window this session was already shown, of this same version: their lines are left out of `content`; absent when every line is sent",
    ),
});

/**
 * A window this session was already shown, of this same version of the file: no content. Only what
 * the call does not already say (the path is the call's): its text is two header lines.
 */
export const fileUnchangedPayload = z.object({
  kind: z.literal("file_unchanged"),
  start_line: z.number().int(),
  end_line: z.number().int(),
});

export const imagePayload = z.object({
  kind: z.literal("image"),
  path: z.string(),
  mime_type: z.string(),
  size: z.number().int(),
  base64: z.string(),
});

export type FileContentPayload = z.output<typeof fileContentPayload>;
export type FileUnchangedPayload = z.output<typeof fileUnchangedPayload>;
export type ImagePayload = z.output<typeof imagePayload>;

const readOutput = z.discriminatedUnion("kind", [
  fileContentPayload,
  fileUnchangedPayload,
  imagePayload,
  pdfContentPayload,
  notebookPayload,
]);

type ReadPayload =
  | FileContentPayload
  | FileUnchangedPayload
  | ImagePayload
  | PdfContentPayload
  | NotebookPayload;

const readInput = z.object({
  path: z.string().min(1).describe("file path, relative to the project root"),
  offset: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe(
      "first line to return, 1-based (default 1); of a PDF the first page, of a notebook the first cell",
    ),
  limit: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe(
      "number of lines to return (default and maximum: fileReadMaxLines); of a PDF pages (default and maximum: pdfMaxPages), of a notebook cells",
    ),
});
type ReadInput = z.output<typeof readInput>;

const mewboInput = z.object({
  path: z.string().min(1).describe("file path, relative to the project root"),
  offset: z.number().int().min(0).optional().describe("line to start from (0-based)"),
  limit: z.number().int().min(1).optional().describe("max lines to read"),
});

const mouaifInput = z.object({
  path: z.string().min(1).describe("file path, relative to the project root"),
  startLine: z.number().int().min(1).optional().describe("first line, 1-indexed"),
  endLine: z.number().int().min(1).optional().describe("last line, 1-indexed, inclusive"),
});

function numbered(lineNo: number, text: string): string {
  return `${String(lineNo).padStart(6, " ")}\t${text}`;
}

function cutNote(length: number, maxChars: number): string {
  return ` ... [line cut: ${length} chars, showing ${maxChars}]`;
}

/** At least the UTF-8 bytes line `n` takes in `content` (number, tab, text, cut note, newline). */
function renderedBytes(n: number, text: string, maxChars: number): number {
  const prefix = Math.max(6, String(n).length) + 2;
  if (text.length <= maxChars) return prefix + Buffer.byteLength(text);
  return prefix + Buffer.byteLength(text.slice(0, maxChars)) + cutNote(text.length, maxChars).length;
}

/**
 * The last line that fits in `maxBytes` of rendered text, starting at `start` (always at least that
 * line: a cut line is at most fileReadMaxLineChars long).
 */
function lastWithinBytes(lines: string[], start: number, last: number, maxChars: number, maxBytes: number) {
  let used = 0;
  for (let n = start; n <= last; n++) {
    used += renderedBytes(n, lines[n - 1] as string, maxChars);
    if (used > maxBytes && n > start) return n - 1;
  }
  return last;
}

/**
 * Below this many bytes of numbered text saved, a partly seen window is sent whole: the
 * `# Already-Shown` header and the gap would cost about what they save.
 */
const PARTIAL_MIN_SAVED_BYTES = 160;

/** Up to this size a file is read synchronously: from the page cache that is quicker than a trip through the thread pool. */
const SYNC_READ_MAX_BYTES = 256 * 1024;

/**
 * What FileHandle.readFile() returns for a regular file of `size` bytes: reads until `size` bytes or
 * end of file, whichever comes first (a file that grew meanwhile is read up to the size of the stat).
 */
function readWhole(fd: number, size: number): Buffer {
  const buffer = Buffer.allocUnsafe(size);
  let total = 0;
  while (total < size) {
    const n = readSync(fd, buffer, total, size - total, null);
    if (n === 0) break;
    total += n;
  }
  return total === size ? buffer : buffer.subarray(0, total);
}

/**
 * Opens the file through core, so the path check holds at the open (a directory swapped for a
 * symlink meanwhile is refused, never read through), and reads the bytes and the stat of that one
 * descriptor, so the fingerprint describes what was read. Only regular files are read: a FIFO or a
 * device opened here would block or never end (the open itself does not block).
 */
type ReadBound = { bytes: number; what: string; limit?: string };

function checkReadable(stat: Stats, rel: string, max: ReadBound): void {
  if (stat.isDirectory())
    throw new ToolbeltError("EISDIR", `${rel} is a directory: use list_files or list_dir`);
  if (!stat.isFile()) throw new ToolbeltError("EINVAL_INPUT", `${rel} is not a regular file`);
  if (stat.size > max.bytes) {
    const limit = max.limit ? ` (${max.limit})` : "";
    throw new ToolbeltError(
      "ETOO_LARGE",
      `${rel} is ${stat.size} bytes; ${max.what} ${max.bytes} bytes${limit}`,
      {
        details: { path: rel, size: stat.size, limit: max.bytes },
      },
    );
  }
}

async function readOpened(
  ctx: ToolContext,
  abs: string,
  rel: string,
  max: ReadBound,
): Promise<{ bytes: Buffer; size: number; mtimeMs: number }> {
  // Most reads are of small files: opened (with the same checks), stat'ed and read synchronously,
  // microseconds each, where the thread-pool round trips of a FileHandle were most of the call's
  // cost. Larger (and empty, possibly special) files are read asynchronously, so a server answering
  // other sessions is never held up by one big read.
  const fd = ctx.session.openFileSync(abs);
  try {
    const stat = fstatSync(fd);
    checkReadable(stat, rel, max);
    if (stat.size > 0 && stat.size <= SYNC_READ_MAX_BYTES)
      return { bytes: readWhole(fd, stat.size), size: stat.size, mtimeMs: stat.mtimeMs };
  } finally {
    closeSync(fd);
  }
  const handle = await ctx.openFile(abs);
  try {
    const stat = await handle.stat();
    checkReadable(stat, rel, max);
    const bytes = await handle.readFile();
    return { bytes, size: stat.size, mtimeMs: stat.mtimeMs };
  } finally {
    await handle.close();
  }
}

async function readImage(ctx: ToolContext, abs: string, rel: string, mime: string): Promise<ImagePayload> {
  const { bytes } = await readOpened(ctx, abs, rel, {
    bytes: ctx.limits.fileReadMaxImageBytes,
    what: "images are read up to",
  });
  return {
    kind: "image",
    path: rel,
    mime_type: mime,
    size: bytes.byteLength,
    base64: bytes.toString("base64"),
  };
}

/** What a file is read as besides text, by its name: PDFs are also known by their content. */
function documentKind(name: string): "pdf" | "notebook" | undefined {
  const lower = name.toLowerCase();
  if (lower.endsWith(".pdf")) return "pdf";
  if (lower.endsWith(".ipynb")) return "notebook";
  return undefined;
}

export async function executeRead(input: ReadInput, ctx: ToolContext): Promise<ReadPayload> {
  const resolved = ctx.resolve(input.path);
  if (!resolved.exists)
    throw new ToolbeltError("ENOENT", `no such file: ${resolved.rel}`, { details: { path: resolved.rel } });
  const mime = imageMimeType(resolved.abs);
  if (mime) return readImage(ctx, resolved.abs, resolved.rel, mime);
  const named = documentKind(resolved.abs);
  const pdfBound: ReadBound = {
    bytes: ctx.limits.pdfMaxBytes,
    what: "PDFs are read up to",
    limit: "limits.pdfMaxBytes",
  };
  const bound: ReadBound =
    named === "pdf"
      ? pdfBound
      : named === "notebook"
        ? { bytes: ctx.limits.fileMaxBytes, what: "notebooks are read up to", limit: "limits.fileMaxBytes" }
        : { bytes: MAX_READ_BYTES, what: "read_file reads files up to" };
  const { bytes, size, mtimeMs } = await readOpened(ctx, resolved.abs, resolved.rel, bound);
  if (named === "pdf" || (named === undefined && isPdf(bytes))) {
    if (size > pdfBound.bytes)
      throw new ToolbeltError(
        "ETOO_LARGE",
        `${resolved.rel} is ${size} bytes; ${pdfBound.what} ${pdfBound.bytes} bytes (${pdfBound.limit})`,
        { details: { path: resolved.rel, size, limit: pdfBound.bytes } },
      );
    const payload = await readPdf(ctx, input, resolved.rel, bytes).catch((error: unknown) => {
      // Known by its first bytes alone, a file pdf.js cannot open is whatever else it is: a text
      // that happens to start with `%PDF-` is read as text. A `.pdf` that cannot be opened is refused.
      if (named === undefined && ToolbeltError.isInstance(error) && error.code === "EMALFORMED")
        return undefined;
      throw error;
    });
    if (payload) {
      recordWindow(
        ctx,
        resolved.abs,
        bytes,
        { size, mtimeMs },
        payload.start_page,
        payload.end_page,
        payload.truncated,
      );
      return payload;
    }
  }
  if (named === "notebook") {
    const payload = readNotebook(ctx, input, resolved.rel, bytes.toString("utf8"));
    recordWindow(
      ctx,
      resolved.abs,
      bytes,
      { size, mtimeMs },
      payload.start_cell,
      payload.end_cell,
      payload.truncated,
    );
    return payload;
  }
  const decoded = decodeText(bytes);
  if (!decoded) {
    throw new ToolbeltError(
      "EBINARY",
      `${resolved.rel} is a binary file (${size} bytes); read_file returns text and images only`,
      {
        details: { path: resolved.rel, size },
      },
    );
  }
  const lines = decoded.text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  const total = lines.length;
  const maxLines = ctx.limits.fileReadMaxLines;
  const start = input.offset ?? 1;
  const limit = Math.min(input.limit ?? maxLines, maxLines);
  const mouaif = ctx.profile === "mouaif";
  if (start > Math.max(total, 1)) {
    const field = mouaif ? "startLine" : "offset";
    throw new ToolbeltError(
      "EINVAL_INPUT",
      `${field} ${start} is past the end of ${resolved.rel} (${total} lines)`,
      {
        details: { field, path: resolved.rel, total_lines: total },
      },
    );
  }
  const lineLast = Math.min(total, start + limit - 1);
  const maxBytes = ctx.limits.fileReadMaxBytes;
  const last = lastWithinBytes(lines, start, lineLast, ctx.limits.fileReadMaxLineChars, maxBytes);
  const reachedEnd = last >= total;
  const window: LineWindow = { start, end: reachedEnd ? Number.POSITIVE_INFINITY : last };
  const fingerprint = fingerprintOf(bytes, { size, mtimeMs });
  // An empty window (an empty file) is answered as content: a notice would cost more than it saves.
  if (last >= start && ctx.ledger.covers(resolved.abs, fingerprint, window)) {
    return { kind: "file_unchanged", start_line: start, end_line: last };
  }
  const maxChars = ctx.limits.fileReadMaxLineChars;
  // Lines of this window already shown (this exact version): left out, and named in the header.
  let shown = ctx.ledger.seenWithin(resolved.abs, fingerprint, window);
  if (shown.length > 0) {
    let saved = 0;
    for (const w of shown)
      for (let n = w.start; n <= Math.min(w.end, last); n++)
        saved += renderedBytes(n, lines[n - 1] as string, maxChars);
    if (saved < PARTIAL_MIN_SAVED_BYTES) shown = [];
  }
  let nextShown = 0;
  const cut: number[] = [];
  let crlf = false;
  const out: string[] = [];
  for (let n = start; n <= last; n++) {
    const skip = shown[nextShown];
    if (skip && n >= skip.start) {
      n = Math.min(skip.end, last);
      nextShown++;
      continue;
    }
    let text = lines[n - 1] as string;
    if (text.endsWith("\r")) {
      crlf = true;
      text = text.slice(0, -1);
    }
    if (text.length > maxChars) {
      cut.push(n);
      text = `${text.slice(0, maxChars)}${cutNote(text.length, maxChars)}`;
    }
    out.push(numbered(n, text));
  }
  if (!reachedEnd) out.push(mouaif ? MOUAIF_TRUNCATION_NOTE : TRUNCATION_NOTE);
  ctx.ledger.record(resolved.abs, fingerprint, window);
  return {
    kind: "file_content",
    path: resolved.rel,
    content: out.join("\n"),
    start_line: total === 0 ? 0 : start,
    end_line: last,
    total_lines: total,
    truncated: !reachedEnd,
    cut_lines: cut,
    ...(last < lineLast ? { byte_capped: maxBytes } : {}),
    encoding: decoded.encoding,
    line_endings: crlf ? "crlf" : "lf",
    ...(reachedEnd ? {} : { next_offset: ctx.profile === "mewbo" ? last : last + 1 }),
    ...(mouaif ? { profile: "mouaif" as const } : {}),
    ...(shown.length
      ? { already_shown: shown.map((w) => ({ start: w.start, end: Math.min(w.end, last) })) }
      : {}),
  };
}

/**
 * A PDF's pages or a notebook's cells shown: the ledger records this version as read (in pages or
 * cells), so an edit can tell when the file changed since (notebook_edit refuses then). These reads
 * are never answered `file_unchanged`: the notice speaks of lines.
 */
function recordWindow(
  ctx: ToolContext,
  abs: string,
  bytes: Buffer,
  stat: { size: number; mtimeMs: number },
  start: number,
  end: number,
  truncated: boolean,
): void {
  ctx.ledger.record(abs, fingerprintOf(bytes, stat), {
    start: Math.max(1, start),
    end: truncated ? Math.max(1, end) : Number.POSITIVE_INFINITY,
  });
}

export function renderRead(payload: ReadPayload): string {
  if (payload.kind === "pdf_content") return renderPdf(payload);
  if (payload.kind === "notebook") return renderNotebook(payload);
  if (payload.kind === "file_unchanged") {
    // Short on purpose (it replaces windows of a few lines) and headers only: no body, so nothing in
    // it can pass for (or be pasted back as) file content. The words are the partial window's.
    return renderText([
      ["Kind", "file_unchanged"],
      ["Already-Shown", `${payload.start_line}-${payload.end_line} (unchanged; not repeated)`],
    ]);
  }
  if (payload.kind === "image") {
    return renderText(
      [
        ["Kind", "image"],
        ["Path", payload.path],
        ["Mime", payload.mime_type],
        ["Size", payload.size],
      ],
      `[image ${payload.path}: ${payload.mime_type}, ${payload.size} bytes; the data travels as an image block]`,
    );
  }
  const next = payload.profile === "mouaif" ? "startLine" : "offset";
  const lines =
    payload.total_lines === 0
      ? "0 (empty file)"
      : `${payload.start_line}-${payload.end_line} of ${payload.total_lines}`;
  return renderText(
    [
      ["Kind", "file_content"],
      ["Path", payload.path],
      ["Lines", lines],
      [
        "Truncated",
        payload.truncated ? `yes (next ${next} ${payload.next_offset ?? payload.end_line + 1})` : undefined,
      ],
      [
        "Byte-Cap",
        payload.byte_capped
          ? `${payload.byte_capped} bytes reached (limits.fileReadMaxBytes); read on from the next ${next}`
          : undefined,
      ],
      [
        "Already-Shown",
        payload.already_shown
          ? `${payload.already_shown.map((w) => `${w.start}-${w.end}`).join(",")} (unchanged; not repeated)`
          : undefined,
      ],
      ["Cut-Lines", payload.cut_lines.length ? payload.cut_lines.join(",") : undefined],
      ["Encoding", payload.encoding === "utf-8" ? undefined : payload.encoding],
      ["Line-Endings", payload.line_endings === "crlf" ? "crlf" : undefined],
    ],
    payload.content,
  );
}

export const readFileTool = defineTool({
  name: "read_file",
  family: "files",
  access: "read",
  description:
    "Read a text file as numbered lines (like `cat -n`), a window at a time: `offset` is the first line (1-based), `limit` the number of lines. Images (.png .jpg .jpeg .gif .webp .bmp .ico) come back as image data. A PDF comes back as text by page (`offset`/`limit` count pages), a Jupyter notebook (.ipynb) as its cells with their outputs (`offset`/`limit` count cells; image outputs as image data). Re-reading a text window already returned and unchanged answers `file_unchanged` instead of repeating the content.",
  input: readInput,
  output: readOutput,
  paths: (input) => [input.path],
  execute: executeRead,
  render: renderRead,
  profiles: {
    mewbo: {
      name: "read_file",
      input: mewboInput,
      description:
        "Read a text file as numbered lines. `offset` is the line to start from (0-based), `limit` the maximum number of lines.",
      toInput: (input) => {
        const i = input as z.output<typeof mewboInput>;
        return {
          path: i.path,
          ...(i.offset !== undefined ? { offset: i.offset + 1 } : {}),
          ...(i.limit !== undefined ? { limit: i.limit } : {}),
        };
      },
    },
    mouaif: {
      name: "read_file",
      input: mouaifInput,
      description: "Read a text file as numbered lines from `startLine` to `endLine` (1-indexed, inclusive).",
      toInput: (input) => {
        const i = input as z.output<typeof mouaifInput>;
        const start = i.startLine ?? 1;
        if (i.endLine !== undefined && i.endLine < start) {
          throw new ToolbeltError("EINVAL_INPUT", `endLine ${i.endLine} is before startLine ${start}`, {
            details: { field: "endLine" },
          });
        }
        return {
          path: i.path,
          offset: start,
          ...(i.endLine !== undefined ? { limit: i.endLine - start + 1 } : {}),
        };
      },
    },
  },
});
