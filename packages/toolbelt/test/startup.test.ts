import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, type CliResult, cli, tempRoot, writeLoadRecorder } from "./cli-harness.js";

// A command loads only what it uses: `run TOOL` loads the tool's own family (the build's map of tool
// names to families), and with no config anywhere only that family's config keys. Timing stays in
// benchmarks/startup; these tests check what loads and what is printed.

let root: string;
let env: NodeJS.ProcessEnv;
let hook: string;
let loadedLog: string;

beforeAll(() => {
  assertBuilt();
  root = tempRoot("tb-startup-");
  writeFileSync(path.join(root, "a.txt"), "hello\n");
  // No user config from the machine running the tests: with none, `run` loads only its own families' keys.
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

const FAMILY_ENTRIES = ["files", "edit", "shell", "lsp", "ui", "projects", "mcp"].map((f) => [
  f,
  new RegExp(`/(@toolbelt/|packages/)${f}/dist/index\\.js$`),
]) as Array<[string, RegExp]>;

function familiesLoaded(urls: string[]): string[] {
  return FAMILY_ENTRIES.filter(([, re]) => urls.some((u) => re.test(u))).map(([f]) => f);
}

describe("toolbelt tools", () => {
  it("a config or a model changes the bound set", async () => {
    const dir = tempRoot("tb-startup-config-");
    const config = path.join(dir, "narrow.json");
    writeFileSync(config, JSON.stringify({ agent: { allowed_tools: ["read_file", "list_dir"] } }));
    const narrowed = await cli(["tools", "--format", "names", "--config", config], { cwd: root, env });
    expect(narrowed.code).toBe(0);
    expect(narrowed.stdout.trim().split("\n").sort()).toEqual(["list_dir", "read_file"]);
    // A model picks the edit backend.
    const claude = await cli(["tools", "--format", "names", "--model", "claude-sonnet-4"], {
      cwd: root,
      env,
    });
    expect(claude.stdout.split("\n")).toContain("search_replace_block");
    expect(claude.stdout.split("\n")).not.toContain("edit_file");
  });
});

describe("run loads its tool's family", () => {
  it("`run read_file` loads the files family only, without the TypeScript compiler", async () => {
    const { urls, stdout } = await loadedBy(["run", "read_file", "--input", '{"path":"a.txt"}']);
    expect(JSON.parse(stdout)).toMatchObject({ kind: "file_content", path: "a.txt" });
    expect(familiesLoaded(urls)).toEqual(["files"]);
    // zod comes inside core's file: its package (97 modules) is not loaded.
    expect(urls.filter((u) => /node_modules\/(ts-morph|typescript|zod)\//.test(u))).toEqual([]);
  });

  it("a name the build did not map (a plugin's tool, a typo) loads every family", async () => {
    const { urls, result } = await traced(["run", "no_such_tool", "--input", "{}"]);
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout)).toMatchObject({ kind: "error", code: "EUNKNOWN_TOOL" });
    // (mcp's implementation loads only for a project that names servers.)
    expect(familiesLoaded(urls).sort()).toEqual(["edit", "files", "lsp", "projects", "shell", "ui"]);
  });

  it("with no config anywhere, `run read_file` imports no other family's contrib module", async () => {
    const contribsOf = (urls: string[]) =>
      [...new Set(urls.map((u) => /\/(?:@toolbelt|packages)\/(\w+)\/dist\/contrib\.js$/.exec(u)?.[1]))]
        .filter(Boolean)
        .sort();
    const lean = await loadedBy(["run", "read_file", "--input", '{"path":"a.txt"}']);
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

  it("yargs reads every line: an unknown flag is a usage error, `--trust false` a value", async () => {
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
