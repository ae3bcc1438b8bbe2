import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const here = fileURLToPath(new URL("../", import.meta.url));
const bin = fileURLToPath(new URL("../../../packages/toolbelt/dist/bin.js", import.meta.url));

describe("examples/plugin-authoring", () => {
  it("runs from the SDK: one call works, an escape and a bad input are refused", () => {
    const out = execFileSync(process.execPath, ["run.mjs"], { cwd: here, encoding: "utf8" });
    expect(out).toContain("bound: word_count");
    expect(out).toContain("4 lines, 8 words");
    expect(out).toContain("# Error: EPATH_ESCAPE");
    expect(out).toContain("# Error: EINVAL_INPUT");
  });

  it("loads from a project's config in the CLI", () => {
    const root = mkdtempSync(path.join(os.tmpdir(), "plugin-authoring-cli-"));
    mkdirSync(path.join(root, "configs"));
    writeFileSync(
      path.join(root, "configs/app.json"),
      JSON.stringify({ plugins: [path.join(here, "word-count-plugin.mjs")] }),
    );
    writeFileSync(path.join(root, "a.txt"), "one two\nthree\n");
    const result = spawnSync(
      process.execPath,
      [bin, "run", "word_count", "--trust", "--root", root, "--input", '{"path":"a.txt"}'],
      {
        encoding: "utf8",
      },
    );
    expect(result.status).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({
      kind: "word_count",
      path: "a.txt",
      lines: 2,
      words: 3,
      chars: 14,
    });
    rmSync(root, { recursive: true, force: true });
  });
});
