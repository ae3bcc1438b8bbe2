/**
 * Jupyter notebooks (nbformat 4) as read_file shows them and notebook_edit changes them: parsed and
 * checked once, here, so the files and edit families agree on what a notebook is. Only the structure
 * both need is checked (the cells, their types and sources); anything else a notebook holds is kept
 * as it is.
 */
import { ToolbeltError } from "./errors.js";
import { MAX_JSON_DEPTH, nestsDeeperThan } from "./json-depth.js";

export const NOTEBOOK_CELL_TYPES = ["code", "markdown", "raw"] as const;
export type NotebookCellType = (typeof NOTEBOOK_CELL_TYPES)[number];

/** One cell as the file holds it (source still a string or a list of lines). */
export type NotebookCell = Record<string, unknown> & { cell_type: NotebookCellType };

export interface Notebook {
  /** The whole document as parsed. */
  json: Record<string, unknown>;
  cells: NotebookCell[];
  nbformat: number;
  nbformatMinor: number;
  /** The kernel's language (`language_info.name`, else `kernelspec.language`), when the notebook says. */
  language: string | undefined;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** A notebook's multi-line string: a string, or a list of lines (each with its newline) joined. */
export function multilineText(value: unknown): string {
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return value.filter((v) => typeof v === "string").join("");
  return "";
}

function malformed(rel: string, why: string): ToolbeltError {
  return new ToolbeltError("EMALFORMED", `${rel} is not a valid Jupyter notebook: ${why}`, {
    details: { path: rel },
  });
}

/**
 * Parses a notebook's text, refusing (EMALFORMED, naming the path and what is wrong) anything that is
 * not nbformat 4 JSON with a list of cells of a known type and a string (or list of strings) source.
 */
export function parseNotebook(text: string, rel: string): Notebook {
  // Writing a cell back walks its metadata recursively: nesting no notebook needs is refused first.
  if (nestsDeeperThan(text)) throw malformed(rel, `its JSON nests deeper than ${MAX_JSON_DEPTH} levels`);
  let json: unknown;
  try {
    json = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch (error) {
    throw malformed(rel, `invalid JSON (${(error as Error).message})`);
  }
  if (!isRecord(json)) throw malformed(rel, "the top level is not a JSON object");
  const { nbformat, nbformat_minor: minor } = json;
  if (typeof nbformat !== "number") throw malformed(rel, "no nbformat version");
  if (nbformat !== 4)
    throw malformed(
      rel,
      `nbformat ${nbformat} is not supported (only nbformat 4; \`jupyter nbconvert --to notebook\` upgrades older notebooks)`,
    );
  if (!Array.isArray(json.cells)) throw malformed(rel, "no list of cells");
  json.cells.forEach((cell, i) => {
    const at = `cell ${i + 1}`;
    if (!isRecord(cell)) throw malformed(rel, `${at} is not a JSON object`);
    if (!(NOTEBOOK_CELL_TYPES as readonly unknown[]).includes(cell.cell_type))
      throw malformed(rel, `${at} has cell_type ${JSON.stringify(cell.cell_type)} (code, markdown or raw)`);
    const source = cell.source;
    if (typeof source !== "string" && !(Array.isArray(source) && source.every((l) => typeof l === "string")))
      throw malformed(rel, `${at} has no source (a string or a list of strings)`);
    if (cell.cell_type === "code" && cell.outputs !== undefined && !Array.isArray(cell.outputs))
      throw malformed(rel, `${at} has outputs that are not a list`);
  });
  const metadata = isRecord(json.metadata) ? json.metadata : {};
  const info = isRecord(metadata.language_info) ? metadata.language_info.name : undefined;
  const spec = isRecord(metadata.kernelspec) ? metadata.kernelspec.language : undefined;
  const language = typeof info === "string" ? info : typeof spec === "string" ? spec : undefined;
  return {
    json,
    cells: json.cells as NotebookCell[],
    nbformat,
    nbformatMinor: typeof minor === "number" ? minor : 0,
    language,
  };
}

/** Whether the notebook's cells carry ids (nbformat 4.5 and later require one on every cell). */
export function cellIdsRequired(notebook: Notebook): boolean {
  return notebook.nbformatMinor >= 5;
}
