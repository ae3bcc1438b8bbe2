import {
  type HeaderValue,
  renderSections,
  renderText,
  ToolbeltError,
  type ToolContext,
  z,
} from "@toolbelt/core";
import { extractPdf } from "./pdf-extract.js";

const pdfPage = z.object({
  page: z.number().int(),
  text: z.string().describe("the page's text, lines as pdf.js ends them; empty when the page has none"),
  cut: z
    .object({ chars: z.number().int(), shown: z.number().int() })
    .optional()
    .describe("the page alone was over limits.fileReadMaxBytes: its text was cut (`chars` in all)"),
  error: z.string().optional().describe("why the page could not be read (its text is then empty)"),
});

export const pdfContentPayload = z.object({
  kind: z.literal("pdf_content"),
  path: z.string(),
  pages: z.array(pdfPage),
  start_page: z.number().int(),
  end_page: z.number().int(),
  total_pages: z.number().int(),
  truncated: z.boolean().describe("more pages follow the window"),
  next_offset: z
    .number()
    .int()
    .optional()
    .describe("when truncated: the `offset` (first page) to pass next, in the caller's profile numbering"),
  page_capped: z
    .number()
    .int()
    .optional()
    .describe("the window ended at limits.pdfMaxPages (the cap, in pages)"),
  byte_capped: z
    .number()
    .int()
    .optional()
    .describe("the window ended early at limits.fileReadMaxBytes (the cap, in bytes)"),
  stopped: z
    .object({ bound: z.enum(["time", "memory"]), limit: z.number().int() })
    .optional()
    .describe("parsing was stopped at limits.pdfTimeoutMs or limits.pdfMaxMemoryBytes after the pages shown"),
  profile: z.literal("mouaif").optional(),
});

export type PdfContentPayload = z.output<typeof pdfContentPayload>;

const PDF_MAGIC = Buffer.from("%PDF-");

/**
 * Whether bytes are a PDF by their content: the `%PDF-` header at the very start. (Readers also
 * accept it after some junk, but so would any text that merely mentions it; a `.pdf` name is
 * enough for those.)
 */
export function isPdf(bytes: Uint8Array): boolean {
  return bytes.byteLength >= PDF_MAGIC.length && PDF_MAGIC.every((b, i) => bytes[i] === b);
}

/** The window asked for: `offset` is the first page (1-based), `limit` the number of pages. */
export async function readPdf(
  ctx: ToolContext,
  input: { offset?: number | undefined; limit?: number | undefined },
  rel: string,
  bytes: Uint8Array,
): Promise<PdfContentPayload> {
  const cap = ctx.limits.pdfMaxPages;
  const start = input.offset ?? 1;
  const limit = Math.min(input.limit ?? cap, cap);
  const extract = await extractPdf(
    bytes,
    { first: start, last: start + limit - 1, maxBytes: ctx.limits.fileReadMaxBytes },
    { timeoutMs: ctx.limits.pdfTimeoutMs, maxMemoryBytes: ctx.limits.pdfMaxMemoryBytes, signal: ctx.signal },
    rel,
  );
  const total = extract.total ?? 0;
  const mouaif = ctx.profile === "mouaif";
  if (start > Math.max(total, 1)) {
    const field = mouaif ? "startLine" : "offset";
    throw new ToolbeltError("EINVAL_INPUT", `${field} ${start} is past the end of ${rel} (${total} pages)`, {
      details: { field, path: rel, total_pages: total },
    });
  }
  const pages = extract.pages.map((p) => ({
    page: p.page,
    text: p.text ?? "",
    ...(p.chars !== undefined ? { cut: { chars: p.chars, shown: (p.text ?? "").length } } : {}),
    ...(p.error !== undefined ? { error: p.error } : {}),
  }));
  const last = pages.at(-1)?.page ?? Math.min(total, start - 1);
  const truncated = last < total;
  const capped = input.limit === undefined || input.limit > cap;
  const byteCapped = extract.ended === "bytes" || pages.some((p) => p.cut);
  const stopped = extract.ended === "time" || extract.ended === "memory" ? extract.ended : undefined;
  return {
    kind: "pdf_content",
    path: rel,
    pages,
    start_page: total === 0 ? 0 : start,
    end_page: last,
    total_pages: total,
    truncated,
    ...(truncated ? { next_offset: ctx.profile === "mewbo" ? last : last + 1 } : {}),
    ...(capped && extract.ended === "done" && start + limit - 1 < total ? { page_capped: cap } : {}),
    ...(byteCapped ? { byte_capped: ctx.limits.fileReadMaxBytes } : {}),
    ...(stopped
      ? {
          stopped: {
            bound: stopped,
            limit: stopped === "time" ? ctx.limits.pdfTimeoutMs : ctx.limits.pdfMaxMemoryBytes,
          },
        }
      : {}),
    ...(mouaif ? { profile: "mouaif" as const } : {}),
  };
}

function pageLabel(page: PdfContentPayload["pages"][number]): string {
  if (page.error !== undefined) return `${page.page} (unreadable: ${page.error})`;
  if (page.cut) return `${page.page} (cut: ${page.cut.chars} chars, showing ${page.cut.shown})`;
  return page.text === "" ? `${page.page} (no text)` : String(page.page);
}

export function renderPdf(payload: PdfContentPayload): string {
  const next = payload.profile === "mouaif" ? "startLine" : "offset";
  const readOn = `read on from the next ${next}`;
  const pages =
    payload.total_pages === 0
      ? "0 (no pages)"
      : `${payload.start_page}-${payload.end_page} of ${payload.total_pages}`;
  const stopped = payload.stopped;
  const headers: Array<[string, HeaderValue]> = [
    ["Kind", "pdf_content"],
    ["Path", payload.path],
    ["Pages", pages],
    [
      "Truncated",
      payload.truncated ? `yes (next ${next} ${payload.next_offset ?? payload.end_page + 1})` : undefined,
    ],
    [
      "Page-Cap",
      payload.page_capped ? `${payload.page_capped} pages (limits.pdfMaxPages); ${readOn}` : undefined,
    ],
    [
      "Byte-Cap",
      payload.byte_capped
        ? `${payload.byte_capped} bytes reached (limits.fileReadMaxBytes); ${readOn}`
        : undefined,
    ],
    [
      "Stopped",
      stopped
        ? stopped.bound === "time"
          ? `limits.pdfTimeoutMs (${stopped.limit} ms) reached; ${readOn}`
          : `limits.pdfMaxMemoryBytes (${stopped.limit} bytes) reached; ${readOn}`
        : undefined,
    ],
  ];
  return renderText(
    headers,
    renderSections(payload.pages.map((p) => ({ key: "Page", value: pageLabel(p), body: p.text }))),
  );
}
