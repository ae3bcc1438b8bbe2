import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { MAX_LAYOUT_DIRS, protectedLayout } from "./protected-layout.js";
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

describe("nested repositories and HEAD files", () => {
  const tree = tempDir("tb-protect-nested-");
  afterAll(() => removeDir(tree));

  it("binds a nested repository's hooks and config, a gitfile and a submodule's git directory", () => {
    mkdirSync(path.join(tree, "vendor/lib/.git/hooks"), { recursive: true });
    mkdirSync(path.join(tree, ".git/modules/sub/hooks"), { recursive: true });
    writeFileSync(path.join(tree, ".git/modules/sub/HEAD"), "ref: refs/heads/main\n");
    mkdirSync(path.join(tree, "sub"));
    writeFileSync(path.join(tree, "sub/.git"), "gitdir: ../.git/modules/sub\n");
    mkdirSync(path.join(tree, "node_modules/x/.git"), { recursive: true });
    const layout = protectedLayout(tree);
    expect(layout.readOnly).toEqual(
      expect.arrayContaining([
        ".git/hooks",
        ".git/config",
        ".git/modules/sub/hooks",
        ".git/modules/sub/config",
        "vendor/lib/.git/hooks",
        "vendor/lib/.git/config",
        "sub/.git",
      ]),
    );
    expect(layout.present).toEqual(["vendor/lib/.git"]);
    expect(layout.readOnly.some((p) => p.startsWith("node_modules"))).toBe(false);
    expect(layout.truncated).toBe(false);
  });

  it("reports a repository made whole as one change, a planted HEAD and a rewritten nested hook", () => {
    const before = snapshotProtected(tree);
    mkdirSync(path.join(tree, "made/.git/hooks"), { recursive: true });
    writeFileSync(path.join(tree, "made/.git/config"), "[core]\n");
    mkdirSync(path.join(tree, "bare"));
    writeFileSync(path.join(tree, "bare/HEAD"), "ref: refs/heads/main\n");
    writeFileSync(path.join(tree, "vendor/lib/.git/hooks/pre-commit"), "#!/bin/sh\n");
    writeFileSync(path.join(tree, "vendor/lib/.git/index"), "x");
    expect(protectedChanges(before, snapshotProtected(tree))).toEqual([
      "bare/HEAD",
      "made/.git",
      "vendor/lib/.git/hooks",
    ]);
  });

  it("stops at its bound and says so", () => {
    const wide = tempDir("tb-protect-wide-");
    try {
      for (let i = 0; i <= MAX_LAYOUT_DIRS; i++) mkdirSync(path.join(wide, `d${i}`));
      expect(protectedLayout(wide).truncated).toBe(true);
    } finally {
      removeDir(wide);
    }
  });
});
