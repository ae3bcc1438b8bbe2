// `toolbelt tools` and `run TOOL --help` answer from the build's text when no config exists anywhere
// (src/fast-tools.ts). Attacked end to end through the built CLI: every source that can narrow what a
// session binds, or has something to report, must still be heard — a fast path that answered past it
// would show the model tools the user switched off, or keep quiet about a project's refused servers.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, type CliResult, cli, tempRoot } from "../cli-harness.js";

let userDir: string;

beforeAll(() => {
  assertBuilt();
  userDir = tempRoot("tb-fast-user-");
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

describe("tools fast path", () => {
  it("an untrusted project's config that switches tools off is honoured", async () => {
    const root = tempRoot("tb-fast-project-");
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
    const root = tempRoot("tb-fast-project-");
    const own = tempRoot("tb-fast-user-");
    write(path.join(own, "config.json"), { agent: { allowed_tools: ["read_file"] } });
    expect(names(await run(["tools", "--format", "names"], root, { TOOLBELT_CONFIG_DIR: own }))).toEqual([
      "read_file",
    ]);
    const xdg = tempRoot("tb-fast-xdg-");
    write(path.join(xdg, "toolbelt", "config.json"), { agent: { allowed_tools: ["list_files"] } });
    const viaXdg = await run(["tools", "--format", "names"], root, {
      TOOLBELT_CONFIG_DIR: "",
      XDG_CONFIG_HOME: xdg,
    });
    expect(names(viaXdg)).toEqual(["list_files"]);
  });

  it("an untrusted project's .mcp.json is still reported as ignored, and starts nothing", async () => {
    const root = tempRoot("tb-fast-project-");
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
    const root = tempRoot("tb-fast-project-");
    mkdirSync(path.join(root, "configs"));
    writeFileSync(path.join(root, "configs", "app.json"), "{ broken");
    const r = await run(["tools"], root);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("EINVAL_CONFIG");
  });

  // A mistyped --root: a live session refuses it (ENOENT, exit 1). The build's text (no config
  // anywhere) and the manifest (a config that resolves to the default) printed the default tools, exit 0.
  it.each([
    ["no config anywhere", undefined],
    ["a user config that changes nothing", {}],
  ])("a --root that does not exist is refused as a live session refuses it (%s)", async (_what, own) => {
    const cwd = tempRoot("tb-fast-project-");
    const missing = path.join(cwd, "no-such-root");
    const user = tempRoot("tb-fast-user-");
    if (own) write(path.join(user, "config.json"), own);
    for (const args of [
      ["tools", "--format", "names", "--root", missing],
      ["run", "read_file", "--help", "--root", missing],
    ]) {
      const live = await run(args, cwd, { TOOLBELT_CONFIG_DIR: user, TOOLBELT_NO_MANIFEST: "1" });
      expect(live.code).toBe(1);
      expect(live.stderr).toContain(`root does not exist: ${missing}`);
      expect(await run(args, cwd, { TOOLBELT_CONFIG_DIR: user })).toEqual(live);
    }
  });

  it.each(["__proto__", "constructor", "../../../etc/passwd", "toString"])(
    "a profile or tool named %s is not looked up in the build's files",
    async (name) => {
      const root = tempRoot("tb-fast-project-");
      const profile = await run(["tools", "--profile", name], root);
      expect(profile.code).toBe(2);
      expect(profile.stderr).toContain(`unknown --profile ${name}`);
      const tool = await run(["run", name, "--help"], root);
      expect(tool.code).toBe(2);
      expect(tool.stderr).toContain(`no tool ${name} in this session`);
    },
  );
});
