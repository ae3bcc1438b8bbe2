import { promises as fs, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createSession, type Payload, type Session } from "@toolbelt/core";
import { family as filesFamily } from "@toolbelt/files";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { family } from "./index.js";
import type { NotebookEditResult } from "./notebook-edit.js";

/** The message of an error payload (any result, as the tests get them). */
const messageOf = (result: object) => String((result as { message?: unknown }).message);

// test-support/fixtures/analysis.ipynb is written as Jupyter writes it (json.dumps with indent=1,
// sort_keys, ensure_ascii=False, a final newline): cells intro (markdown), a1b2c3d4 (code with a stream
// and a result), plotcell (code with an image), boom (code with an error), rawcell (raw).
const ANALYSIS = readFileSync(
  new URL("../../../test-support/fixtures/analysis.ipynb", import.meta.url),
  "utf8",
);

let root: string;
const sessions: Session[] = [];

beforeEach(async () => {
  root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "tb-nbedit-")));
});
afterEach(async () => {
  for (const s of sessions.splice(0)) await s.close();
  await fs.rm(root, { recursive: true, force: true });
});

async function session(config: Record<string, unknown> = {}, profile?: string) {
  const s = await createSession({
    root,
    plugins: [filesFamily, family],
    config,
    ...(profile ? { profile } : {}),
  });
  sessions.push(s);
  return s;
}

const write = (rel: string, data: string) => fs.writeFile(path.join(root, rel), data);
const read = (rel: string) => fs.readFile(path.join(root, rel), "utf8");
type Json = Record<string, unknown> & { cells: Array<Record<string, unknown>> };
const cellsOf = async (rel: string) => (JSON.parse(await read(rel)) as Json).cells;

function edited(p: Payload): NotebookEditResult {
  if (p.kind !== "notebook_edited") throw new Error(`${String(p.code)}: ${messageOf(p)}`);
  return p as NotebookEditResult;
}

/** The text Jupyter would write for `json`: indent 1, a final newline (keys as the object has them). */
const jupyter = (json: unknown) => `${JSON.stringify(json, null, 1)}\n`;

describe("notebook_edit", () => {
  it("replaces a cell's source by id: its outputs cleared, every other byte of the file as it was", async () => {
    await write("a.ipynb", ANALYSIS);
    const s = await session();
    const { payload, text } = await s.callWithText("notebook_edit", {
      path: "a.ipynb",
      cell_id: "a1b2c3d4",
      new_source: "import math\nprint('ready!')\n6 * 7",
    });
    expect(edited(payload)).toMatchObject({
      edit_mode: "replace",
      index: 2,
      cell_id: "a1b2c3d4",
      cell_type: "code",
      total_cells: 5,
      outputs_cleared: true,
    });
    expect(text).toContain("# Edit: replaced cell 2 (code, id a1b2c3d4)");
    expect(text).toContain("# Outputs-Cleared: yes");
    expect(text).toContain("-print('ready')\n+print('ready!')");
    // The file is what Jupyter itself would write for the edited notebook.
    const expected = JSON.parse(ANALYSIS) as Json;
    Object.assign(expected.cells[1] as object, {
      execution_count: null,
      outputs: [],
      source: ["import math\n", "print('ready!')\n", "6 * 7"],
    });
    const after = await read("a.ipynb");
    expect(after).toBe(jupyter(expected));
    // Untouched cells are the same bytes: the file differs only inside cell 2.
    const cell2 = ANALYSIS.indexOf('"id": "a1b2c3d4"');
    const cell3 = ANALYSIS.indexOf('"cell_type": "code"', cell2);
    expect(after.startsWith(ANALYSIS.slice(0, ANALYSIS.lastIndexOf("{", cell2)))).toBe(true);
    expect(after.endsWith(ANALYSIS.slice(ANALYSIS.lastIndexOf("{", cell3)))).toBe(true);
    // The metadata of the replaced cell is kept.
    expect((await cellsOf("a.ipynb"))[1]?.metadata).toEqual({ tags: ["setup"] });
  });

  it("inserts a cell at an index (1-based) or after the cell named by cell_id, with a new id", async () => {
    await write("a.ipynb", ANALYSIS);
    const s = await session();
    const first = edited(
      await s.call("notebook_edit", {
        path: "a.ipynb",
        index: 1,
        edit_mode: "insert",
        cell_type: "code",
        new_source: "x = 1\ny = 2",
      }),
    );
    expect(first).toMatchObject({ index: 1, total_cells: 6, cell_type: "code", outputs_cleared: false });
    expect(first.cell_id).toMatch(/^[0-9a-f]{8}$/);
    const after = edited(
      await s.call("notebook_edit", {
        path: "a.ipynb",
        cell_id: "intro",
        edit_mode: "insert",
        cell_type: "markdown",
        new_source: "## Next",
      }),
    );
    expect(after.index).toBe(3);
    const appended = edited(
      await s.call("notebook_edit", {
        path: "a.ipynb",
        index: 8,
        edit_mode: "insert",
        cell_type: "raw",
        new_source: "end",
      }),
    );
    expect(appended).toMatchObject({ index: 8, total_cells: 8 });
    const cells = await cellsOf("a.ipynb");
    expect(cells.map((c) => c.id)).toEqual([
      first.cell_id,
      "intro",
      after.cell_id,
      "a1b2c3d4",
      "plotcell",
      "boom",
      "rawcell",
      appended.cell_id,
    ]);
    // New cells have Jupyter's keys in Jupyter's order, sources as lists of lines.
    expect(cells[0]).toEqual({
      cell_type: "code",
      execution_count: null,
      id: first.cell_id,
      metadata: {},
      outputs: [],
      source: ["x = 1\n", "y = 2"],
    });
    expect(Object.keys(cells[2] as object)).toEqual(["cell_type", "id", "metadata", "source"]);
    // Outputs of the cells not edited are all still there.
    expect(cells[3]?.outputs).toHaveLength(2);
    expect(await read("a.ipynb")).toBe(jupyter(JSON.parse(await read("a.ipynb"))));
  });

  it("deletes a cell by index, and the last one leaves an empty list", async () => {
    await write("a.ipynb", ANALYSIS);
    const s = await session();
    const gone = edited(await s.call("notebook_edit", { path: "a.ipynb", index: 4, edit_mode: "delete" }));
    expect(gone).toMatchObject({ index: 4, cell_id: "boom", cell_type: "code", total_cells: 4 });
    expect(gone.diff).toContain("-1/0");
    const expected = JSON.parse(ANALYSIS) as Json;
    expected.cells.splice(3, 1);
    expect(await read("a.ipynb")).toBe(jupyter(expected));
    for (let i = 0; i < 4; i++)
      await s.call("notebook_edit", { path: "a.ipynb", index: 1, edit_mode: "delete" });
    expect(await read("a.ipynb")).toBe(jupyter({ ...expected, cells: [] }));
    // And a cell goes into the empty list as Jupyter would write it.
    await s.call("notebook_edit", {
      path: "a.ipynb",
      index: 1,
      edit_mode: "insert",
      cell_type: "markdown",
      new_source: "again",
    });
    const cells = await cellsOf("a.ipynb");
    expect(cells).toHaveLength(1);
    expect(await read("a.ipynb")).toBe(jupyter({ ...expected, cells }));
  });

  it("changes a cell's type: markdown to code gains empty outputs, code to raw loses them", async () => {
    await write("a.ipynb", ANALYSIS);
    const s = await session();
    await s.call("notebook_edit", {
      path: "a.ipynb",
      cell_id: "intro",
      cell_type: "code",
      new_source: "1 + 1",
    });
    await s.call("notebook_edit", { path: "a.ipynb", cell_id: "boom", cell_type: "raw", new_source: "1/0" });
    const cells = await cellsOf("a.ipynb");
    expect(cells[0]).toEqual({
      cell_type: "code",
      execution_count: null,
      id: "intro",
      metadata: {},
      outputs: [],
      source: ["1 + 1"],
    });
    expect(cells[3]).toEqual({ cell_type: "raw", id: "boom", metadata: {}, source: ["1/0"] });
  });

  it("keeps a file's own conventions: compact JSON, string sources, no ids before nbformat 4.5", async () => {
    const compact = JSON.stringify({
      nbformat: 4,
      nbformat_minor: 4,
      metadata: { x: 1.5 },
      cells: [
        { cell_type: "markdown", metadata: {}, source: "one" },
        { cell_type: "markdown", metadata: {}, source: "two" },
      ],
    });
    await write("c.ipynb", compact);
    const s = await session();
    const inserted = edited(
      await s.call("notebook_edit", {
        path: "c.ipynb",
        index: 2,
        edit_mode: "insert",
        cell_type: "markdown",
        new_source: "between",
      }),
    );
    expect(inserted.cell_id).toBeUndefined();
    await s.call("notebook_edit", { path: "c.ipynb", index: 1, new_source: "ONE\nline" });
    expect(await read("c.ipynb")).toBe(
      compact
        .replace('"source":"one"', '"source":"ONE\\nline"')
        .replace(
          '},{"cell_type":"markdown","metadata":{},"source":"two"}',
          '},{"cell_type":"markdown","metadata":{},"source":"between"},{"cell_type":"markdown","metadata":{},"source":"two"}',
        ),
    );
  });

  it("keeps CRLF line endings (a notebook written on Windows): the new cell's lines end as the file's do", async () => {
    const crlf = ANALYSIS.replace(/\n/g, "\r\n");
    await write("w.ipynb", crlf);
    await write("u.ipynb", ANALYSIS);
    const s = await session();
    const edit = { index: 2, new_source: "x = 1\nx" };
    edited(await s.call("notebook_edit", { path: "w.ipynb", ...edit }));
    edited(await s.call("notebook_edit", { path: "u.ipynb", ...edit }));
    // The same edit as of the LF file, with every line ending CRLF.
    expect(await read("w.ipynb")).toBe((await read("u.ipynb")).replace(/\n/g, "\r\n"));
    edited(
      await s.call("notebook_edit", {
        path: "w.ipynb",
        index: 1,
        edit_mode: "insert",
        cell_type: "code",
        new_source: "first",
      }),
    );
    const after = await read("w.ipynb");
    expect(after.match(/(?<!\r)\n/g)).toBeNull();
    expect((JSON.parse(after) as Json).cells[0]).toMatchObject({ cell_type: "code", source: ["first"] });
  });

  it("refuses a stale edit: the notebook changed on disk since this session read it", async () => {
    await write("a.ipynb", ANALYSIS);
    const s = await session();
    expect((await s.call("read_file", { path: "a.ipynb" })).kind).toBe("notebook");
    const changed = ANALYSIS.replace("6 * 7", "6 * 8");
    await write("a.ipynb", changed);
    const refused = await s.call("notebook_edit", { path: "a.ipynb", index: 1, new_source: "mine" });
    expect(refused).toMatchObject({ kind: "error", code: "ECONFLICT", path: "a.ipynb" });
    expect(messageOf(refused)).toMatch(/changed on disk since this session last read it: read it again/);
    expect(await read("a.ipynb")).toBe(changed);
    // Read again: the edit goes through.
    await s.call("read_file", { path: "a.ipynb" });
    edited(await s.call("notebook_edit", { path: "a.ipynb", index: 1, new_source: "mine" }));
  });

  it("refuses an edit after its own edit when the file changed on disk in between", async () => {
    await write("a.ipynb", ANALYSIS);
    const s = await session();
    edited(await s.call("notebook_edit", { path: "a.ipynb", index: 1, new_source: "first" }));
    const theirs = (await read("a.ipynb")).replace('"first"', '"theirs"');
    await write("a.ipynb", theirs);
    const refused = await s.call("notebook_edit", { path: "a.ipynb", index: 1, new_source: "second" });
    expect(refused).toMatchObject({ kind: "error", code: "ECONFLICT" });
    expect(await read("a.ipynb")).toBe(theirs);
  });

  it("edits a notebook this session has not read (a one-off `toolbelt run`)", async () => {
    await write("a.ipynb", ANALYSIS);
    const s = await session();
    edited(await s.call("notebook_edit", { path: "a.ipynb", cell_id: "rawcell", new_source: "new raw" }));
    expect((await cellsOf("a.ipynb"))[4]?.source).toEqual(["new raw"]);
  });

  it("answers clear errors and writes nothing", async () => {
    await write("a.ipynb", ANALYSIS);
    await write("not.json", "{}");
    await write("bad.ipynb", "{ nope");
    const s = await session();
    const cases: Array<[Record<string, unknown>, string, RegExp]> = [
      [{ path: "a.ipynb", new_source: "x" }, "EINVAL_INPUT", /give the cell's cell_id or its index/],
      [{ path: "a.ipynb", cell_id: "intro", index: 1, new_source: "x" }, "EINVAL_INPUT", /one of them/],
      [{ path: "a.ipynb", index: 1 }, "EINVAL_INPUT", /new_source is required to replace a cell/],
      [
        { path: "a.ipynb", index: 1, edit_mode: "insert", new_source: "x" },
        "EINVAL_INPUT",
        /cell_type .* is required/,
      ],
      [
        { path: "a.ipynb", index: 6, new_source: "x" },
        "EINVAL_INPUT",
        /index 6 is past the last cell of a\.ipynb \(5 cells\)/,
      ],
      [
        { path: "a.ipynb", index: 7, edit_mode: "insert", cell_type: "code", new_source: "x" },
        "EINVAL_INPUT",
        /index 7 is past the end of a\.ipynb \(5 cells; 6 appends\)/,
      ],
      [
        { path: "a.ipynb", cell_id: "nope", new_source: "x" },
        "ENO_MATCH",
        /no cell of a\.ipynb has the id nope; its cells' ids: intro, a1b2c3d4/,
      ],
      [{ path: "a.ipynb", cell_id: "rawcell", new_source: "raw text" }, "EINVAL_INPUT", /nothing to change/],
      [{ path: "not.json", index: 1, new_source: "x" }, "EINVAL_INPUT", /not\.json is not a notebook/],
      [{ path: "missing.ipynb", index: 1, new_source: "x" }, "ENOENT", /no such notebook/],
      [
        { path: "bad.ipynb", index: 1, new_source: "x" },
        "EMALFORMED",
        /bad\.ipynb is not a valid Jupyter notebook/,
      ],
    ];
    for (const [input, code, message] of cases) {
      const result = await s.call("notebook_edit", input);
      expect(result, JSON.stringify(input)).toMatchObject({ kind: "error", code });
      expect(messageOf(result)).toMatch(message);
    }
    expect(await read("a.ipynb")).toBe(ANALYSIS);
  });

  it("refuses duplicate ids rather than guessing which cell is meant", async () => {
    const twins = JSON.parse(ANALYSIS) as Json;
    (twins.cells[1] as Record<string, unknown>).id = "intro";
    await write("t.ipynb", jupyter(twins));
    const s = await session();
    const refused = await s.call("notebook_edit", { path: "t.ipynb", cell_id: "intro", new_source: "x" });
    expect(refused).toMatchObject({ kind: "error", code: "EMULTI_MATCH", match_count: 2 });
  });

  it("goes through the write path: the edit allowlist and protected paths apply", async () => {
    await fs.mkdir(path.join(root, "nb"));
    await write("nb/a.ipynb", ANALYSIS);
    await write("a.ipynb", ANALYSIS);
    const s = await session({ tools: { edit: { allowlist: ["^nb/"] } } });
    edited(await s.call("notebook_edit", { path: "nb/a.ipynb", index: 1, new_source: "in" }));
    const denied = await s.call("notebook_edit", { path: "a.ipynb", index: 1, new_source: "out" });
    expect(denied).toMatchObject({ kind: "error", code: "EDENIED" });
    expect(await read("a.ipynb")).toBe(ANALYSIS);
    await fs.mkdir(path.join(root, ".toolbelt"));
    await write(".toolbelt/p.ipynb", ANALYSIS);
    const open = await session();
    const protectedPath = await open.call("notebook_edit", {
      path: ".toolbelt/p.ipynb",
      index: 1,
      new_source: "x",
    });
    expect(protectedPath).toMatchObject({ kind: "error", code: "EDENIED" });
    expect(await read(".toolbelt/p.ipynb")).toBe(ANALYSIS);
  });

  it("is bound beside the edit backend in every profile, and deferred when tool search defers", async () => {
    for (const profile of ["default", "mewbo", "mouaif"]) {
      const s = await session({ agent: { tool_search: "off" } }, profile);
      expect(s.bind().tools.map((t) => t.name)).toContain("notebook_edit");
    }
    const deferring = await session({ agent: { tool_search: "on" } });
    expect(deferring.bind().deferred).toContain("notebook_edit");
  });
});
