import { randomBytes } from "node:crypto";
import {
  defineTool,
  type ErrorPayload,
  errorPayload,
  type HeaderValue,
  renderText,
  ToolbeltError,
  type ToolContext,
  z,
} from "@toolbelt/core";
import {
  cellIdsRequired,
  fingerprintOf,
  multilineText,
  NOTEBOOK_CELL_TYPES,
  type NotebookCell,
  type NotebookCellType,
  parseNotebook,
} from "@toolbelt/core/internal";
import { loadFile, unifiedDiff } from "./apply.js";
import { cellLayout, deleteCell, insertCell, replaceCell, serializeCell } from "./notebook-layout.js";

const EDIT_MODES = ["replace", "insert", "delete"] as const;

const input = z.object({
  path: z.string().min(1).describe("The notebook (.ipynb), relative to the project root"),
  cell_id: z
    .string()
    .min(1)
    .optional()
    .describe("The cell's id, as read_file shows it (nbformat 4.5+). Give cell_id or index"),
  index: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe(
      "The cell's number as read_file shows it, 1-based. For insert: the position the new cell takes (cells + 1 appends)",
    ),
  edit_mode: z
    .enum(EDIT_MODES)
    .optional()
    .describe("replace (default) the cell's source, insert a new cell, or delete the cell"),
  cell_type: z
    .enum(NOTEBOOK_CELL_TYPES)
    .optional()
    .describe("The cell's type: required for insert; for replace, changes the type (default: kept)"),
  new_source: z.string().optional().describe("The cell's new source (replace, insert)"),
});
type Input = z.output<typeof input>;

export const notebookEditPayload = z.object({
  kind: z.literal("notebook_edited"),
  path: z.string(),
  edit_mode: z.enum(EDIT_MODES),
  index: z.number().int().describe("the cell's number (1-based): where it is now, or where it was (delete)"),
  cell_id: z.string().optional(),
  cell_type: z.enum(NOTEBOOK_CELL_TYPES),
  total_cells: z.number().int().describe("cells in the notebook after the edit"),
  outputs_cleared: z
    .boolean()
    .describe(
      "a replaced code cell's outputs and execution_count were cleared (they described the old source)",
    ),
  diff: z.string().describe("unified diff of the cell's source"),
  notes: z.array(z.string()).describe("notes from afterWrite hooks"),
});
export type NotebookEditResult = z.output<typeof notebookEditPayload>;

const DESCRIPTION =
  "Edit one cell of a Jupyter notebook (.ipynb): replace its source, insert a new cell, or delete it. " +
  "Name the cell by cell_id or by index (1-based, as read_file numbers cells); insert puts the new cell at index, " +
  "or after the cell named by cell_id. Replacing a code cell clears its outputs and execution_count. " +
  "Every other cell, the notebook's metadata and its formatting stay byte for byte as they were. " +
  "If the notebook changed on disk since this session read it, nothing is written (ECONFLICT): read it again.";

/** A source as the file holds them: a list of lines, each with its newline (Jupyter's form), or one string. */
function sourceValue(text: string, asList: boolean): string | string[] {
  return asList ? (text.match(/[^\n]*\n|[^\n]+$/g) ?? []) : text;
}

const sortedKeys = (record: Record<string, unknown>): boolean => {
  const keys = Object.keys(record);
  return keys.every((k, i) => i === 0 || (keys[i - 1] as string) <= k);
};

function sortKeys(record: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** A fresh cell id: eight hex digits, as Jupyter makes them, unique in the notebook. */
function newCellId(cells: NotebookCell[]): string {
  const taken = new Set(cells.map((c) => c.id));
  for (;;) {
    const id = randomBytes(4).toString("hex");
    if (!taken.has(id)) return id;
  }
}

/** A new cell with Jupyter's keys, in its (sorted) order. */
function newCell(
  type: NotebookCellType,
  source: string | string[],
  id: string | undefined,
): Record<string, unknown> {
  if (type === "code")
    return {
      cell_type: type,
      execution_count: null,
      ...(id ? { id } : {}),
      metadata: {},
      outputs: [],
      source,
    };
  return { cell_type: type, ...(id ? { id } : {}), metadata: {}, source };
}

/** The cell replaced: new source (and type); its id and metadata kept; a code cell's outputs cleared. */
function replacedCell(
  old: NotebookCell,
  type: NotebookCellType,
  source: string | string[],
): Record<string, unknown> {
  const cell: Record<string, unknown> = { ...old, cell_type: type, source };
  if (type === "code") {
    cell.execution_count = null;
    cell.outputs = [];
    // Code cells have no attachments (nbformat); a markdown cell's pasted images go with its type.
    delete cell.attachments;
  } else {
    delete cell.execution_count;
    delete cell.outputs;
  }
  return sortedKeys(old) ? sortKeys(cell) : cell;
}

/**
 * A cell id as a message shows it: as is when it has the form nbformat gives ids, else quoted as JSON,
 * so an id holding a newline cannot put a line of its own (a forged `# Error:`) into the message.
 */
const shownId = (id: string) => (/^[A-Za-z0-9_-]{1,64}$/.test(id) ? id : JSON.stringify(id));

function locate(cells: NotebookCell[], args: Input, rel: string): number | ErrorPayload {
  if (args.cell_id !== undefined) {
    const found = cells.flatMap((c, i) => (c.id === args.cell_id ? [i] : []));
    if (found.length > 1)
      return errorPayload(
        "EMULTI_MATCH",
        `${found.length} cells of ${rel} have the id ${shownId(args.cell_id)} (cells ${found.map((i) => i + 1).join(", ")}): name the cell by index`,
        { path: rel, match_count: found.length },
      );
    if (found.length === 0) {
      const ids = cells.map((c) => c.id).filter((id): id is string => typeof id === "string");
      const known = ids.length
        ? `its cells' ids: ${ids.slice(0, 50).map(shownId).join(", ")}${ids.length > 50 ? ", …" : ""}`
        : "its cells have no ids: name the cell by index";
      return errorPayload("ENO_MATCH", `no cell of ${rel} has the id ${shownId(args.cell_id)}; ${known}`, {
        path: rel,
      });
    }
    return found[0] as number;
  }
  return (args.index as number) - 1;
}

export async function notebookEdit(
  ctx: ToolContext,
  args: Input,
): Promise<NotebookEditResult | ErrorPayload> {
  const mode = args.edit_mode ?? "replace";
  if ((args.cell_id === undefined) === (args.index === undefined))
    return errorPayload("EINVAL_INPUT", "give the cell's cell_id or its index (one of them)", {
      field: "cell_id",
    });
  if (mode !== "delete" && args.new_source === undefined)
    return errorPayload("EINVAL_INPUT", `new_source is required to ${mode} a cell`, { field: "new_source" });
  if (mode === "insert" && args.cell_type === undefined)
    return errorPayload("EINVAL_INPUT", "cell_type (code, markdown or raw) is required to insert a cell", {
      field: "cell_type",
    });
  const target = ctx.resolve(args.path);
  if (!target.rel.toLowerCase().endsWith(".ipynb"))
    return errorPayload("EINVAL_INPUT", `${target.rel} is not a notebook (.ipynb)`, { path: target.rel });
  return ctx.withFileLock(target.abs, async () => {
    const file = await loadFile(ctx, target.abs, target.rel);
    if (!file.exists)
      return errorPayload("ENOENT", `no such notebook: ${target.rel} (create one with write_file)`, {
        path: target.rel,
      });
    if (file.stale)
      return errorPayload(
        "ECONFLICT",
        `${target.rel} changed on disk since this session last read it: read it again (read_file) and redo the edit against what it holds now; nothing was written`,
        { path: target.rel },
      );
    const original = file.original as Uint8Array;
    const text = Buffer.from(original.buffer, original.byteOffset, original.byteLength).toString("utf8");
    const notebook = parseNotebook(text, target.rel);
    const cells = notebook.cells;
    const at = locate(cells, args, target.rel);
    if (typeof at !== "number") return at;
    // With a cell_id, insert goes after that cell; with an index, the new cell takes that place.
    const position = mode === "insert" && args.cell_id !== undefined ? at + 1 : at;
    const last = mode === "insert" ? cells.length + 1 : cells.length;
    if (position + 1 > last)
      return errorPayload(
        "EINVAL_INPUT",
        `index ${position + 1} is past the ${mode === "insert" ? "end" : "last cell"} of ${target.rel} (${cells.length} cells${mode === "insert" ? `; ${cells.length + 1} appends` : ""})`,
        { field: "index", path: target.rel, total_cells: cells.length },
      );
    const layout = cellLayout(text);
    const old = cells[position];
    const asList = Array.isArray((old ?? cells[0])?.source ?? []);
    let after: string;
    let cellType: NotebookCellType;
    let cellId: unknown;
    let before = "";
    let next = "";
    let cleared = false;
    if (mode === "delete") {
      const gone = old as NotebookCell;
      cellType = gone.cell_type;
      cellId = gone.id;
      before = multilineText(gone.source);
      after = deleteCell(text, layout, position);
    } else if (mode === "insert") {
      cellType = args.cell_type as NotebookCellType;
      cellId = cellIdsRequired(notebook) ? newCellId(cells) : undefined;
      next = args.new_source as string;
      const cell = newCell(cellType, sourceValue(next, asList), cellId as string | undefined);
      after = insertCell(text, layout, position, serializeCell(cell, layout));
    } else {
      const was = old as NotebookCell;
      cellType = args.cell_type ?? was.cell_type;
      cellId = was.id;
      before = multilineText(was.source);
      next = args.new_source as string;
      if (next === before && cellType === was.cell_type)
        return errorPayload(
          "EINVAL_INPUT",
          `new_source is cell ${position + 1}'s source already (and its type is ${cellType}); nothing to change`,
          { path: target.rel },
        );
      cleared = was.cell_type === "code";
      const cell = replacedCell(was, cellType, sourceValue(next, Array.isArray(was.source)));
      after = replaceCell(text, layout, position, serializeCell(cell, layout));
    }
    // What was written must read back as the notebook meant: a layout mistake is never written.
    const check = parseNotebook(after, target.rel);
    const expected =
      mode === "delete" ? cells.length - 1 : mode === "insert" ? cells.length + 1 : cells.length;
    if (
      check.cells.length !== expected ||
      (mode !== "delete" && multilineText(check.cells[position]?.source) !== next)
    )
      throw new ToolbeltError(
        "EINTERNAL",
        `notebook_edit could not lay out the edit of ${target.rel}; nothing was written`,
      );
    const [written] = await ctx.writeFiles([{ abs: target.abs, data: after, before: original }]);
    await rememberWritten(ctx, target.abs, after);
    const label = `${target.rel} cell ${position + 1}`;
    const { diff } = unifiedDiff(label, before, next, mode === "insert");
    return {
      kind: "notebook_edited",
      path: target.rel,
      edit_mode: mode,
      index: position + 1,
      ...(typeof cellId === "string" ? { cell_id: cellId } : {}),
      cell_type: cellType,
      total_cells: expected,
      outputs_cleared: cleared,
      diff,
      notes: written?.notes ?? [],
    };
  });
}

/**
 * The version just written counts as read: the session knows what the notebook holds now, so a change
 * on disk after this edit is refused like one after a read. The fingerprint is of the bytes written and
 * the file's stat now; if anything wrote in between, the two disagree and the next edit is refused.
 */
async function rememberWritten(ctx: ToolContext, abs: string, text: string): Promise<void> {
  const handle = await ctx.openFile(abs);
  try {
    const stat = await handle.stat();
    ctx.ledger.record(abs, fingerprintOf(Buffer.from(text, "utf8"), stat), {
      start: 1,
      end: Number.POSITIVE_INFINITY,
    });
  } finally {
    await handle.close();
  }
}

const VERB = { replace: "replaced", insert: "inserted", delete: "deleted" } as const;

export function renderNotebookEdit(payload: NotebookEditResult): string {
  const id = payload.cell_id !== undefined ? `, id ${payload.cell_id}` : "";
  const headers: Array<[string, HeaderValue]> = [
    ["Kind", payload.kind],
    ["Path", payload.path],
    ["Edit", `${VERB[payload.edit_mode]} cell ${payload.index} (${payload.cell_type}${id})`],
    ["Cells", payload.total_cells],
    [
      "Outputs-Cleared",
      payload.outputs_cleared
        ? "yes (the cell's outputs and execution_count; run it again for new ones)"
        : undefined,
    ],
  ];
  if (payload.notes.length) headers.push(["Notes", payload.notes.length]);
  const body = [payload.diff.trimEnd(), ...payload.notes].filter(Boolean).join("\n\n");
  return renderText(headers, body);
}

export const notebookEditTool = defineTool({
  name: "notebook_edit",
  family: "edit",
  access: "write",
  // Needed only where there are notebooks: behind tool_search when tool search defers tools.
  deferrable: true,
  description: DESCRIPTION,
  input,
  output: notebookEditPayload,
  paths: (i) => [i.path],
  execute: (i, ctx) => notebookEdit(ctx, i),
  render: renderNotebookEdit,
});
