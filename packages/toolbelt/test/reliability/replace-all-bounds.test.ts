// An attack on the edit bounds ("no input can hang a session"), end to end through the built CLI:
// the model asks edit_file to replace_all a text that occurs on every line of a 100,000-line file.
// Each occurrence's line was counted from the top of the file (the line index is built lazily since
// the large-file edit work, and replace_all never built it), and each replacement copied the whole
// text and its table of line endings: the call cost the square of the file (8 minutes for 1.7 MB
// at load 8; both cases below ran past their 120 s bound before the fix). The timeouts are the failure
// bound, not a guess at how long the work takes.
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, cli, tempRoot } from "../cli-harness.js";

const LINES = 100_000;
const base = tempRoot("tb-replace-all-");
beforeAll(() => assertBuilt());
afterAll(() => rmSync(base, { recursive: true, force: true }));

type FileEdit = { path: string; replacements: number; eol: string };

async function replaceAll(root: string, file: string, oldText: string, newText: string) {
  const input = JSON.stringify({ path: file, old_text: oldText, new_text: newText, replace_all: true });
  const r = await cli(["run", "edit_file", "--root", root, "--input", input], { timeoutMs: 120_000 });
  expect(r.code, r.stderr.slice(0, 2000)).toBe(0);
  return JSON.parse(r.stdout) as { kind: string; files: FileEdit[] };
}

describe("edit_file replace_all over every line of a 100,000-line file", () => {
  it("replaces all 100,000 occurrences of an LF file, byte for byte, within the bound", async () => {
    const before = Array.from({ length: LINES }, (_, i) => `  v${i} = foo(${i});\n`).join("");
    writeFileSync(path.join(base, "lf.ts"), before);
    const answer = await replaceAll(base, "lf.ts", "foo(", "bar(");
    expect(answer.kind).toBe("edit_result");
    expect(answer.files[0]).toMatchObject({ path: "lf.ts", replacements: LINES, eol: "lf" });
    expect(readFileSync(path.join(base, "lf.ts"), "utf8")).toBe(before.replaceAll("foo(", "bar("));
  }, 180_000);

  it("keeps every CRLF of a CRLF file, new line breaks in the replacement included", async () => {
    const before = Array.from({ length: LINES }, (_, i) => `x${i} = foo;\r\n`).join("");
    writeFileSync(path.join(base, "crlf.ts"), before);
    // The replacement adds a line break per occurrence: 100,000 new lines, each to end in CRLF.
    const answer = await replaceAll(base, "crlf.ts", "foo;", "f(\n);");
    expect(answer.kind).toBe("edit_result");
    expect(answer.files[0]).toMatchObject({ path: "crlf.ts", replacements: LINES, eol: "crlf" });
    expect(readFileSync(path.join(base, "crlf.ts"), "utf8")).toBe(before.replaceAll("foo;", "f(\r\n);"));
  }, 180_000);
});
