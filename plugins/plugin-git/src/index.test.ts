import { execFileSync } from "node:child_process";
import { mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createSession, mergeLayers, parseConfig, type Session } from "@toolbelt/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import plugin, { gitConfig } from "./index.js";

let root: string;
let session: Session;

function sh(...args: string[]) {
  execFileSync("git", args, {
    cwd: root,
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: "Ada",
      GIT_AUTHOR_EMAIL: "a@x",
      GIT_COMMITTER_NAME: "Ada",
      GIT_COMMITTER_EMAIL: "a@x",
    },
  });
}

beforeAll(async () => {
  root = realpathSync(mkdtempSync(path.join(os.tmpdir(), "tb-git-")));
  sh("init", "-q", "-b", "main");
  writeFileSync(path.join(root, "a.txt"), "one\ntwo\n");
  sh("add", "a.txt");
  sh("commit", "-q", "-m", "first commit");
  writeFileSync(path.join(root, "a.txt"), "one\nTWO\n");
  writeFileSync(path.join(root, "new.txt"), "new\n");
  session = await createSession({ root, plugins: [plugin] });
});
afterAll(async () => {
  await session.close();
  rmSync(root, { recursive: true, force: true });
});

describe("plugin-git", () => {
  it("binds its four tools like built-ins", () => {
    expect(
      session
        .bind()
        .tools.map((t) => t.name)
        .sort(),
    ).toEqual(["git_blame", "git_diff", "git_log", "git_status"]);
  });

  it("git_status shows the branch, a modified and an untracked file", async () => {
    const { payload, text } = await session.callWithText("git_status", {});
    expect(payload.kind).toBe("git_output");
    expect(payload.output).toContain("## main");
    expect(payload.output).toContain(" M a.txt");
    expect(payload.output).toContain("?? new.txt");
    expect(text).toContain("# Command: git status");
  });

  it("git_diff shows the change", async () => {
    const payload = await session.call("git_diff", { paths: ["a.txt"] });
    expect(payload.output).toContain("-two");
    expect(payload.output).toContain("+TWO");
  });

  it("git_log and git_blame show the commit", async () => {
    expect((await session.call("git_log", {})).output).toContain("Ada first commit");
    const blame = await session.call("git_blame", { path: "a.txt", start_line: 1, end_line: 1 });
    expect(blame.output).toContain("one");
    expect(String(blame.output).split("\n").filter(Boolean)).toHaveLength(1);
  });

  it("refuses paths outside the root, also through a symlink", async () => {
    expect(await session.call("git_diff", { paths: ["../etc"] })).toMatchObject({ code: "EPATH_ESCAPE" });
    symlinkSync("/etc", path.join(root, "etc-link"));
    expect(await session.call("git_blame", { path: "etc-link/passwd" })).toMatchObject({
      code: "EPATH_ESCAPE",
    });
  });

  it("refuses a revision that would be read as an option", async () => {
    const result = await session.call("git_log", { revision: "--output=/tmp/x" });
    expect(result).toMatchObject({ code: "EINVAL_INPUT", field: "revision" });
  });

  it("caps large output and says so", async () => {
    writeFileSync(path.join(root, "big.txt"), `${"x".repeat(100)}\n`.repeat(2000));
    sh("add", "big.txt");
    const { payload, text } = await session.callWithText("git_diff", { staged: true });
    expect(payload.truncated).toBe(true);
    expect(Number(payload.dropped_bytes)).toBeGreaterThan(0);
    expect(text).toMatch(/# Truncated: yes \(\d+ bytes left out, capped at 65536 bytes\)/);
  });

  it("reports a directory that is not a repository clearly", async () => {
    const plain = realpathSync(mkdtempSync(path.join(os.tmpdir(), "tb-nogit-")));
    const s = await createSession({ root: plain, plugins: [plugin] });
    expect(await s.call("git_status", {})).toMatchObject({ kind: "error", code: "EUNAVAILABLE" });
    await s.close();
    rmSync(plain, { recursive: true, force: true });
  });
});

describe("plugin-git's config section and event", () => {
  it("caps output at git.max_output_bytes and announces it as git/output_truncated", async () => {
    const s = await createSession({ root, plugins: [plugin], config: { git: { max_output_bytes: 2048 } } });
    const seen: unknown[] = [];
    s.on("git/output_truncated", (event) => seen.push(event));
    const { text } = await s.callWithText("git_diff", { staged: true });
    expect(text).toMatch(/capped at 2048 bytes/);
    expect(seen).toEqual([
      expect.objectContaining({ type: "git/output_truncated", cap: 2048, command: "git diff -U3 --cached" }),
    ]);
    await s.close();
  });

  it("defaults log_max_count, and refuses unknown or out-of-range keys naming them", async () => {
    expect(gitConfig.read(parseConfig({}, "config", [gitConfig])).git).toEqual({
      max_output_bytes: 65536,
      log_max_count: 20,
    });
    const s = await createSession({ root, plugins: [plugin], config: { git: { log_max_count: 1 } } });
    expect(String((await s.call("git_log", {})).command)).toBe("git log -n 1");
    await s.close();
    await expect(
      createSession({ root, plugins: [plugin], config: { git: { max_bytes: 1 } } as never }),
    ).rejects.toThrow(/unknown key git\.max_bytes/);
    expect(() => parseConfig({ git: { max_output_bytes: 1e9 } }, "app.json", [gitConfig])).toThrow(
      /git\.max_output_bytes/,
    );
  });

  it("an untrusted project may lower the caps, never raise them", () => {
    const { config, ignored } = mergeLayers(
      [
        { value: { git: { max_output_bytes: 8192 } }, source: "user", trusted: true },
        {
          value: { git: { max_output_bytes: 100_000, log_max_count: 5 } },
          source: "configs/app.json",
          trusted: false,
        },
      ],
      [gitConfig],
    );
    expect(gitConfig.read(config).git).toEqual({ max_output_bytes: 8192, log_max_count: 5 });
    expect(ignored).toEqual([
      { key: "git.max_output_bytes", source: "configs/app.json", why: "raises a limit (8192 → 100000)" },
    ]);
  });
});
