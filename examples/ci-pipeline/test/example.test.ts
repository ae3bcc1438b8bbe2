import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const script = fileURLToPath(new URL("../apply-edits.sh", import.meta.url));

describe("examples/ci-pipeline", () => {
  it("applies a good batch and passes", () => {
    const result = spawnSync("bash", [script, "demo"], { encoding: "utf8" });
    expect(result.stdout).toContain("ok   bump-version");
    expect(result.stdout).toContain("ok   add-changelog");
    expect(result.stdout).toContain("all edits applied");
    expect(result.status).toBe(0);
  });

  it("fails the job when one edit does not apply", () => {
    const result = spawnSync("bash", [script, "demo", "bad"], { encoding: "utf8" });
    expect(result.stdout).toContain("FAIL rename-missing: ENO_MATCH");
    expect(result.stderr).toContain("some edits did not apply");
    expect(result.status).toBe(1);
  });
});
