import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const here = fileURLToPath(new URL("../", import.meta.url));

describe("examples/ai-sdk-agent", () => {
  it("runs the AI SDK loop: read, edit, an approved shell command on the edited file, then a deferred tool found by tool search", () => {
    // The example imports the built packages (dist), as a user's app would.
    const out = execFileSync(process.execPath, ["agent.mjs"], { cwd: here, encoding: "utf8" });
    expect(out).not.toMatch(/: error\b/);
    expect(out).toContain("[event] tool_result read_file: file_content");
    expect(out).toContain("[event] tool_result edit_file: edit_result");
    // The approval went through the AI SDK, and toolbelt recorded who gave it; then the command ran
    // once, against the edited file.
    expect(out).toMatch(/approve\? shell: node -e .* → yes\n\[event\] approval_resolved by ai-sdk: true\n/);
    expect(out.match(/tool_result shell:/g)).toHaveLength(1);
    expect(out).toContain("tool_result shell: shell_result → 2 + 3 = 5");
    expect(out).toContain("src/math.mjs: export const add = (a, b) => a + b;");
    // streamText: tool_search binds word_count, which the next step calls.
    expect(out).toMatch(
      /→ tool_search .*\n\[event\] tool_result tool_search: tool_search_results\n→ word_count/,
    );
    expect(out).toContain("[event] tool_result word_count: word_count");
    expect(out).toContain("assistant: Five words.");
  });
});
