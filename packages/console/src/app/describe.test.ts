import { countWithCap, renderText, renderTree } from "@toolbelt/core";
import { describe, expect, it } from "vitest";
import { cardBody, cardOutcome, cardSummary, groupByDirectory } from "./describe.js";
import type { ToolCard } from "./model.js";

function card(tool: string, input: unknown, result?: Record<string, unknown>, text?: string): ToolCard {
  return {
    id: "c",
    tool,
    input,
    seq: 0,
    client: false,
    ...(result ? { result } : {}),
    ...(text !== undefined ? { text } : {}),
  };
}

describe("card summaries", () => {
  it("state a capped listing as capped, from the model-facing text", () => {
    const text = renderText([["Count", countWithCap(1000, 1000, true)]], renderTree([{ path: "src/a.ts" }]));
    const c = card("list_files", { pattern: "src" }, { kind: "file_list" }, text);
    expect(cardSummary(c)).toBe("list_files · src · 1000 files (capped at 1000)");
    expect(cardOutcome(c).tone).toBe("warn");
  });

  it("state capped search matches, naming the byte limit when that one stopped the search", () => {
    const tree = renderTree([{ path: "a.ts", matches: [{ line: 1, text: "x" }] }]);
    const header = (n: number) =>
      renderText(
        [
          ["Kind", "search_results"],
          ["Matches", countWithCap(n, 200, true, "matches / 1048576 chars")],
        ],
        tree,
      );
    const c = card("search_files", { query: "x" }, { kind: "search_results" }, header(200));
    expect(cardOutcome(c).text).toBe("200 matches (capped at 200)");
    const bytes = card("search_files", { query: "x" }, { kind: "search_results" }, header(150));
    expect(cardOutcome(bytes).text).toBe("150 matches (capped at 1048576 chars)");
  });

  it("state a cap from the payload when there is no text (replayed result lines)", () => {
    const c = card(
      "search_files",
      { query: "TODO" },
      { kind: "search_results", matches: 200, capped: true, cap: 200 },
    );
    expect(cardOutcome(c).text).toBe("200 matches (capped at 200)");
    const uncapped = card("list_files", {}, { kind: "file_list", entries: [{ path: "a" }, { path: "b" }] });
    expect(cardOutcome(uncapped).text).toBe("2 files");
  });

  it("counts a tree when the text has no count header, and never calls it complete when truncated", () => {
    const text = renderText([["Truncated", "true"]], renderTree([{ path: "a.ts" }, { path: "b/c.ts" }]));
    expect(cardOutcome(card("list_files", {}, { kind: "file_list" }, text)).text).toBe("2 files (truncated)");
  });

  it("reads errors from the payload or the text", () => {
    expect(
      cardOutcome(card("read_file", {}, { kind: "error", code: "ENOENT", message: "gone\nmore" })).text,
    ).toBe("ENOENT: gone");
    expect(cardOutcome(card("read_file", {}, { kind: "x" }, "# Error: EDENIED\nnope")).text).toBe(
      "EDENIED: nope",
    );
  });

  it("says what a shell, a write and an edit did", () => {
    expect(cardOutcome(card("shell", { command: "true" }, { kind: "shell", exit_code: 0 })).text).toBe(
      "exit 0",
    );
    expect(cardOutcome(card("shell", { command: "x" }, { kind: "shell" }, "# Exit-Code: 2\nboom")).text).toBe(
      "exit 2",
    );
    expect(
      cardOutcome(
        card("shell", { command: "dev", background: true }, { kind: "shell_started", shell_id: "sh-1" }),
      ).text,
    ).toBe("running in background (sh-1)");
    expect(
      cardOutcome(card("write_file", { path: "a" }, { kind: "file_written", created: false, lines: 3 })).text,
    ).toBe("overwritten, 3 lines");
    expect(
      cardOutcome(card("edit_file", {}, { kind: "edit", diff: "--- a\n+++ b\n@@ -1 +1 @@\n-x\n+y\n+z\n" }))
        .text,
    ).toBe("+2 −1");
    expect(cardOutcome(card("read_file", {})).text).toBe("running…");
  });

  it("does not mistake tool_search or search_replace_block for a text search", () => {
    const found = card("tool_search", { query: "lsp" }, { kind: "tool_search", count: 3 });
    expect(cardBody(found).type).toBe("raw");
    const edit = card("search_replace_block", {}, { kind: "edit", diff: "@@ -1 +1 @@\n-a\n+b" });
    expect(cardBody(edit).type).toBe("diff");
  });
});

describe("card bodies", () => {
  it("show what write_file wrote from the call's own content", () => {
    const body = cardBody(
      card("write_file", { path: "a.md", content: "hello\n" }, { kind: "file_written", chars: 6 }),
    );
    expect(body).toEqual({ type: "written", content: "hello\n" });
  });

  it("show search matches under their files, from the text form", () => {
    const text = renderText(
      [["Matches", "2"]],
      renderTree([
        {
          path: "src/a.ts",
          matches: [
            { line: 3, text: "TODO one" },
            { line: 9, text: "TODO two" },
          ],
        },
      ]),
    );
    const body = cardBody(card("search_files", { query: "TODO" }, { kind: "search_results" }, text));
    expect(body).toEqual({
      type: "tree",
      matches: true,
      empty: "No matches.",
      groups: [
        {
          dir: "src",
          entries: [
            {
              path: "src/a.ts",
              matches: [
                { line: 3, text: "TODO one" },
                { line: 9, text: "TODO two" },
              ],
            },
          ],
        },
      ],
    });
  });

  it("show an image only for raster types with base64 data", () => {
    const png = cardBody(card("read_file", {}, { kind: "image", mime: "image/png", base64: "iVBORw0KGgo=" }));
    expect(png).toEqual({ type: "image", mime: "image/png", src: "data:image/png;base64,iVBORw0KGgo=" });
    const svg = cardBody(card("read_file", {}, { kind: "image", mime: "image/svg+xml", base64: "PHN2Zz4=" }));
    expect(svg.type).not.toBe("image");
  });

  it("join a shell's live output by shell id", () => {
    const c = card(
      "shell",
      { command: "dev", background: true },
      { kind: "shell_started", shell_id: "sh-9" },
    );
    expect(cardBody(c, { "sh-9": "ready\n" })).toMatchObject({
      type: "shell",
      shellId: "sh-9",
      live: "ready\n",
    });
  });
});

describe("groupByDirectory", () => {
  it("puts the root first and directories in path order", () => {
    const groups = groupByDirectory([{ path: "b/x" }, { path: "top" }, { path: "a/y" }, { path: "a/z" }]);
    expect(groups.map((g) => [g.dir, g.entries.map((e) => e.path)])).toEqual([
      [".", ["top"]],
      ["a", ["a/y", "a/z"]],
      ["b", ["b/x"]],
    ]);
  });
});
