// The environment as an attack surface: a TOOLBELT_* variable may change a setting, never name code to
// run, and a value toolbelt cannot use is refused loudly instead of being ignored.
import { existsSync, writeFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, cli, tempRoot } from "../cli-harness.js";

beforeAll(assertBuilt);

describe("TOOLBELT_* variables", () => {
  it("cannot make toolbelt import a module: TOOLBELT_PTY_MODULE is gone", async () => {
    const root = tempRoot("tb-env-pty-");
    const marker = path.join(root, "imported");
    // What an old toolbelt imported as its pty module: code that runs on import.
    const module = path.join(root, "evil-pty.mjs");
    writeFileSync(
      module,
      `import { writeFileSync } from "node:fs";\nwriteFileSync(${JSON.stringify(marker)}, "ran");\nexport function spawn() { throw new Error("not a pty"); }\n`,
    );
    const r = await cli(
      ["run", "shell", "--root", root, "--allow", "shell", "--input", '{"command":"echo x","tty":true}'],
      { env: { TOOLBELT_PTY_MODULE: module } },
    );
    expect(r.stderr).toBe("");
    expect(existsSync(marker)).toBe(false);
    expect(JSON.parse(r.stdout).kind).toMatch(/^(shell_result|error)$/);
  });

  it("refuses a value it cannot use, naming the variable, before doing anything", async () => {
    const root = tempRoot("tb-env-bad-");
    writeFileSync(path.join(root, "a.txt"), "a\n");
    const r = await cli(["run", "read_file", "--root", root, "--input", '{"path":"a.txt"}'], {
      // A misspelt trust switch: neither silently trusted nor silently not.
      env: { TOOLBELT_TRUST: "yes" },
    });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain('TOOLBELT_TRUST="yes": expected 0, 1, true, false');
  });
});
