import { chmodSync, mkdirSync, mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { findExecutable } from "./executables.js";

function fakeBin(dir: string, name: string): string {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, name);
  writeFileSync(file, "#!/bin/sh\n");
  chmodSync(file, 0o755);
  return file;
}

describe("findExecutable", () => {
  const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), "tb-exe-")));
  const root = path.join(base, "project");
  const system = path.join(base, "system");
  fakeBin(path.join(root, "node_modules/.bin"), "tool");
  fakeBin(root, "tool");
  const real = fakeBin(system, "tool");

  it("never resolves through a relative PATH entry", () => {
    const env = { PATH: ["node_modules/.bin", ".", system].join(path.delimiter) };
    const cwd = process.cwd();
    process.chdir(root);
    try {
      expect(findExecutable("tool", { env })).toBe(real);
    } finally {
      process.chdir(cwd);
    }
  });

  it("skips a candidate inside `outside`, also through an absolute PATH entry", () => {
    const env = { PATH: [path.join(root, "node_modules/.bin"), system].join(path.delimiter) };
    expect(findExecutable("tool", { env, outside: root })).toBe(real);
    expect(findExecutable("tool", { env })).toBe(path.join(root, "node_modules/.bin/tool"));
    expect(findExecutable("missing", { env })).toBeUndefined();
  });
});
