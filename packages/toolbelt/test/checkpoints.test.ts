import { execFileSync } from "node:child_process";
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, BIN, cli, tempRoot } from "./cli-harness.js";

// Every change the CLI's tools make is recorded outside the project (and its git), listed, diffed
// and restored by `toolbelt checkpoints`, which refuses on conflicts and is itself undoable.

let state = "";
const roots: string[] = [];
beforeAll(() => {
  assertBuilt();
  state = realpathSync(mkdtempSync(path.join(os.tmpdir(), "tb-e2e-cp-state-")));
});
afterAll(() => {
  for (const r of [state, ...roots]) rmSync(r, { recursive: true, force: true });
});

const env = () => ({ TOOLBELT_STATE_DIR: state });
const run = (root: string, tool: string, input: unknown, extra: string[] = []) =>
  cli(["run", tool, "--root", root, "--input", JSON.stringify(input), ...extra], { env: env() });
const checkpoints = (root: string, ...args: string[]) =>
  cli(["checkpoints", ...args, "--root", root], { env: env() });
const git = (root: string, ...args: string[]) => execFileSync("git", args, { cwd: root, encoding: "utf8" });
const read = (root: string, rel: string) => readFileSync(path.join(root, rel), "utf8");

function repo(): string {
  const root = tempRoot("tb-e2e-cp-");
  roots.push(root);
  writeFileSync(path.join(root, "a.txt"), "alpha\nbeta\n");
  writeFileSync(path.join(root, "b.txt"), "one\ntwo\n");
  git(root, "init", "-q");
  git(root, "-c", "user.email=t@t", "-c", "user.name=t", "add", "a.txt", "b.txt");
  git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "init");
  return root;
}

type Listed = { checkpoints: Array<{ id: string; tool: string; files: Array<{ path: string }> }> };

describe("toolbelt checkpoints (built CLI)", () => {
  it("lists, diffs and restores what write_file and a multi-file edit_file changed; refuses on conflict; undoes a restore; leaves git alone", async () => {
    const root = repo();
    const gitBefore = {
      refs: git(root, "for-each-ref"),
      index: git(root, "ls-files", "--stage"),
      stash: git(root, "stash", "list"),
    };
    expect((await run(root, "write_file", { path: "new.txt", content: "fresh\n" })).code).toBe(0);
    const edit = await run(root, "edit_file", {
      edits: [
        { path: "a.txt", old_text: "beta", new_text: "BETA" },
        { path: "b.txt", old_text: "two", new_text: "TWO" },
      ],
    });
    expect(edit.code, edit.stdout + edit.stderr).toBe(0);

    const listed = await checkpoints(root, "list", "--json");
    expect(listed.code, listed.stderr).toBe(0);
    const list = (JSON.parse(listed.stdout) as Listed).checkpoints;
    expect(list.map((c) => c.tool)).toEqual(["write_file", "edit_file"]);
    expect(list[1]?.files.map((f) => f.path)).toEqual(["a.txt", "b.txt"]);
    const [first, second] = list.map((c) => c.id) as [string, string];

    const text = await checkpoints(root, "list");
    expect(text.stdout).toMatch(/# Checkpoints: 2 \(store .*of 512\.0 MiB/);
    expect(text.stdout).toContain(`${first}  `);
    expect(text.stdout).toContain("new.txt (new)");

    const diff = await checkpoints(root, "diff", second);
    expect(diff.code).toBe(0);
    expect(diff.stdout).toContain("-beta\n+BETA");
    expect(diff.stdout).toContain("-two\n+TWO");

    // b.txt changed by hand: the restore is refused whole, naming the file, and nothing changes.
    writeFileSync(path.join(root, "b.txt"), "one\nmine\n");
    const refused = await checkpoints(root, "restore", first);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/ECONFLICT: restore of checkpoint .* refused, nothing was changed/);
    expect(refused.stderr).toMatch(/b\.txt: changed since the last recorded change/);
    expect(refused.stderr).not.toMatch(/a\.txt:/);
    expect(read(root, "a.txt")).toBe("alpha\nBETA\n");
    expect(read(root, "new.txt")).toBe("fresh\n");

    // Put b.txt back as the edit left it: now the restore goes through.
    writeFileSync(path.join(root, "b.txt"), "one\nTWO\n");
    const restored = await checkpoints(root, "restore", first);
    expect(restored.code, restored.stderr).toBe(0);
    expect(restored.stdout).toContain("removed: new.txt");
    expect(read(root, "a.txt")).toBe("alpha\nbeta\n");
    expect(read(root, "b.txt")).toBe("one\ntwo\n");
    expect(existsSync(path.join(root, "new.txt"))).toBe(false);
    const undoId = /restore (\w+)\n?$/.exec(restored.stdout.trim())?.[1];
    expect(undoId).toBeDefined();

    // The restore was recorded: restoring to before it brings every change back.
    const undone = await checkpoints(root, "restore", undoId as string, "--json");
    expect(undone.code, undone.stderr).toBe(0);
    expect(read(root, "a.txt")).toBe("alpha\nBETA\n");
    expect(read(root, "b.txt")).toBe("one\nTWO\n");
    expect(read(root, "new.txt")).toBe("fresh\n");

    // The user's repository: same refs, index and stash; the only changes are the tools' own files.
    expect(git(root, "for-each-ref")).toBe(gitBefore.refs);
    expect(git(root, "ls-files", "--stage")).toBe(gitBefore.index);
    expect(git(root, "stash", "list")).toBe(gitBefore.stash);
    expect(git(root, "status", "--porcelain").split("\n").filter(Boolean).sort()).toEqual([
      " M a.txt",
      " M b.txt",
      "?? new.txt",
    ]);
    expect(readdirSync(root).sort()).toEqual([".git", "a.txt", "b.txt", "new.txt"]);
  });

  it("a restore of a protected path needs --allow protected", async () => {
    const root = repo();
    expect(
      (await run(root, "write_file", { path: ".mcp.json", content: "{}\n" }, ["--allow", "protected"])).code,
    ).toBe(0);
    const denied = await checkpoints(root, "restore", "last");
    expect(denied.code).toBe(1);
    expect(denied.stderr).toMatch(/EDENIED/);
    expect(read(root, ".mcp.json")).toBe("{}\n");
    const allowed = await checkpoints(root, "restore", "last", "--allow", "protected");
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(existsSync(path.join(root, ".mcp.json"))).toBe(false);
  });

  it("tools.checkpoints governs a restore from the CLI (the checkpoints family's write, as undo's)", async () => {
    const root = repo();
    expect((await run(root, "write_file", { path: "a.txt", content: "changed\n" })).code).toBe(0);
    const config = path.join(tempRoot("tb-e2e-cp-config-"), "deny.json");
    writeFileSync(config, JSON.stringify({ tools: { checkpoints: { rules: { deny: ["write(**)"] } } } }));
    const denied = await checkpoints(root, "restore", "last", "--config", config);
    expect(denied.code).toBe(1);
    expect(denied.stderr).toMatch(/EDENIED: checkpoints_restore: .*write\(\*\*\)/);
    expect(read(root, "a.txt")).toBe("changed\n");
    const allowed = await checkpoints(root, "restore", "last");
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(read(root, "a.txt")).not.toBe("changed\n");
  });

  it("the undo tool is bound only when checkpoints.undoTool is set, and undoes the last change", async () => {
    const root = repo();
    await run(root, "write_file", { path: "a.txt", content: "overwritten\n" });
    const off = await run(root, "undo", {});
    expect(off.code).toBe(1);
    expect(JSON.parse(off.stdout)).toMatchObject({ kind: "error", code: "EUNKNOWN_TOOL" });
    const cfg = path.join(state, `undo-${path.basename(root)}.json`);
    writeFileSync(cfg, JSON.stringify({ checkpoints: { undoTool: true } }));
    const on = await run(root, "undo", {}, ["--config", cfg]);
    expect(on.code, on.stdout + on.stderr).toBe(0);
    expect(JSON.parse(on.stdout)).toMatchObject({ kind: "checkpoint_restore", files: [{ path: "a.txt" }] });
    expect(read(root, "a.txt")).toBe("alpha\nbeta\n");
  });

  it("records what a shell command changed: created files restorable, changed files refused honestly", async () => {
    const root = repo();
    const sh = await run(root, "shell", { command: "echo made > made.txt && echo more >> a.txt" }, [
      "--allow",
      "shell",
    ]);
    expect(sh.code, sh.stdout + sh.stderr).toBe(0);
    const listed = JSON.parse((await checkpoints(root, "list", "--json")).stdout) as {
      checkpoints: Array<{ tool: string; files: Array<{ path: string; before: unknown }> }>;
    };
    expect(listed.checkpoints.map((c) => c.tool)).toEqual(["shell"]);
    expect(listed.checkpoints[0]?.files).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ path: "made.txt", before: null }),
        expect.objectContaining({ path: "a.txt", before: "unknown" }),
      ]),
    );
    const refused = await checkpoints(root, "restore", "last");
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/a\.txt: its earlier content was not recorded/);
    expect(read(root, "made.txt")).toBe("made\n");
    // A tool's change after the command is checked against what the command left, and restorable.
    await run(root, "write_file", { path: "a.txt", content: "tool\n" });
    const restored = await checkpoints(root, "restore", "last");
    expect(restored.code, restored.stderr).toBe(0);
    expect(read(root, "a.txt")).toBe("alpha\nbeta\nmore\n");
  });

  it("records changes made over MCP too (serve --mcp), restorable from the CLI", async () => {
    const root = repo();
    const client = new Client({ name: "cp-test", version: "1.0.0" });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [BIN, "serve", "--mcp", "--root", root],
        env: { ...(process.env as Record<string, string>), ...env() },
        stderr: "pipe",
      }),
    );
    try {
      const result = await client.callTool({
        name: "write_file",
        arguments: { path: "a.txt", content: "via mcp\n" },
      });
      expect(result.isError).toBe(false);
    } finally {
      await client.close();
    }
    const listed = JSON.parse((await checkpoints(root, "list", "--json")).stdout) as Listed;
    expect(listed.checkpoints.map((c) => c.tool)).toEqual(["write_file"]);
    expect((await checkpoints(root, "restore", "last")).code).toBe(0);
    expect(read(root, "a.txt")).toBe("alpha\nbeta\n");
  });
});
