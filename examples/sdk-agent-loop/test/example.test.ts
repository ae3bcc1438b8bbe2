import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const here = fileURLToPath(new URL("../", import.meta.url));

describe("examples/sdk-agent-loop", () => {
  it("runs the loop: finds the TODO, edits it, and the repeated read is de-duplicated", () => {
    const out = execFileSync(process.execPath, ["agent.mjs"], { cwd: here, encoding: "utf8" });
    expect(out).toMatch(/model sees \d+ tools: .*read_file/);
    expect(out).toContain("→ search_files");
    expect(out).toContain("math.ts");
    expect(out).toContain("→ edit_file");
    expect(out).not.toContain("# Error:");
    expect(out).toContain("Number.isNaN");
    expect(out).toMatch(/file_unchanged|unchanged/i);
    expect(out).toContain("assistant: Handled the TODO");
  });
});
