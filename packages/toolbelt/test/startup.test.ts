import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, cli, tempRoot } from "./cli-harness.js";

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
  const hooks = path.join(dir, "hooks.mjs");
  writeFileSync(
    hooks,
    `import { appendFileSync } from "node:fs";
export async function resolve(specifier, context, next) {
  const out = await next(specifier, context);
  if (process.env.TB_LOADED_LOG) appendFileSync(process.env.TB_LOADED_LOG, out.url + "\\n");
  return out;
}\n`,
  );
  hook = path.join(dir, "register.mjs");
  writeFileSync(
    hook,
    `import { register } from "node:module";\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`,
  );
});

/** The module URLs a CLI run loaded. */
async function loadedBy(args: string[]): Promise<{ urls: string[]; stdout: string }> {
  writeFileSync(loadedLog, "");
  const r = await cli(args, {
    cwd: root,
    runtime: [process.execPath, "--import", hook],
    env: { ...env, TB_LOADED_LOG: loadedLog },
    timeoutMs: 60_000,
  });
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  return { urls: readFileSync(loadedLog, "utf8").split("\n").filter(Boolean), stdout: r.stdout };
}

const FAMILY_ENTRIES = ["files", "edit", "shell", "lsp", "ui", "projects", "mcp"].map((f) => [
  f,
  new RegExp(`/(@toolbelt/|packages/)${f}/dist/index\\.js$`),
]) as Array<[string, RegExp]>;

function familiesLoaded(urls: string[]): string[] {
  return FAMILY_ENTRIES.filter(([, re]) => urls.some((u) => re.test(u))).map(([f]) => f);
}

describe("toolbelt tools from the manifest", () => {
  it.each(PROFILES)(
    "prints exactly what a live session binds, every format (profile %s)",
    async (profile) => {
      const runs = FORMATS.flatMap((format) => [
        cli(["tools", "--format", format, "--profile", profile], { cwd: root, env, timeoutMs: 60_000 }),
        cli(["tools", "--format", format, "--profile", profile], {
          cwd: root,
          env: { ...env, TOOLBELT_NO_MANIFEST: "1" },
          timeoutMs: 60_000,
        }),
      ]);
      const results = await Promise.all(runs);
      for (let i = 0; i < results.length; i += 2) {
        const [fromManifest, live] = [results[i], results[i + 1]];
        expect(live?.code).toBe(0);
        expect(live?.stdout.length).toBeGreaterThan(0);
        expect(fromManifest).toEqual(live);
      }
    },
  );

  it("run TOOL --help from the manifest matches the live session's", async () => {
    for (const [profile, tool] of [
      ["default", "read_file"],
      ["mewbo", "aider_shell_tool"],
    ] as const) {
      const args = ["run", tool, "--help", "--profile", profile];
      const [fromManifest, live] = await Promise.all([
        cli(args, { cwd: root, env }),
        cli(args, { cwd: root, env: { ...env, TOOLBELT_NO_MANIFEST: "1" } }),
      ]);
      expect(live.code).toBe(0);
      expect(live.stdout).toContain(`toolbelt run ${tool} --input JSON`);
      expect(fromManifest).toEqual(live);
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

describe("one-shot run", () => {
  it("`run read_file` loads the files family only, without yargs or the TypeScript compiler", async () => {
    const { urls, stdout } = await loadedBy(["run", "read_file", "--input", '{"path":"a.txt"}']);
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
    const lean = await loadedBy(["run", "read_file", "--input", '{"path":"a.txt"}']);
    // mcp's stays: the family gate needs it, and it reports an untrusted project's .mcp.json.
    expect(contribsOf(lean.urls)).toEqual(["files", "mcp"]);
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
