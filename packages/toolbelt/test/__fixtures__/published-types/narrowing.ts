// Compiled against the packed packages (packaging.test.ts): results of built-in tools narrow by `kind`.
// `is<T>(value)` compiles only when `value` is a T; a `@ts-expect-error` line must fail to compile,
// which proves the type is not `any` or `unknown`.
import { createToolbelt, type ErrorCode, type Payload } from "@toolbelt/toolbelt";

const is = <T>(value: T): T => value;

const session = await createToolbelt({ root: "." });

const read = await session.call("read_file", { path: "src/index.ts", limit: 50 });
if (read.kind === "error") {
  is<ErrorCode>(read.code);
  is<string>(read.message);
  // @ts-expect-error a message is a string
  is<number>(read.message);
} else if (read.kind === "file_content") {
  is<string>(read.content);
  is<number>(read.total_lines);
  is<"lf" | "crlf">(read.line_endings);
  // @ts-expect-error total_lines is a number
  is<string>(read.total_lines);
} else if (read.kind === "image") {
  is<string>(read.base64);
} else if (read.kind === "pdf_content") {
  is<string | undefined>(read.pages[0]?.text);
  is<number>(read.total_pages);
} else if (read.kind === "notebook") {
  is<"code" | "markdown" | "raw" | undefined>(read.cells[0]?.cell_type);
  is<string | undefined>(read.images[0]?.base64);
} else {
  is<"file_unchanged">(read.kind);
}
// @ts-expect-error content belongs to file_content: narrow by kind first
is<string>(read.content);

const { payload, text } = await session.callWithText("search_files", { query: "TODO" });
is<string>(text);
if (payload.kind === "search_results") {
  is<number>(payload.matches);
  is<string | undefined>(payload.entries[0]?.matches[0]?.text);
}

const shell = await session.call("shell", { command: "true" });
if (shell.kind === "shell_result") is<number | null>(shell.exit_code);
if (shell.kind === "shell_started") is<string>(shell.shell_id);

// Profile names are known too (mewbo's aider_shell_tool is the shell tool).
const aider = await session.call("aider_shell_tool", { command: "true" });
if (aider.kind === "shell_result") is<string>(aider.stdout);

const edit = await session.call("edit_file", { path: "a.ts", old_text: "a", new_text: "b" });
if (edit.kind === "edit_result") is<string>(edit.diff);

const search = await session.call("tool_search", { query: "select:lsp_hover" });
if (search.kind === "tool_search_results") is<string[]>(search.bound);

const hover = await session.call("lsp_hover", { path: "a.ts", line: 1, column: 1 });
if (hover.kind === "lsp_hover") is<string>(hover.text);

// A tool an MCP server brings is named mcp__<server>__<tool>.
const remote = await session.call("mcp__github__search", {});
if (remote.kind === "mcp_result") is<string>(remote.server);

// A name only known at run time: the generic payload, fields unknown until checked.
const name: string = process.argv[2] ?? "read_file";
const dynamic = await session.call(name, {});
is<Payload>(dynamic);
is<string>(dynamic.kind);
// @ts-expect-error an unknown tool's fields are unknown
is<string>(dynamic.content);

await session.close();
