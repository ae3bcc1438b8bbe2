import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { protectedChanges, snapshotProtected } from "./protected-watch.js";
import { removeDir, tempDir } from "./test-harness.js";

const root = tempDir("tb-protect-");
afterAll(() => removeDir(root));

describe("protected path snapshots", () => {
  it("notice a created file, a changed hook and a directory swapped by rename; ignore other files", () => {
    mkdirSync(path.join(root, ".git", "hooks"), { recursive: true });
    writeFileSync(path.join(root, ".git", "hooks", "pre-commit"), "#!/bin/sh\n");
    const before = snapshotProtected(root);
    writeFileSync(path.join(root, "src.ts"), "x");
    writeFileSync(path.join(root, ".git", "index"), "x");
    expect(protectedChanges(before, snapshotProtected(root))).toEqual([]);

    writeFileSync(path.join(root, ".mcp.json"), "{}");
    writeFileSync(path.join(root, ".git", "hooks", "pre-commit"), "#!/bin/sh\ntouch /tmp/x\n");
    expect(protectedChanges(before, snapshotProtected(root))).toEqual([".git/hooks", ".mcp.json"]);

    mkdirSync(path.join(root, "configs"));
    writeFileSync(path.join(root, "configs", "app.json"), "{}");
    const middle = snapshotProtected(root);
    renameSync(path.join(root, "configs"), path.join(root, "configs.old"));
    mkdirSync(path.join(root, "configs"));
    writeFileSync(path.join(root, "configs", "app.json"), "{}");
    expect(protectedChanges(middle, snapshotProtected(root))).toEqual(["configs/app.json"]);
  });
});
