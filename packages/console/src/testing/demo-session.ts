// A scripted agent session as events: what the files, edit, shell and ui families emit, with the
// model-facing text written the way core's text format writes it.
import { countWithCap, type EventInput, renderText, renderTree, type TreeEntry } from "@toolbelt/core";

/** 1000 listed files, capped at 1000, across a few directories. */
export function listingEntries(): TreeEntry[] {
  const entries: TreeEntry[] = [];
  for (let i = 0; i < 1000; i++) {
    const dir = ["src", "src/components", "src/lib", "test"][i % 4] as string;
    entries.push({ path: `${dir}/file-${String(i).padStart(4, "0")}.ts` });
  }
  entries.push({ path: "docs/logo.png", note: "(image)" });
  return entries.slice(0, 1000);
}

/** 200 matches (capped at 200) under 40 files. */
export function searchEntries(): TreeEntry[] {
  const entries: TreeEntry[] = [];
  for (let f = 0; f < 40; f++) {
    const matches = [];
    for (let m = 0; m < 5; m++) matches.push({ line: 10 + m * 7, text: `// TODO(${f}-${m}): tidy this up` });
    entries.push({ path: `${f % 2 ? "src/lib" : "src"}/module-${f}.ts`, matches });
  }
  return entries;
}

export const HOSTILE = `<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>`;

type Step = EventInput;

/** The events of a short session, in order. */
export function demoEvents(): Step[] {
  const list = listingEntries();
  const search = searchEntries();
  const readBody = [
    '     1\timport { createToolbelt } from "@toolbelt/toolbelt";',
    "     2\t",
    `     3\tconst banner = '${HOSTILE}';`,
    "     4\texport const session = await createToolbelt({ root: process.cwd() });",
  ].join("\n");
  const diff = [
    "--- a/src/config.ts",
    "+++ b/src/config.ts",
    "@@ -1,4 +1,4 @@",
    " export const limits = {",
    "-  fileListMaxEntries: 500,",
    "+  fileListMaxEntries: 1000,",
    "   fileSearchMaxMatches: 100,",
    " };",
  ].join("\n");
  return [
    {
      type: "tools_bound",
      bound: ["read_file", "list_files", "search_files", "write_file", "edit_file", "shell"],
      deferred: [],
      reason: "start",
    },
    {
      type: "todos",
      todos: [
        { content: "Survey the repository", status: "completed" },
        { content: "Find every TODO", status: "in_progress" },
        { content: "Raise the listing cap", status: "pending" },
      ],
    },
    { type: "tool_call", call_id: "c1", tool: "list_files", input: { pattern: "src" } },
    {
      type: "tool_result",
      call_id: "c1",
      tool: "list_files",
      result: { kind: "file_list", count: 1000, capped: true, cap: 1000 },
      text: renderText([["Count", countWithCap(1000, 1000, true)]], renderTree(list)),
      duration_ms: 12,
    },
    { type: "tool_call", call_id: "c2", tool: "search_files", input: { query: "TODO", path: "src" } },
    {
      type: "tool_result",
      call_id: "c2",
      tool: "search_files",
      result: { kind: "search_results", matches: 200, files: 40, capped: true },
      text: renderText(
        [
          ["Kind", "search_results"],
          ["Matches", countWithCap(200, 200, true)],
          ["Files", 40],
        ],
        renderTree(search),
      ),
      duration_ms: 31,
    },
    { type: "tool_call", call_id: "c3", tool: "read_file", input: { path: "src/index.ts" } },
    {
      type: "tool_result",
      call_id: "c3",
      tool: "read_file",
      result: { kind: "file_content", path: "src/index.ts", total_lines: 4 },
      text: renderText(
        [
          ["Path", "src/index.ts"],
          ["Lines", "1-4 of 4"],
        ],
        readBody,
      ),
      duration_ms: 2,
    },
    {
      type: "tool_call",
      call_id: "c4",
      tool: "write_file",
      input: { path: "NOTES.md", content: "# Notes\n\nThe listing cap is now 1000.\n" },
    },
    {
      type: "tool_result",
      call_id: "c4",
      tool: "write_file",
      result: { kind: "file_written", relPath: "NOTES.md", created: true, chars: 38, lines: 3 },
      text: renderText([
        ["Path", "NOTES.md"],
        ["Created", "true"],
        ["Chars", 38],
        ["Lines", 3],
      ]),
      duration_ms: 3,
    },
    {
      type: "tool_call",
      call_id: "c5",
      tool: "edit_file",
      input: { path: "src/config.ts", old_text: "500", new_text: "1000" },
    },
    {
      type: "tool_result",
      call_id: "c5",
      tool: "edit_file",
      result: { kind: "edit_applied", path: "src/config.ts", diff },
      text: renderText(
        [
          ["Path", "src/config.ts"],
          ["Strategy", "exact"],
        ],
        diff,
      ),
      duration_ms: 4,
    },
    { type: "tool_call", call_id: "c6", tool: "shell", input: { command: "npm test -- --run" } },
    {
      type: "tool_result",
      call_id: "c6",
      tool: "shell",
      result: {
        kind: "shell_result",
        exit_code: 1,
        output: "FAIL src/config.test.ts\n  expected 500 to be 1000\n",
      },
      text: renderText([["Exit-Code", 1]], "FAIL src/config.test.ts\n  expected 500 to be 1000\n"),
      duration_ms: 2400,
    },
    { type: "tool_call", call_id: "c7", tool: "shell", input: { command: "npm run dev", background: true } },
    {
      type: "tool_result",
      call_id: "c7",
      tool: "shell",
      result: { kind: "shell_started", shell_id: "sh-1", running: true },
      text: renderText([
        ["Shell-Id", "sh-1"],
        ["Running", "true"],
      ]),
      duration_ms: 40,
    },
    { type: "shell_output", shell_id: "sh-1", data: "> dev\n> vite\n\n" },
    { type: "shell_output", shell_id: "sh-1", data: "  ready in 312 ms\n  Local: http://localhost:5173/\n" },
    { type: "tool_call", call_id: "c8", tool: "read_file", input: { path: "missing.ts" } },
    {
      type: "tool_result",
      call_id: "c8",
      tool: "read_file",
      result: { kind: "error", code: "ENOENT", message: "missing.ts does not exist" },
      text: renderText([["Error", "ENOENT"]], "missing.ts does not exist"),
      duration_ms: 1,
    },
    {
      type: "generative_ui",
      tree: {
        component: "Card",
        id: "report",
        title: "Cap review",
        children: [
          { component: "Heading", text: "Listing limits", level: 2 },
          { component: "Paragraph", text: `Raised from 500 to 1000. ${HOSTILE}` },
          {
            component: "Stack",
            direction: "horizontal",
            children: [
              { component: "Badge", text: "tests failing", tone: "danger" },
              { component: "Badge", text: "1 file edited", tone: "info" },
            ],
          },
          { component: "List", items: ["config.ts edited", "NOTES.md written"] },
          {
            component: "Table",
            columns: ["limit", "before", "after"],
            rows: [
              ["fileListMaxEntries", 500, 1000],
              ["fileSearchMaxMatches", 100, 100],
            ],
          },
          {
            component: "DefinitionList",
            items: [
              { term: "Branch", value: "raise-caps" },
              { term: "Files", value: "2" },
            ],
          },
          { component: "Code", language: "ts", code: "export const limits = { fileListMaxEntries: 1000 };" },
          { component: "Link", text: "Design notes", url: "https://example.com/design" },
          { component: "Link", text: "sneaky", url: "javascript:window.__pwned=3" },
          { component: "Progress", label: "Todos", value: 1, max: 3 },
          { component: "Carousel", unknown: true },
        ],
      },
      text: "Cap review",
    },
  ];
}
