import { describe, expect, it } from "vitest";
import { ToolbeltError } from "./errors.js";
import { multilineText, parseNotebook } from "./notebook.js";

const nb = (cells: unknown[], extra: Record<string, unknown> = {}) =>
  JSON.stringify({ cells, metadata: {}, nbformat: 4, nbformat_minor: 5, ...extra });

function refusal(text: string): string {
  try {
    parseNotebook(text, "x.ipynb");
  } catch (error) {
    if (!ToolbeltError.isInstance(error)) throw error;
    expect(error.code).toBe("EMALFORMED");
    return error.message;
  }
  throw new Error("parsed");
}

describe("parseNotebook", () => {
  it("reads nbformat 4 cells, version and language, and joins list-of-lines sources", () => {
    const parsed = parseNotebook(
      nb(
        [{ cell_type: "code", source: ["a = 1\n", "a"], outputs: [], execution_count: null, metadata: {} }],
        {
          metadata: { language_info: { name: "python" } },
        },
      ),
      "x.ipynb",
    );
    expect(parsed.nbformat).toBe(4);
    expect(parsed.nbformatMinor).toBe(5);
    expect(parsed.language).toBe("python");
    expect(multilineText(parsed.cells[0]?.source)).toBe("a = 1\na");
  });

  it("refuses what is not an nbformat 4 notebook, saying what is wrong (EMALFORMED)", () => {
    expect(refusal("{ not json")).toMatch(/^x\.ipynb is not a valid Jupyter notebook: invalid JSON/);
    expect(refusal("[]")).toMatch(/top level is not a JSON object/);
    expect(refusal(JSON.stringify({ cells: [] }))).toMatch(/no nbformat version/);
    expect(refusal(JSON.stringify({ nbformat: 3, worksheets: [] }))).toMatch(/nbformat 3 is not supported/);
    expect(refusal(JSON.stringify({ nbformat: 4 }))).toMatch(/no list of cells/);
    expect(refusal(nb([{ cell_type: "heading", source: "" }]))).toMatch(/cell 1 has cell_type "heading"/);
    expect(refusal(nb([{ cell_type: "code", source: 7 }]))).toMatch(/cell 1 has no source/);
    expect(refusal(nb([{ cell_type: "code", source: "", outputs: {} }]))).toMatch(
      /outputs that are not a list/,
    );
  });

  it("refuses JSON nested deeper than any notebook needs, before building it", () => {
    const deep = nb([
      { cell_type: "raw", source: "", metadata: JSON.parse(`${"[".repeat(300)}${"]".repeat(300)}`) },
    ]);
    expect(refusal(deep)).toMatch(/nests deeper than 128 levels/);
  });
});
