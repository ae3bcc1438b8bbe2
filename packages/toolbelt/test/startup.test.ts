import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, type CliResult, cli, tempRoot, writeLoadRecorder } from "./cli-harness.js";

// Cold start without the cost of what a command does not use: `tools` and `run TOOL --help` answer
// from the build's manifest, a one-shot `run` loads only the tool's family, and plain command lines
// skip yargs. Timing stays in benchmarks/startup; these tests check what loads and what is printed.

const PROFILES = ["default", "mewbo", "mouaif"];
const FORMATS = ["json", "openai", "anthropic", "mcp", "names", "text"];

let root: string;
let env: NodeJS.ProcessEnv;
let hook: string;
let loadedLog: string;

beforeAll(() => {
  assertBuilt();
  root = tempRoot("tb-startup-");
  writeFileSync(path.join(root, "a.txt"), "hello\n");
  // No user config from the machine running the tests: the manifest is for the default config.
  env = { TOOLBELT_CONFIG_DIR: tempRoot("tb-startup-user-"), TOOLBELT_TRUST: "" };
  // A resolve hook that records every module the CLI loads (one URL a line).
  const dir = tempRoot("tb-startup-hook-");
  loadedLog = path.join(dir, "loaded.txt");
  hook = writeLoadRecorder(dir);
});

/** The module URLs a CLI run loaded, with what it printed. */
async function traced(
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<{ urls: string[]; result: CliResult }> {
  writeFileSync(loadedLog, "");
  const result = await cli(args, {
    cwd: options.cwd ?? root,
    runtime: [process.execPath, "--import", hook],
    env: { ...env, ...options.env, TB_LOADED_LOG: loadedLog },
    timeoutMs: 60_000,
  });
  return { urls: readFileSync(loadedLog, "utf8").split("\n").filter(Boolean), result };
}

/** The module URLs a CLI run loaded (it must succeed quietly). */
async function loadedBy(
  args: string[],
  extra?: NodeJS.ProcessEnv,
): Promise<{ urls: string[]; stdout: string }> {
  const { urls, result: r } = await traced(args, extra ? { env: extra } : {});
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  return { urls, stdout: r.stdout };
}

const CORE_INDEX = /\/(@toolbelt\/|packages\/)core\/dist\/index\.js$/;

const FAMILY_ENTRIES = ["files", "edit", "shell", "lsp", "ui", "projects", "mcp"].map((f) => [
  f,
  new RegExp(`/(@toolbelt/|packages/)${f}/dist/index\\.js$`),
]) as Array<[string, RegExp]>;

function familiesLoaded(urls: string[]): string[] {
  return FAMILY_ENTRIES.filter(([, re]) => urls.some((u) => re.test(u))).map(([f]) => f);
}

describe("toolbelt tools from the manifest", () => {
  // Three ways to the same answer: the build's text (no config anywhere), the manifest's sessions
  // (TOOLBELT_TRUST=0 keeps the fast path out and changes nothing else), and a live session.
  it.each(PROFILES)(
    "prints exactly what a live session binds, every format (profile %s)",
    async (profile) => {
      const ways = [env, { ...env, TOOLBELT_TRUST: "0" }, { ...env, TOOLBELT_NO_MANIFEST: "1" }];
      const runs = FORMATS.flatMap((format) =>
        ways.map((e) =>
          cli(["tools", "--format", format, "--profile", profile], { cwd: root, env: e, timeoutMs: 60_000 }),
        ),
      );
      const results = await Promise.all(runs);
      for (let i = 0; i < results.length; i += ways.length) {
        const [fast, fromManifest, live] = results.slice(i, i + ways.length);
        expect(live?.code).toBe(0);
        expect(live?.stdout.length).toBeGreaterThan(0);
        expect(fromManifest).toEqual(live);
        expect(fast).toEqual(live);
      }
    },
  );

  it("run TOOL --help from the manifest matches the live session's", async () => {
    for (const [profile, tool] of [
      ["default", "read_file"],
      ["mewbo", "aider_shell_tool"],
    ] as const) {
      const args = ["run", tool, "--help", "--profile", profile];
      const [fast, fromManifest, live] = await Promise.all([
        cli(args, { cwd: root, env }),
        cli(args, { cwd: root, env: { ...env, TOOLBELT_TRUST: "0" } }),
        cli(args, { cwd: root, env: { ...env, TOOLBELT_NO_MANIFEST: "1" } }),
      ]);
      expect(live.code).toBe(0);
      expect(live.stdout).toContain(`toolbelt run ${tool} --input JSON`);
      expect(fromManifest).toEqual(live);
      expect(fast).toEqual(live);
    }
  });

  it("`tools` imports no family and no yargs", async () => {
    const { urls, stdout } = await loadedBy(["tools", "--format", "names"]);
    expect(stdout.split("\n")).toContain("read_file");
    expect(familiesLoaded(urls)).toEqual([]);
    expect(
      urls.filter((u) => /node_modules\/(yargs|ts-morph|typescript|@modelcontextprotocol)\//.test(u)),
    ).toEqual([]);
  });

  it.each([
    ["tools", "--format", "openai"],
    ["tools", "--profile", "mewbo", "--format", "text", "--root", "."],
    ["run", "read_file", "--help"],
    ["run", "aider_shell_tool", "--profile=mewbo", "-h"],
  ])("with no config anywhere, `%s …` loads neither core's index nor any contrib module", async (...args) => {
    const { urls, stdout } = await loadedBy(args);
    expect(stdout.length).toBeGreaterThan(0);
    expect(
      urls.filter((u) => CORE_INDEX.test(u) || /\/contrib\.js$/.test(u) || /\/cli-[^/]*\.js$/.test(u)),
    ).toEqual([]);
    expect(familiesLoaded(urls)).toEqual([]);
  });

  // Each of these could change the answer (or its stderr): the CLI works it out instead, and prints
  // what a live session does.
  const user = () => env.TOOLBELT_CONFIG_DIR as string;
  const fallbacks: Array<[string, (dir: string) => NodeJS.ProcessEnv | undefined, string[]?]> = [
    ["a project configs/app.json", (dir) => void mkdirAndWrite(path.join(dir, "configs", "app.json"), "{}")],
    [
      "a project .mcp.json",
      (dir) => void mkdirAndWrite(path.join(dir, ".mcp.json"), '{"mcpServers":{"x":{"command":"true"}}}'),
    ],
    [
      "a user config.json",
      () => {
        const dir = tempRoot("tb-startup-user-");
        writeFileSync(path.join(dir, "config.json"), "{}");
        return { TOOLBELT_CONFIG_DIR: dir };
      },
    ],
    [
      "a user trust list",
      () => {
        const dir = tempRoot("tb-startup-user-");
        writeFileSync(path.join(dir, "trusted-projects.json"), '{"trusted":[]}');
        return { TOOLBELT_CONFIG_DIR: dir };
      },
    ],
    [
      "XDG_CONFIG_HOME with a toolbelt config",
      () => {
        const dir = tempRoot("tb-startup-xdg-");
        mkdirAndWrite(path.join(dir, "toolbelt", "config.json"), "{}");
        return { TOOLBELT_CONFIG_DIR: "", XDG_CONFIG_HOME: dir };
      },
    ],
    ["TOOLBELT_TRUST=1", () => ({ TOOLBELT_TRUST: "1" })],
    ["--no-trust", () => undefined, ["--no-trust"]],
    ["--allow shell", () => undefined, ["--allow", "shell"]],
  ];
  it.each(fallbacks)("falls back to the usual path with %s", async (_what, setUp, flags = []) => {
    expect(user()).toBeTruthy();
    const dir = tempRoot("tb-startup-fallback-");
    const extra = setUp(dir) ?? {};
    for (const args of [
      ["tools", "--format", "json", ...flags],
      ["run", "read_file", "--help", ...flags],
    ]) {
      const { urls, result } = await traced(args, { cwd: dir, env: extra });
      const live = await cli(args, {
        cwd: dir,
        env: { ...env, ...extra, TOOLBELT_NO_MANIFEST: "1" },
        timeoutMs: 60_000,
      });
      expect(live.code).toBe(0);
      expect(result).toEqual(live);
      expect(urls.some((u) => CORE_INDEX.test(u))).toBe(true);
    }
  });

  it("a config that changes the bound set is not answered from the manifest", async () => {
    const dir = tempRoot("tb-startup-config-");
    const config = path.join(dir, "narrow.json");
    writeFileSync(config, JSON.stringify({ agent: { allowed_tools: ["read_file", "list_dir"] } }));
    const narrowed = await cli(["tools", "--format", "names", "--config", config], { cwd: root, env });
    expect(narrowed.code).toBe(0);
    expect(narrowed.stdout.trim().split("\n").sort()).toEqual(["list_dir", "read_file"]);
    // A model picks the edit backend: the manifest (made with none) does not answer for it.
    const claude = await cli(["tools", "--format", "names", "--model", "claude-sonnet-4"], {
      cwd: root,
      env,
    });
    expect(claude.stdout.split("\n")).toContain("search_replace_block");
    expect(claude.stdout.split("\n")).not.toContain("edit_file");
  });
});

function mkdirAndWrite(file: string, text: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
}

// A plain `run read_file` with no config runs from the one-shot bundle (oneshot.test.ts); these check
// the ES module path it falls back to, so they turn the bundle off.
const NO_BUNDLE = { TOOLBELT_NO_ONESHOT: "1" };

describe("one-shot run", () => {
  it("`run read_file` loads the files family only, without yargs or the TypeScript compiler", async () => {
    const { urls, stdout } = await loadedBy(["run", "read_file", "--input", '{"path":"a.txt"}'], NO_BUNDLE);
    expect(JSON.parse(stdout)).toMatchObject({ kind: "file_content", path: "a.txt" });
    expect(familiesLoaded(urls)).toEqual(["files"]);
    // zod comes inside core's file: its package (97 modules) is not loaded.
    expect(urls.filter((u) => /node_modules\/(yargs|ts-morph|typescript|zod)\//.test(u))).toEqual([]);
  });

  it("with no config anywhere, `run read_file` imports no other family's contrib module", async () => {
    const contribsOf = (urls: string[]) =>
      [...new Set(urls.map((u) => /\/(?:@toolbelt|packages)\/(\w+)\/dist\/contrib\.js$/.exec(u)?.[1]))]
        .filter(Boolean)
        .sort();
    const lean = await loadedBy(["run", "read_file", "--input", '{"path":"a.txt"}'], NO_BUNDLE);
    expect(contribsOf(lean.urls)).toEqual(["files"]);
    // A config file (even an empty one) brings every family's keys back, and the payload is the same.
    const dir = tempRoot("tb-startup-empty-");
    const empty = path.join(dir, "empty.json");
    writeFileSync(empty, "{}");
    const full = await loadedBy(["run", "read_file", "--input", '{"path":"a.txt"}', "--config", empty]);
    expect(contribsOf(full.urls)).toEqual(["edit", "files", "lsp", "mcp", "projects", "shell", "ui"]);
    expect(full.stdout).toBe(lean.stdout);
  });

  it("any config source still has every family's keys checked by `run read_file`", async () => {
    const project = tempRoot("tb-startup-proj-");
    writeFileSync(path.join(project, "a.txt"), "hello\n");
    mkdirSync(path.join(project, "configs"));
    writeFileSync(path.join(project, "configs", "app.json"), '{"agent":{"shell_max_processes":-1}}');
    const bad = await cli(["run", "read_file", "--input", '{"path":"a.txt"}'], { cwd: project, env });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("agent.shell_max_processes");
    // An untrusted project's loosening of the shell sandbox is still reported as ignored.
    writeFileSync(path.join(project, "configs", "app.json"), '{"agent":{"shell_sandbox":"off"}}');
    const loosened = await cli(["run", "read_file", "--input", '{"path":"a.txt"}'], { cwd: project, env });
    expect(loosened.code).toBe(0);
    expect(loosened.stderr).toContain("agent.shell_sandbox");
    // The user's own config counts as a source too.
    const user = tempRoot("tb-startup-user2-");
    writeFileSync(path.join(user, "config.json"), '{"lsp":{"no_such_key":1}}');
    const userBad = await cli(["run", "read_file", "--input", '{"path":"a.txt"}'], {
      cwd: root,
      env: { ...env, TOOLBELT_CONFIG_DIR: user },
    });
    expect(userBad.code).toBe(2);
    expect(userBad.stderr).toContain("lsp");
    // An untrusted project's .mcp.json brings mcp's in: it is what reports the servers not started.
    rmSync(path.join(project, "configs"), { recursive: true });
    writeFileSync(path.join(project, ".mcp.json"), '{"mcpServers":{"evil":{"command":"touch"}}}');
    const mcp = await traced(["run", "read_file", "--input", '{"path":"a.txt"}'], { cwd: project });
    expect(mcp.result.code).toBe(0);
    expect(mcp.result.stderr).toContain("mcpServers.evil (.mcp.json): starts an MCP server");
    expect(mcp.urls.some((u) => /\/mcp\/dist\/contrib\.js$/.test(u))).toBe(true);
  });

  it("a line the fast parser does not take still goes through yargs (and its errors)", async () => {
    const r = await cli(["run", "read_file", "--input", '{"path":"a.txt"}', "--no-such-flag"], {
      cwd: root,
      env,
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("Unknown argument");
    const ok = await cli(["run", "read_file", "--input", '{"path":"a.txt"}', "--trust", "false"], {
      cwd: root,
      env,
    });
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ kind: "file_content" });
  });
});

describe("lsp family", () => {
  it("loading @toolbelt/lsp does not load ts-morph (the fallback loads on first use)", async () => {
    const { urls } = await loadedBy(["run", "lsp_diagnostics", "--help"]);
    // --help answers from the manifest; load the family for real through exec with no call.
    expect(urls.some((u) => u.includes("/ts-morph/"))).toBe(false);
    const dir = tempRoot("tb-startup-exec-");
    writeFileSync(loadedLog, "");
    const r = await cli(["exec", "--root", dir], {
      cwd: dir,
      input: "",
      runtime: [process.execPath, "--import", hook],
      env: { ...env, TB_LOADED_LOG: loadedLog },
      timeoutMs: 60_000,
    });
    expect(r.code).toBe(0);
    const loaded = readFileSync(loadedLog, "utf8").split("\n");
    expect(familiesLoaded(loaded)).toContain("lsp");
    expect(loaded.filter((u) => /node_modules\/(ts-morph|typescript)\//.test(u))).toEqual([]);
  });
});
