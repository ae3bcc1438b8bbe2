import {
  type HeaderValue,
  renderSections,
  renderText,
  type TextSection,
  ToolbeltError,
  type ToolContext,
  z,
} from "@toolbelt/core";
import {
  collapseCarriageReturns,
  multilineText,
  NOTEBOOK_CELL_TYPES,
  type NotebookCell,
  parseNotebook,
  stripAnsi,
} from "@toolbelt/core/internal";

const cut = z.object({ chars: z.number().int(), shown: z.number().int() });

const notebookOutput = z.object({
  output_type: z.string().describe("stream, execute_result, display_data or error"),
  name: z.string().optional().describe("a stream's name: stdout or stderr"),
  execution_count: z.number().int().nullable().optional(),
  text: z
    .string()
    .optional()
    .describe(
      "the output as text: a stream's text, a result's text/plain (else text/markdown), an error's traceback; ANSI colours stripped and progress-bar redraws collapsed",
    ),
  cut: cut
    .optional()
    .describe("the text was over limits.notebookOutputMaxChars: its head and tail are shown"),
  mime_types: z.array(z.string()).optional().describe("a result's data types, when none of them is text"),
  image: z.number().int().optional().describe("the entry of `images` (1-based) holding this output's image"),
  omitted: z.string().optional().describe("what of the output is not shown, and why"),
  ename: z.string().optional(),
  evalue: z.string().optional(),
});

const notebookCell = z.object({
  index: z.number().int().describe("the cell's number, 1-based: notebook_edit's `index`"),
  id: z.string().optional().describe("the cell's id (nbformat 4.5+): notebook_edit's `cell_id`"),
  cell_type: z.enum(NOTEBOOK_CELL_TYPES),
  source: z.string(),
  source_cut: cut.optional().describe("the cell alone was over limits.fileReadMaxBytes: its source was cut"),
  execution_count: z.number().int().nullable().optional(),
  outputs: z.array(notebookOutput).optional(),
  outputs_omitted: z
    .number()
    .int()
    .optional()
    .describe("outputs of this cell left out at limits.fileReadMaxBytes"),
});

const notebookImage = z.object({
  cell: z.number().int(),
  output: z.number().int().describe("the output's number in its cell, 1-based"),
  mime_type: z.string(),
  size: z.number().int().describe("bytes, decoded"),
  base64: z.string(),
});

export const notebookPayload = z.object({
  kind: z.literal("notebook"),
  path: z.string(),
  nbformat: z.string().describe("`4.5`"),
  language: z.string().optional(),
  cells: z.array(notebookCell),
  start_cell: z.number().int(),
  end_cell: z.number().int(),
  total_cells: z.number().int(),
  truncated: z.boolean().describe("more cells follow the window"),
  next_offset: z
    .number()
    .int()
    .optional()
    .describe("when truncated: the `offset` (first cell) to pass next, in the caller's profile numbering"),
  byte_capped: z
    .number()
    .int()
    .optional()
    .describe("the window ended early at limits.fileReadMaxBytes (the cap, in bytes)"),
  images: z
    .array(notebookImage)
    .describe("the image outputs (PNG, JPEG) of the cells shown, up to limits.fileReadMaxImageBytes in all"),
  profile: z.literal("mouaif").optional(),
});

export type NotebookPayload = z.output<typeof notebookPayload>;
type Output = z.output<typeof notebookOutput>;
type Cell = z.output<typeof notebookCell>;
type Image = z.output<typeof notebookImage>;

/** The image types a notebook output is shown as (as an image block, the way read_file shows a .png). */
const IMAGE_MIME = ["image/png", "image/jpeg"];
/** Text forms of a result, in order of preference. */
const TEXT_MIME = ["text/plain", "text/markdown"];

/** Bytes a section's header and blank lines cost besides its content. */
const SECTION_OVERHEAD = 48;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** `text` cut to its head and tail around a note, when over `max` characters. */
function headAndTail(text: string, max: number): { text: string; cut?: { chars: number; shown: number } } {
  if (text.length <= max) return { text };
  const head = Math.ceil(max / 2);
  const tail = max - head;
  const shown = `${text.slice(0, head)}\n… [${text.length - max} chars cut] …\n${text.slice(text.length - tail)}`;
  return { text: shown, cut: { chars: text.length, shown: max } };
}

function decodedSize(base64: string): number {
  const padding = base64.endsWith("==") ? 2 : base64.endsWith("=") ? 1 : 0;
  return Math.floor((base64.length * 3) / 4) - padding;
}

/** One output as shown; its image (if any) goes to `images` while they fit in `imageBudget`. */
function showOutput(
  raw: unknown,
  where: { cell: number; output: number },
  maxChars: number,
  images: Image[],
  imageBudget: { left: number; limit: number },
): Output {
  if (!isRecord(raw)) return { output_type: "unknown", omitted: "not a JSON object" };
  const type = typeof raw.output_type === "string" ? raw.output_type : "unknown";
  const out: Output = { output_type: type };
  let text: string | undefined;
  if (type === "stream") {
    if (typeof raw.name === "string") out.name = raw.name;
    text = collapseCarriageReturns(stripAnsi(multilineText(raw.text)));
  } else if (type === "error") {
    out.ename = typeof raw.ename === "string" ? raw.ename : "";
    out.evalue = typeof raw.evalue === "string" ? raw.evalue : "";
    const traceback = Array.isArray(raw.traceback) ? raw.traceback.filter((l) => typeof l === "string") : [];
    text = stripAnsi(traceback.join("\n")) || `${out.ename}: ${out.evalue}`;
  } else {
    if (typeof raw.execution_count === "number" || raw.execution_count === null)
      out.execution_count = raw.execution_count;
    const data = isRecord(raw.data) ? raw.data : {};
    const textMime = TEXT_MIME.find((m) => data[m] !== undefined);
    if (textMime) text = stripAnsi(multilineText(data[textMime]));
    const imageMime = IMAGE_MIME.find((m) => data[m] !== undefined);
    if (imageMime) {
      const base64 = multilineText(data[imageMime]).replace(/\s+/g, "");
      const size = decodedSize(base64);
      if (size <= imageBudget.left) {
        imageBudget.left -= size;
        images.push({ ...where, mime_type: imageMime, size, base64 });
        out.image = images.length;
      } else
        out.omitted = `${imageMime} image of ${size} bytes: over limits.fileReadMaxImageBytes (${imageBudget.limit} bytes for the images of one read)`;
    }
    const types = Object.keys(data);
    if (!textMime && !imageMime && types.length > 0) out.mime_types = types;
  }
  if (text !== undefined) {
    const shown = headAndTail(text, maxChars);
    out.text = shown.text;
    if (shown.cut) out.cut = shown.cut;
  }
  return out;
}

function outputBytes(output: Output): number {
  return Buffer.byteLength(output.text ?? "") + SECTION_OVERHEAD;
}

/** The last whole character of `text` within `bytes` UTF-8 bytes. */
function cutToBytes(text: string, bytes: number): string {
  const buffer = Buffer.from(text);
  if (buffer.byteLength <= bytes) return text;
  let end = Math.max(0, bytes);
  while (end > 0 && ((buffer[end] as number) & 0xc0) === 0x80) end--;
  return buffer.subarray(0, end).toString("utf8");
}

/** The window asked for: `offset` is the first cell (1-based), `limit` the number of cells. */
export function readNotebook(
  ctx: ToolContext,
  input: { offset?: number | undefined; limit?: number | undefined },
  rel: string,
  text: string,
): NotebookPayload {
  const notebook = parseNotebook(text, rel);
  const total = notebook.cells.length;
  const start = input.offset ?? 1;
  const mouaif = ctx.profile === "mouaif";
  if (start > Math.max(total, 1)) {
    const field = mouaif ? "startLine" : "offset";
    throw new ToolbeltError("EINVAL_INPUT", `${field} ${start} is past the end of ${rel} (${total} cells)`, {
      details: { field, path: rel, total_cells: total },
    });
  }
  const limit = input.limit ?? total;
  const last = Math.min(total, start + limit - 1);
  const maxChars = ctx.limits.notebookOutputMaxChars;
  const images: Image[] = [];
  const imageBudget = { left: ctx.limits.fileReadMaxImageBytes, limit: ctx.limits.fileReadMaxImageBytes };
  let left = ctx.limits.fileReadMaxBytes;
  let byteCapped = false;
  const cells: Cell[] = [];
  for (let index = start; index <= last; index++) {
    const raw = notebook.cells[index - 1] as NotebookCell;
    const first = index === start;
    const cell = showCell(raw, index, maxChars, images, imageBudget);
    let size = Buffer.byteLength(cell.source) + SECTION_OVERHEAD;
    for (const output of cell.outputs ?? []) size += outputBytes(output);
    if (size > left && !first) {
      // The images of a cell left out are not sent either.
      while (images.at(-1)?.cell === index) images.pop();
      byteCapped = true;
      break;
    }
    if (size > left) {
      byteCapped = true;
      fitCell(cell, left, images);
    }
    left -= size;
    cells.push(cell);
  }
  const end = cells.at(-1)?.index ?? 0;
  const truncated = end < total;
  return {
    kind: "notebook",
    path: rel,
    nbformat: `${notebook.nbformat}.${notebook.nbformatMinor}`,
    ...(notebook.language ? { language: notebook.language } : {}),
    cells,
    start_cell: total === 0 ? 0 : start,
    end_cell: end,
    total_cells: total,
    truncated,
    ...(truncated ? { next_offset: ctx.profile === "mewbo" ? end : end + 1 } : {}),
    ...(byteCapped ? { byte_capped: ctx.limits.fileReadMaxBytes } : {}),
    images,
    ...(mouaif ? { profile: "mouaif" as const } : {}),
  };
}

function showCell(
  raw: NotebookCell,
  index: number,
  maxChars: number,
  images: Image[],
  imageBudget: { left: number; limit: number },
): Cell {
  const cell: Cell = { index, cell_type: raw.cell_type, source: multilineText(raw.source) };
  if (typeof raw.id === "string") cell.id = raw.id;
  if (raw.cell_type === "code") {
    if (typeof raw.execution_count === "number" || raw.execution_count === null)
      cell.execution_count = raw.execution_count;
    const outputs = Array.isArray(raw.outputs) ? raw.outputs : [];
    cell.outputs = outputs.map((o, i) =>
      showOutput(o, { cell: index, output: i + 1 }, maxChars, images, imageBudget),
    );
  }
  return cell;
}

/** A window's first cell alone over the byte budget: its source cut, then as many outputs as fit. */
function fitCell(cell: Cell, budget: number, images: Image[]): void {
  const source = cutToBytes(cell.source, Math.max(0, budget - SECTION_OVERHEAD));
  if (source.length < cell.source.length)
    cell.source_cut = { chars: cell.source.length, shown: source.length };
  cell.source = source;
  let left = budget - Buffer.byteLength(source) - SECTION_OVERHEAD;
  const outputs = cell.outputs ?? [];
  let kept = 0;
  while (kept < outputs.length && outputBytes(outputs[kept] as Output) <= left) {
    left -= outputBytes(outputs[kept] as Output);
    kept++;
  }
  if (kept < outputs.length) {
    const dropped = new Set(outputs.slice(kept).map((o) => o.image));
    for (let i = images.length - 1; i >= 0; i--)
      if (images[i]?.cell === cell.index && dropped.has(i + 1)) images.splice(i, 1);
    cell.outputs = outputs.slice(0, kept);
    cell.outputs_omitted = outputs.length - kept;
  }
}

function cellLabel(cell: Cell): string {
  const facts: string[] = [cell.cell_type];
  if (cell.id !== undefined) facts.push(`id ${cell.id}`);
  if (cell.execution_count !== undefined && cell.execution_count !== null)
    facts.push(`execution_count ${cell.execution_count}`);
  if (cell.source_cut)
    facts.push(`source cut: ${cell.source_cut.chars} chars, showing ${cell.source_cut.shown}`);
  if (cell.outputs_omitted)
    facts.push(`${cell.outputs_omitted} more outputs not shown: limits.fileReadMaxBytes`);
  return `${cell.index} (${facts.join(", ")})`;
}

function outputLabel(cell: Cell, n: number, output: Output, images: Image[]): string {
  const parts = [`${cell.index}.${n}`, output.output_type];
  if (output.name) parts.push(output.name);
  if (output.ename) parts.push(output.ename);
  const notes: string[] = [];
  if (output.image !== undefined) {
    const image = images[output.image - 1];
    if (image)
      notes.push(`${image.mime_type}, ${image.size} bytes: image ${output.image}, sent as an image block`);
  }
  if (output.omitted) notes.push(output.omitted);
  if (output.mime_types) notes.push(`no text form: ${output.mime_types.join(", ")}`);
  if (output.cut) notes.push(`cut: ${output.cut.chars} chars, showing ${output.cut.shown} (head and tail)`);
  return notes.length ? `${parts.join(" ")} (${notes.join("; ")})` : parts.join(" ");
}

export function renderNotebook(payload: NotebookPayload): string {
  const next = payload.profile === "mouaif" ? "startLine" : "offset";
  const sections: TextSection[] = [];
  for (const cell of payload.cells) {
    sections.push({ key: "Cell", value: cellLabel(cell), body: cell.source });
    (cell.outputs ?? []).forEach((output, i) => {
      sections.push({
        key: "Output",
        value: outputLabel(cell, i + 1, output, payload.images),
        body: output.text ?? "",
      });
    });
  }
  const cells =
    payload.total_cells === 0
      ? "0 (no cells)"
      : `${payload.start_cell}-${payload.end_cell} of ${payload.total_cells}`;
  const headers: Array<[string, HeaderValue]> = [
    ["Kind", "notebook"],
    ["Path", payload.path],
    ["Cells", cells],
    ["Nbformat", payload.nbformat],
    ["Language", payload.language],
    [
      "Truncated",
      payload.truncated ? `yes (next ${next} ${payload.next_offset ?? payload.end_cell + 1})` : undefined,
    ],
    [
      "Byte-Cap",
      payload.byte_capped
        ? `${payload.byte_capped} bytes reached (limits.fileReadMaxBytes); read on from the next ${next}`
        : undefined,
    ],
    ["Images", payload.images.length ? `${payload.images.length} (sent as image blocks)` : undefined],
  ];
  return renderText(headers, renderSections(sections));
}
