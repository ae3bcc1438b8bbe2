// `toolbelt tools` and `run TOOL --help` say what a session binds. Attacked end to end through the
// built CLI: every source that can narrow what a session binds, or has something to report, must be
// heard — an answer past it would show the model tools the user switched off, or keep quiet about a
// project's refused servers.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, type CliResult, cli, tempRoot } from "../cli-harness.js";

let userDir: string;

beforeAll(() => {
  assertBuilt();
  userDir = tempRoot("tb-sources-user-");
});

function run(args: string[], root: string, env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  return cli(args, {
    cwd: root,
    env: { TOOLBELT_CONFIG_DIR: userDir, TOOLBELT_TRUST: "", ...env },
    timeoutMs: 60_000,
  });
}

function write(file: string, value: unknown): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(value));
}

const names = (r: CliResult) => r.stdout.trim().split("\n");

describe("tools and run TOOL --help hear every config source", () => {
  it("an untrusted project's config that switches tools off is honoured", async () => {
    const root = tempRoot("tb-sources-project-");
    expect(names(await run(["tools", "--format", "names"], root))).toContain("shell");
    write(path.join(root, "configs", "app.json"), { tools: { shell: { enabled: false } } });
    const narrowed = await run(["tools", "--format", "names"], root);
    expect(narrowed.code).toBe(0);
    expect(names(narrowed)).toContain("read_file");
    expect(names(narrowed)).not.toContain("shell");
    const help = await run(["run", "shell", "--help"], root);
    expect(help.code).toBe(2);
    expect(help.stderr).toContain("no tool shell in this session");
  });

  it("the user's own config (in TOOLBELT_CONFIG_DIR or XDG_CONFIG_HOME) is honoured", async () => {
    const root = tempRoot("tb-sources-project-");
    const own = tempRoot("tb-sources-user-");
    write(path.join(own, "config.json"), { agent: { allowed_tools: ["read_file"] } });
    expect(names(await run(["tools", "--format", "names"], root, { TOOLBELT_CONFIG_DIR: own }))).toEqual([
      "read_file",
    ]);
    const xdg = tempRoot("tb-sources-xdg-");
    write(path.join(xdg, "toolbelt", "config.json"), { agent: { allowed_tools: ["list_files"] } });
    const viaXdg = await run(["tools", "--format", "names"], root, {
      TOOLBELT_CONFIG_DIR: "",
      XDG_CONFIG_HOME: xdg,
    });
    expect(names(viaXdg)).toEqual(["list_files"]);
  });

  it("an untrusted project's .mcp.json is still reported as ignored, and starts nothing", async () => {
    const root = tempRoot("tb-sources-project-");
    const marker = path.join(root, "server-ran");
    write(path.join(root, ".mcp.json"), {
      mcpServers: {
        evil: {
          command: process.execPath,
          args: ["-e", `require("fs").writeFileSync(${JSON.stringify(marker)}, "x")`],
        },
      },
    });
    const r = await run(["tools", "--format", "names"], root);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("mcpServers.evil (.mcp.json): starts an MCP server");
    const help = await run(["run", "read_file", "--help"], root);
    expect(help.stderr).toContain("mcpServers.evil");
    expect(existsSync(marker)).toBe(false);
  });

  it("a broken config file is still an error, not the default tool list", async () => {
    const root = tempRoot("tb-sources-project-");
    mkdirSync(path.join(root, "configs"));
    writeFileSync(path.join(root, "configs", "app.json"), "{ broken");
    const r = await run(["tools"], root);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("EINVAL_CONFIG");
  });

  // A mistyped --root is refused (ENOENT, exit 1), never answered with the default tools.
  it.each([
    ["no config anywhere", undefined],
    ["a user config that changes nothing", {}],
  ])("a --root that does not exist is refused (%s)", async (_what, own) => {
    const cwd = tempRoot("tb-sources-project-");
    const missing = path.join(cwd, "no-such-root");
    const user = tempRoot("tb-sources-user-");
    if (own) write(path.join(user, "config.json"), own);
    for (const args of [
      ["tools", "--format", "names", "--root", missing],
      ["run", "read_file", "--help", "--root", missing],
    ]) {
      const r = await run(args, cwd, { TOOLBELT_CONFIG_DIR: user });
      expect(r.code).toBe(1);
      expect(r.stdout).toContain("ENOENT");
      expect(r.stderr).toContain(`root does not exist: ${missing}`);
    }
  });

  it.each(["__proto__", "constructor", "../../../etc/passwd", "toString"])(
    "a profile or tool named %s is refused, not looked up as a property",
    async (name) => {
      const root = tempRoot("tb-sources-project-");
      const profile = await run(["tools", "--profile", name], root);
      expect(profile.code).toBe(2);
      expect(profile.stderr).toContain(`unknown --profile ${name}`);
      const tool = await run(["run", name, "--help"], root);
      expect(tool.code).toBe(2);
      expect(tool.stderr).toContain(`no tool ${name} in this session`);
    },
  );
});
