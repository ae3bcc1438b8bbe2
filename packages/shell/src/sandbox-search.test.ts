import { spawnSync } from "node:child_process";
import { mkdirSync, renameSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { CommandSpec, Session } from "@toolbelt/core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { lacks } from "../../../test-support/capability.js";
import { staticExecutableProblem } from "./search-sandbox.js";
import { landlockHere, openSession, removeDir, tempDir } from "./test-harness.js";

// session.wrapCommand(spec, "search"): the files family starts ripgrep through it. Under Landlock the
// process reads only beneath the root (plus the ignore files above it the caller lists, and its own
// binary) and writes nothing, so a name swapped for a symlink to outside is refused at the open; the
// spec says `confined: true` only then. Anything else is passed through with the reason.

const here = landlockHere();
const noLandlock = lacks(here.lack, !here.ok && here.reason);

const rg = await (async () => {
  try {
    // The files family's engine; a test-only import (the shell family itself knows no ripgrep).
    const mod = (await import("@vscode/ripgrep")) as { rgPath?: string };
    return mod.rgPath;
  } catch {
    return undefined;
  }
})();
const noRg = lacks("ripgrep", !rg && "@vscode/ripgrep's binary is not installed");

let base: string;
let root: string;
let outside: string;
const sessions: Session[] = [];

beforeAll(() => {
  base = tempDir("tb-search-sandbox-");
  root = path.join(base, "project", "root");
  outside = path.join(base, "outside");
  mkdirSync(path.join(root, "d"), { recursive: true });
  mkdirSync(outside, { recursive: true });
  writeFileSync(path.join(root, "d", "f.txt"), "hit inside\n");
  writeFileSync(path.join(root, "ignored.txt"), "hit but ignored by the parent's .gitignore\n");
  writeFileSync(path.join(base, "project", ".gitignore"), "ignored.txt\n");
  writeFileSync(path.join(outside, "f.txt"), "hit OUTSIDE SECRET\n");
  writeFileSync(path.join(outside, "OUTSIDE-name.txt"), "hit\n");
  symlinkSync(path.join(outside, "f.txt"), path.join(root, "d", "link.txt"));
  symlinkSync(outside, path.join(root, "dl"));
});
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
});
afterAll(() => removeDir(base));

async function session(config = {}): Promise<Session> {
  const s = await openSession(root, config);
  sessions.push(s);
  return s;
}

function searchSpec(file: string, args: string[]): CommandSpec {
  return {
    file,
    args,
    cwd: root,
    env: { PATH: process.env.PATH },
    reads: [path.join(base, "project", ".gitignore"), path.join(base, ".gitignore")],
  };
}

function run(spec: CommandSpec) {
  const r = spawnSync(spec.file, spec.args, {
    cwd: spec.cwd,
    env: spec.env as NodeJS.ProcessEnv,
    encoding: "utf8",
  });
  return { status: r.status, out: r.stdout, err: r.stderr };
}

describe.skipIf(noLandlock || noRg)("ripgrep started for a search under Landlock", () => {
  it("reads beneath the root and the ignore files above it, and nothing a symlink points to outside", async () => {
    const s = await session();
    const spec = s.wrapCommand(
      searchSpec(rg as string, ["--no-config", "--no-require-git", "-n", "--hidden", "hit", "."]),
      "search",
    );
    expect(spec.confined).toBe(true);
    expect(spec.args).not.toContain("--write");
    const r = run(spec);
    expect(r.out).toContain("./d/f.txt:1:hit inside");
    // The parent's .gitignore was read (ripgrep honours it), without a permission error.
    expect(r.out).not.toContain("ignored.txt");
    expect(r.err).not.toContain(".gitignore");
    expect(r.out).not.toContain("OUTSIDE");
    // Named directly, as the second pass names files, or walked into: refused, never read.
    const named = run(
      s.wrapCommand(
        searchSpec(rg as string, ["--no-config", "-n", "hit", "d/link.txt", "dl", "dl/f.txt"]),
        "search",
      ),
    );
    expect(named.out).not.toContain("OUTSIDE");
    expect(named.err).toMatch(/d\/link\.txt: Permission denied/);
    expect(named.err).toMatch(/dl: Permission denied/);
    const follow = run(
      s.wrapCommand(searchSpec(rg as string, ["--no-config", "-n", "--follow", "hit", "."]), "search"),
    );
    expect(follow.out).toContain("./d/f.txt:1:hit inside");
    expect(follow.out).not.toContain("OUTSIDE");
  });

  it("a root reached through a symlink at the open refuses the command instead of granting where it points", async () => {
    const s = await session();
    const spec = s.wrapCommand(searchSpec(rg as string, ["--no-config", "hit", "."]), "search");
    const rootAt = spec.args.indexOf("--read-nofollow") + 1;
    expect(spec.args[rootAt]).toBe(root);
    // The root swapped for a symlink to outside between the plan and the helper's open.
    renameSync(root, `${root}.real`);
    symlinkSync(outside, root);
    try {
      const r = run({ ...spec, cwd: base });
      expect(r.status).toBe(125);
      expect(r.err).toMatch(/toolbelt-sandbox: cannot open without following symlinks/);
      expect(r.out).toBe("");
    } finally {
      removeDir(root);
      renameSync(`${root}.real`, root);
    }
  });
});

describe("what is not confined says why", () => {
  it.skipIf(noRg)("agent.shell_sandbox off", async () => {
    const s = await session({ agent: { shell_sandbox: "off" } });
    const spec = s.wrapCommand(searchSpec(rg as string, ["hit"]), "search");
    expect(spec.confined).toBeUndefined();
    expect(spec.unconfinedReason).toMatch(/shell_sandbox is "off"/);
    expect(spec.file).toBe(rg);
  });

  it.skipIf(noLandlock)(
    "a dynamic executable or a script (its loader, libraries or interpreter are not granted)",
    async () => {
      const s = await session();
      const dynamic = spawnSync("sh", ["-c", "command -v ls"], { encoding: "utf8" }).stdout.trim();
      if (staticExecutableProblem(dynamic) === undefined)
        console.log(`${dynamic} is static here: not a dynamic example`);
      else {
        const spec = s.wrapCommand(searchSpec(dynamic, []), "search");
        expect(spec.confined).toBeUndefined();
        expect(spec.unconfinedReason).toMatch(/dynamically linked/);
      }
      const script = path.join(base, "rg.sh");
      writeFileSync(script, "#!/bin/sh\nexec true\n", { mode: 0o755 });
      expect(s.wrapCommand(searchSpec(script, []), "search").unconfinedReason).toMatch(/not an ELF/);
    },
  );

  it.skipIf(noRg)("no helper (TOOLBELT_SANDBOX_HELPER names none)", async () => {
    const saved = process.env.TOOLBELT_SANDBOX_HELPER;
    process.env.TOOLBELT_SANDBOX_HELPER = path.join(base, "no-such-helper");
    try {
      const s = await session();
      const spec = s.wrapCommand(searchSpec(rg as string, []), "search");
      expect(spec.confined).toBeUndefined();
      expect(spec.unconfinedReason).toBeTruthy();
    } finally {
      if (saved === undefined) delete process.env.TOOLBELT_SANDBOX_HELPER;
      else process.env.TOOLBELT_SANDBOX_HELPER = saved;
    }
  });

  it("other purposes and the language-server wrapper are unchanged by the search purpose", async () => {
    const s = await session();
    const spec: CommandSpec = { file: "/bin/true", args: [], cwd: root, env: {} };
    expect(s.wrapCommand(spec, "mcp-server")).toEqual(spec);
  });
});
