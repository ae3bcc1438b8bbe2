// Issue 27, 2 and 3: planting a git repository, or a nested repository's hooks and config, so that the
// next git command (an allowed `git diff`, the user's own git) runs a command of the attacker's choice.
// End to end through the built CLI: real git, real Landlock and mount namespaces.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lacks, need } from "../../../../test-support/capability.js";
import { assertBuilt, type CliResult, cli, tempRoot } from "../cli-harness.js";

const notLinux = lacks("linux", process.platform !== "linux" && `this is ${process.platform}`);
const dirs: string[] = [];
let configDir: string;

beforeAll(async () => {
  assertBuilt();
  configDir = tempRoot("tb-git-plant-home-");
  dirs.push(configDir);
  const out = await cli(["doctor", "--format", "json"]);
  doctor = JSON.parse(out.stdout) as Array<{ name: string; status: string; detail: string }>;
});

afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

let doctor: Array<{ name: string; status: string; detail: string }> = [];
const sandboxed = () => doctor.find((c) => c.name === "sandbox-read-only")?.status === "ok";

function project(): string {
  const root = tempRoot("tb-git-plant-");
  dirs.push(root);
  return root;
}

function run(args: string[]): Promise<CliResult> {
  return cli(args, {
    env: { TOOLBELT_CONFIG_DIR: configDir, XDG_CONFIG_HOME: configDir, TOOLBELT_TRUST: "" },
    timeoutMs: 60_000,
  });
}

function payload(result: CliResult): Record<string, unknown> {
  return JSON.parse(result.stdout.trim().split("\n").at(-1) ?? "{}") as Record<string, unknown>;
}

function writeFile(root: string, file: string, content: string, extra: string[] = []): Promise<CliResult> {
  return run([
    "run",
    "write_file",
    "--root",
    root,
    ...extra,
    "--input",
    JSON.stringify({ path: file, content }),
  ]);
}

function rulesConfig(): string {
  const file = path.join(configDir, `rules-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify({ tools: { shell: { rules: { allow: ["shell(git diff:*)"] } } } }));
  return file;
}

/** The bare-repository layout of the issue: its config runs `touch <marker>` on the next index refresh. */
const BARE = (marker: string): Record<string, string> => ({
  HEAD: "ref: refs/heads/main\n",
  config: `[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = "touch ${marker}; false"\n`,
  "objects/info/.keep": "",
  "refs/heads/.keep": "",
});

describe("a bare repository planted in a root that is not a repository (issue 27, 2)", () => {
  it("its HEAD is protected: write_file refuses it headless", async () => {
    const root = project();
    const result = await writeFile(root, "HEAD", "ref: refs/heads/main\n");
    expect(payload(result)).toMatchObject({ kind: "error", code: "EDENIED" });
    expect(String(payload(result).message)).toContain("--allow protected");
    expect(existsSync(path.join(root, "HEAD"))).toBe(false);
    const nested = await writeFile(root, "sub/HEAD", "ref: refs/heads/main\n");
    expect(payload(nested)).toMatchObject({ kind: "error", code: "EDENIED" });
  });

  it.each([".", "sub"])(
    "planted anyway (in %s), an allowed `git diff` there does not run its fsmonitor",
    async (where) => {
      const root = project();
      const marker = path.join(root, "PWNED");
      for (const [file, content] of Object.entries(BARE(marker))) {
        const result = await writeFile(root, path.join(where, file), content, ["--allow", "protected"]);
        expect(payload(result)).toMatchObject({ kind: "file_written" });
      }
      const diff = await run([
        "run",
        "shell",
        "--root",
        root,
        "--config",
        rulesConfig(),
        "--input",
        JSON.stringify({ command: "git diff", cwd: where }),
      ]);
      expect(payload(diff)).toMatchObject({ kind: "shell_result" });
      expect(String(payload(diff).stdout)).toMatch(/bare repository|not a git repository/i);
      expect(existsSync(marker)).toBe(false);
    },
  );
});

function gitInit(dir: string): void {
  mkdirSync(dir, { recursive: true });
  execFileSync("git", ["init", "-q", dir]);
}

describe("a nested repository's .git (issue 27, 3)", () => {
  it.each([
    ["vendor/lib/.git/hooks/pre-commit", "#!/bin/sh\ntouch PWNED\n"],
    ["vendor/lib/.git/config", '[core]\n\tfsmonitor = "touch PWNED; false"\n'],
    ["vendor/other/.git", "gitdir: ../../evil\n"],
    ["a/b/c/.git/hooks/post-checkout", "#!/bin/sh\ntouch PWNED\n"],
  ])("write_file %s is refused headless, as the root's .git is", async (file, content) => {
    const root = project();
    gitInit(path.join(root, "vendor/lib"));
    const before = existsSync(path.join(root, file)) ? readFileSync(path.join(root, file), "utf8") : null;
    const result = await writeFile(root, file, content);
    expect(payload(result)).toMatchObject({ kind: "error", code: "EDENIED" });
    expect(String(payload(result).message)).toContain("--allow protected");
    const after = existsSync(path.join(root, file)) ? readFileSync(path.join(root, file), "utf8") : null;
    expect(after).toBe(before);
    const allowed = await writeFile(root, file, content, ["--allow", "protected"]);
    expect(payload(allowed)).toMatchObject({ kind: "file_written" });
  });

  it.skipIf(notLinux)(
    "a sandboxed command cannot rewrite a nested repository's hooks or config, nor a submodule's",
    async (ctx) => {
      need(
        ctx,
        "mount-namespace",
        !sandboxed() && "protected paths are not bound read-only here (doctor sandbox-read-only)",
      );
      const root = project();
      gitInit(root);
      gitInit(path.join(root, "vendor/lib"));
      mkdirSync(path.join(root, ".git/modules/sub/hooks"), { recursive: true });
      writeFileSync(path.join(root, ".git/modules/sub/config"), "[core]\n");
      writeFileSync(path.join(root, ".git/modules/sub/HEAD"), "ref: refs/heads/main\n");
      const command = [
        "printf '#!/bin/sh\\ntouch PWNED\\n' > vendor/lib/.git/hooks/pre-commit && echo WROTE-HOOK;",
        "git -C vendor/lib config core.fsmonitor 'touch PWNED; false' && echo WROTE-CONFIG;",
        "printf '#!/bin/sh\\ntouch PWNED\\n' > .git/modules/sub/hooks/post-checkout && echo WROTE-SUBHOOK;",
        "echo '[core] fsmonitor = touch PWNED' >> .git/modules/sub/config && echo WROTE-SUBCONFIG;",
        "git -C vendor/lib status --short >/dev/null 2>&1; echo done",
      ].join(" ");
      const result = await run([
        "run",
        "shell",
        "--root",
        root,
        "--allow",
        "shell",
        "--input",
        JSON.stringify({ command }),
      ]);
      const out = payload(result);
      expect(out).toMatchObject({ kind: "shell_result" });
      expect(String(out.stdout)).toContain("done");
      expect(String(out.stdout)).not.toMatch(/WROTE-/);
      expect(existsSync(path.join(root, "vendor/lib/.git/hooks/pre-commit"))).toBe(false);
      expect(readFileSync(path.join(root, "vendor/lib/.git/config"), "utf8")).not.toContain("fsmonitor");
      expect(existsSync(path.join(root, "PWNED"))).toBe(false);
      expect(existsSync(path.join(root, "vendor/lib/PWNED"))).toBe(false);
    },
  );

  it.skipIf(notLinux)("a repository a command creates, or a HEAD it plants, is reported", async () => {
    const root = project();
    const result = await run([
      "run",
      "shell",
      "--root",
      root,
      "--allow",
      "shell",
      "--input",
      JSON.stringify({
        command: "git init -q made && mkdir -p bare && echo 'ref: refs/heads/main' > bare/HEAD",
      }),
    ]);
    const out = payload(result);
    expect(out).toMatchObject({ kind: "shell_result", exit_code: 0 });
    expect(out.protected_changed).toEqual(expect.arrayContaining(["made/.git", "bare/HEAD"]));
  });
});
