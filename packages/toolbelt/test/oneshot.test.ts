import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, type CliResult, cli, REPO, tempRoot, writeLoadRecorder } from "./cli-harness.js";

// The one-shot bundle (dist/oneshot.cjs, src/oneshot.ts): a plain `run` of a files-family tool
// with no config anywhere runs from the CLI's own code bundled as CommonJS and compiled from V8's
// code cache. It must print exactly what the usual path prints, and leave to the usual path every
// line it might not serve the same way. Its speed is measured in benchmarks/startup, not here.

const DIST = path.join(REPO, "packages/toolbelt/dist");
const CJS_BIN = path.join(REPO, "packages/toolbelt/bin/toolbelt.js");
const CORE_INDEX = /\/(@toolbelt\/|packages\/)core\/dist\/index\.js$/;

let env: NodeJS.ProcessEnv;
let hook: string;
let logDir: string;
let runs = 0;
let scratch: string;

beforeAll(() => {
  assertBuilt();
  env = { TOOLBELT_CONFIG_DIR: tempRoot("tb-oneshot-user-"), TOOLBELT_TRUST: "", XDG_CONFIG_HOME: "" };
  const dir = tempRoot("tb-oneshot-hook-");
  logDir = dir;
  hook = writeLoadRecorder(dir);

  // A copy of dist inside the package (so the bundle finds the workspace's packages from it) for the
  // tests that change a file of it.
  scratch = path.join(REPO, "packages/toolbelt", `.oneshot-test-${process.pid}`);
  mkdirSync(scratch, { recursive: true });
  for (const f of ["oneshot.cjs", "oneshot.cjs.cache", "oneshot.json", "tool-manifest.json"])
    copyFileSync(path.join(DIST, f), path.join(scratch, f));
});

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** A project with a few files, fresh for each run that may write. */
function project(): string {
  const root = tempRoot("tb-oneshot-proj-");
  mkdirSync(path.join(root, "src"));
  writeFileSync(path.join(root, "a.txt"), "one\ntwo\nthree\n");
  writeFileSync(path.join(root, "src", "b.ts"), "export const b = 1;\n");
  return root;
}

/** One run through dist/bin.js with the resolve hook: what it printed and whether core's index loaded. */
async function traced(
  args: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; input?: string },
): Promise<{ result: CliResult; usualPath: boolean }> {
  // One log per run: runs go side by side.
  const loadedLog = path.join(logDir, `loaded-${++runs}.txt`);
  writeFileSync(loadedLog, "");
  const result = await cli(args, {
    cwd: options.cwd,
    runtime: [process.execPath, "--import", hook],
    env: { ...env, ...options.env, TB_LOADED_LOG: loadedLog },
    ...(options.input !== undefined ? { input: options.input } : {}),
    timeoutMs: 60_000,
  });
  const urls = readFileSync(loadedLog, "utf8").split("\n");
  return { result, usualPath: urls.some((u) => CORE_INDEX.test(u)) };
}

/** The same run with the bundle and without it (TOOLBELT_NO_ONESHOT=1), each in a fresh project. */
async function bothWays(args: string[], input?: string) {
  const [bundled, usual] = await Promise.all(
    [{}, { TOOLBELT_NO_ONESHOT: "1" }].map((extra) =>
      traced(args, { cwd: project(), env: extra, ...(input !== undefined ? { input } : {}) }),
    ),
  );
  return {
    bundled: bundled as Awaited<ReturnType<typeof traced>>,
    usual: usual as Awaited<ReturnType<typeof traced>>,
  };
}

const served: Array<[string, string[], string?]> = [
  ["read_file", ["run", "read_file", "--input", '{"path":"a.txt","offset":2,"limit":1}']],
  [
    "read_file of a missing file (error payload, exit 1)",
    ["run", "read_file", "--input", '{"path":"nope.txt"}'],
  ],
  ["read_file with a bad input (EINVAL_INPUT)", ["run", "read_file", "--input", '{"path":7}']],
  ["read_file outside the root", ["run", "read_file", "--input", '{"path":"../../etc/passwd"}']],
  ["read_file, text format", ["run", "read_file", "--format", "text", "--input", '{"path":"a.txt"}']],
  ["read_file, input from stdin", ["run", "read_file", "--input", "-"], '{"path":"src/b.ts"}'],
  ["read_file, no input at all", ["run", "read_file"]],
  ["write_file", ["run", "write_file", "--input", '{"path":"new/c.txt","content":"made\\n"}']],
  ["list_dir", ["run", "list_dir", "--input", '{"path":"."}']],
  ["list_files", ["run", "list_files", "--input", '{"pattern":"**/*.ts"}']],
  [
    "aider_list_dir_tool (mewbo profile)",
    ["run", "aider_list_dir_tool", "--profile", "mewbo", "--input", "{}"],
  ],
  ["a tool the profile does not bind", ["run", "list_dir", "--profile", "mewbo", "--input", "{}"]],
];

describe("the one-shot bundle", () => {
  it.each(served)("serves %s exactly as the usual path does", async (_what, args, input) => {
    const { bundled, usual } = await bothWays(args, input);
    expect(bundled.usualPath).toBe(false);
    expect(usual.usualPath).toBe(true);
    expect(bundled.result).toEqual(usual.result);
  });

  it("write_file from the bundle writes the same file", async () => {
    const root = project();
    const r = await cli(["run", "write_file", "--input", '{"path":"new/c.txt","content":"made\\n"}'], {
      cwd: root,
      env,
    });
    expect(r.code).toBe(0);
    expect(readFileSync(path.join(root, "new", "c.txt"), "utf8")).toBe("made\n");
  });

  // Each of these might need what the bundle leaves out (another family, a plugin, the terminal
  // client, yargs' messages) or answers from a config: the usual path takes them.
  const declined: Array<[string, string[], (root: string) => NodeJS.ProcessEnv | undefined]> = [
    [
      "search_files (loads the shell family's sandbox)",
      ["run", "search_files", "--input", '{"query":"one"}'],
      () => undefined,
    ],
    ["a tool of another family", ["run", "update_todos", "--input", '{"todos":[]}'], () => undefined],
    [
      "a project config",
      ["run", "read_file", "--input", '{"path":"a.txt"}'],
      (root) => {
        mkdirSync(path.join(root, "configs"));
        writeFileSync(path.join(root, "configs", "app.json"), "{}");
        return undefined;
      },
    ],
    [
      "a user config",
      ["run", "read_file", "--input", '{"path":"a.txt"}'],
      () => {
        const user = tempRoot("tb-oneshot-user-");
        writeFileSync(path.join(user, "config.json"), "{}");
        return { TOOLBELT_CONFIG_DIR: user };
      },
    ],
    [
      "--config",
      ["run", "read_file", "--input", '{"path":"a.txt"}', "--config", "/dev/null/x.json"],
      () => undefined,
    ],
    ["--interactive", ["run", "read_file", "--interactive", "--input", '{"path":"a.txt"}'], () => undefined],
    ["a line for yargs", ["run", "read_file", "-i", "x"], () => undefined],
    [
      "TOOLBELT_NO_MANIFEST=1",
      ["run", "read_file", "--input", '{"path":"a.txt"}'],
      () => ({ TOOLBELT_NO_MANIFEST: "1" }),
    ],
  ];
  it.each(declined)("leaves %s to the usual path", async (_what, args, setUp) => {
    const root = project();
    const extra = setUp(root) ?? {};
    const { usualPath, result } = await traced(args, { cwd: root, env: extra });
    expect(usualPath).toBe(true);
    const live = await cli(args, {
      cwd: root,
      env: { ...env, ...extra, TOOLBELT_NO_ONESHOT: "1" },
      timeoutMs: 60_000,
    });
    expect(result).toEqual(live);
  });

  it("the command npm links (bin/toolbelt.js, CommonJS) serves the bundle and hands everything else over", () => {
    const root = project();
    const run = (args: string[], extra: NodeJS.ProcessEnv = {}) =>
      spawnSync(process.execPath, [CJS_BIN, ...args], {
        cwd: root,
        env: { ...process.env, ...env, ...extra },
        input: "",
        encoding: "utf8",
      });
    const read = ["run", "read_file", "--input", '{"path":"a.txt"}'];
    const bundled = run(read);
    const usual = run(read, { TOOLBELT_NO_ONESHOT: "1" });
    expect(bundled.status).toBe(0);
    expect(JSON.parse(bundled.stdout)).toMatchObject({ kind: "file_content", path: "a.txt" });
    expect([bundled.stdout, bundled.stderr]).toEqual([usual.stdout, usual.stderr]);
    const missing = run(["run", "read_file", "--input", '{"path":"gone"}']);
    expect(missing.status).toBe(1);
    expect(missing.stdout).toBe(
      run(["run", "read_file", "--input", '{"path":"gone"}'], { TOOLBELT_NO_ONESHOT: "1" }).stdout,
    );
    // Not served: the ES module CLI answers, once.
    const search = run(["run", "search_files", "--input", '{"query":"two"}']);
    expect(search.status).toBe(0);
    expect(search.stdout).toContain("a.txt");
    expect(run(["--version"]).stdout).toMatch(/^\d+\.\d+\.\d+/);
    const usage = run(["run"]);
    expect(usage.status).toBe(2);
  });

  it("doctor reports the bundle and that this Node takes its code cache", async () => {
    const r = await cli(["doctor", "--format", "json"], { cwd: project(), env, timeoutMs: 60_000 });
    const check = (JSON.parse(r.stdout) as Array<Record<string, string>>).find(
      (c) => c.name === "one-shot run",
    );
    expect(check).toMatchObject({ family: "core", status: "ok" });
    expect(check?.detail).toContain("read_file");
    expect(check?.detail).toContain("and its code cache");
  });
});

describe("loading the bundle", () => {
  const load = async () =>
    (await import(pathToFileURL(path.join(DIST, "oneshot.js")).href)) as typeof import("../src/oneshot.js");

  it("takes the build's code cache, and runs without it when V8 refuses one", async () => {
    const { loadOneShot } = await load();
    expect(loadOneShot(DIST).cache).toBe("accepted");
    // A cache of another source (here: garbage of another length) is refused, not run.
    writeFileSync(path.join(scratch, "oneshot.cjs.cache"), Buffer.alloc(4096, 7));
    const loaded = loadOneShot(scratch);
    expect(loaded.cache).toBe("rejected");
    expect(typeof loaded.main).toBe("function");
    copyFileSync(path.join(DIST, "oneshot.cjs.cache"), path.join(scratch, "oneshot.cjs.cache"));
  });

  it("compiles the gate from its own code cache, loaded as bin/toolbelt.js loads it", () => {
    const require = createRequire(import.meta.url);
    const { compileCommonJs } = require(
      path.join(DIST, "oneshot-load.cjs"),
    ) as typeof import("../src/oneshot-load.js");
    const gate = compileCommonJs(path.join(DIST, "oneshot-gate.cjs"));
    expect(gate.cache).toBe("accepted");
    expect(typeof gate.exports.oneShotServes).toBe("function");
    // Without one (an older build, a deleted file) it compiles from source and answers the same.
    const plain = compileCommonJs(path.join(DIST, "oneshot-gate.cjs"), { cache: false });
    expect(plain.cache).toBe("none");
    const line = ["run", "shell", "--input", "{}"];
    expect((plain.exports.whyNotOneShot as (a: string[]) => string)(line)).toBe(
      (gate.exports.whyNotOneShot as (a: string[]) => string)(line),
    );
  });

  it("declines when the installed packages are not the ones the bundle was built from", async () => {
    const { whyNotOneShot } = await load();
    const argv = ["run", "read_file", "--input", "{}"];
    const root = project();
    expect(
      whyNotOneShot(["run", "read_file", "--root", root, "--input", "{}"], env, scratch),
    ).toBeUndefined();
    const index = JSON.parse(readFileSync(path.join(scratch, "oneshot.json"), "utf8"));
    index.packages["@toolbelt/files"] = "0.0.0:1";
    writeFileSync(path.join(scratch, "oneshot.json"), JSON.stringify(index));
    expect(whyNotOneShot(["run", "read_file", "--root", root, "--input", "{}"], env, scratch)).toMatch(
      /packages changed/,
    );
    rmSync(path.join(scratch, "oneshot.json"));
    expect(whyNotOneShot(argv, env, scratch)).toMatch(/no oneshot\.json/);
    copyFileSync(path.join(DIST, "oneshot.json"), path.join(scratch, "oneshot.json"));
  });

  it("never loads a module from outside itself: a plugin named by a config the gate did not see fails closed", () => {
    // The gate saw no config; one that appears before the bundle reads config (here: given straight
    // to the bundle's main, trusted, naming a plugin) must not import the plugin into the bundle's
    // copy of core.
    const root = project();
    const marker = path.join(root, "imported");
    writeFileSync(
      path.join(root, "plugin.mjs"),
      `import { writeFileSync } from "node:fs";\nwriteFileSync(${JSON.stringify(marker)}, "yes");\nexport default { name: "p", apiVersion: 1, tools: [] };\n`,
    );
    mkdirSync(path.join(root, "configs"));
    writeFileSync(path.join(root, "configs", "app.json"), JSON.stringify({ plugins: ["./plugin.mjs"] }));
    const script = `const { loadOneShot } = await import(${JSON.stringify(pathToFileURL(path.join(DIST, "oneshot.js")).href)});
process.exitCode = await loadOneShot().main(process.argv.slice(1));`;
    const r = spawnSync(
      process.execPath,
      ["--input-type=module", "-e", script, "run", "read_file", "--trust", "--input", '{"path":"a.txt"}'],
      { cwd: root, env: { ...process.env, ...env }, encoding: "utf8" },
    );
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("EPLUGIN");
    expect(existsSync(marker)).toBe(false);
    // The usual path loads it (the project is trusted on the command line).
    const usual = spawnSync(
      process.execPath,
      [CJS_BIN, "run", "read_file", "--trust", "--input", '{"path":"a.txt"}'],
      {
        cwd: root,
        env: { ...process.env, ...env },
        encoding: "utf8",
      },
    );
    expect(usual.status).toBe(0);
    expect(existsSync(marker)).toBe(true);
  });
});

describe("standard output written through the descriptor (src/stdio.ts)", () => {
  // 3,000 lines of 80 characters: an answer of ~260 KB, four times what a pipe holds.
  function bigProject(): string {
    const root = tempRoot("tb-oneshot-big-");
    writeFileSync(
      path.join(root, "big.txt"),
      Array.from({ length: 3000 }, (_, i) => `${String(i + 1).padStart(6, "0")} ${"x".repeat(73)}`).join(
        "\n",
      ),
    );
    return root;
  }
  const read = ["run", "read_file", "--input", '{"path":"big.txt"}'];

  it("a reader that waits before reading still gets every byte, in order, from either path", async () => {
    const root = bigProject();
    // Made first, process.stdout leaves the pipe non-blocking (libuv): the descriptor then refuses a
    // write a full pipe cannot take (EAGAIN), and the rest must go through the stream.
    const nonBlocking = path.join(root, "non-blocking.cjs");
    writeFileSync(nonBlocking, `process.stdout;\nrequire(${JSON.stringify(CJS_BIN)});\n`);
    const ways: Array<[string, NodeJS.ProcessEnv]> = [
      [CJS_BIN, {}],
      [CJS_BIN, { TOOLBELT_NO_ONESHOT: "1" }],
      [nonBlocking, {}],
      [nonBlocking, { TOOLBELT_NO_ONESHOT: "1" }],
    ];
    for (const [bin, extra] of ways) {
      const child = spawn(process.execPath, [bin, ...read], {
        cwd: root,
        env: { ...process.env, ...env, ...extra },
        stdio: ["ignore", "pipe", "pipe"],
      });
      child.stdout.pause();
      await new Promise((resolve) => setTimeout(resolve, 700));
      const chunks: Buffer[] = [];
      child.stdout.on("data", (c: Buffer) => chunks.push(c));
      child.stdout.resume();
      const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
      expect(code).toBe(0);
      const out = Buffer.concat(chunks).toString("utf8");
      expect(out.endsWith("}\n")).toBe(true);
      const payload = JSON.parse(out) as { kind: string; content: string; end_line: number };
      expect(payload.kind).toBe("file_content");
      // The numbered lines read (then, past the byte limit, the note saying where to go on).
      const lines = payload.content.split("\n").slice(0, payload.end_line);
      expect(payload.end_line).toBeGreaterThan(2000);
      for (const [i, line] of lines.entries()) expect(line).toContain(`${String(i + 1).padStart(6, "0")} x`);
    }
  });

  it("a reader that closes the pipe early ends the run quietly, exit 0", () => {
    const root = bigProject();
    for (const extra of ["", "TOOLBELT_NO_ONESHOT=1 "]) {
      const r = spawnSync(
        "sh",
        [
          "-c",
          `{ ${extra}"$NODE" "$BIN" ${read.map((a) => `'${a}'`).join(" ")} 2>err.txt; echo $? > rc.txt; } | head -c 10 > /dev/null; cat err.txt rc.txt`,
        ],
        {
          cwd: root,
          env: { ...process.env, ...env, NODE: process.execPath, BIN: CJS_BIN },
          encoding: "utf8",
        },
      );
      expect(r.stdout).not.toMatch(/EPIPE|Error|at /);
      expect(r.stdout.trim()).toBe("0");
    }
  });
});

describe("what a one-shot read loads of Node", () => {
  it("none of the built-in modules it does not use: crypto, net, tty, streams, perf_hooks, workers, child processes", () => {
    const root = project();
    const list = path.join(tempRoot("tb-oneshot-builtins-"), "loaded.txt");
    const wrapper = path.join(path.dirname(list), "wrapper.cjs");
    writeFileSync(
      wrapper,
      `process.on("exit", () => require("node:fs").writeFileSync(${JSON.stringify(list)}, process.moduleLoadList.join("\\n")));\nrequire(${JSON.stringify(CJS_BIN)});\n`,
    );
    const r = spawnSync(process.execPath, [wrapper, "run", "read_file", "--input", '{"path":"a.txt"}'], {
      cwd: root,
      env: { ...process.env, ...env },
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    });
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).kind).toBe("file_content");
    const loaded = readFileSync(list, "utf8").split("\n");
    // Loaded by the bundle: the read really ran from it.
    expect(loaded).toContain("NativeModule vm");
    for (const unused of [
      "NativeModule crypto",
      "NativeModule net",
      "NativeModule tty",
      "NativeModule stream",
      "NativeModule perf_hooks",
      "NativeModule worker_threads",
      "NativeModule child_process",
      "NativeModule internal/fs/promises",
    ])
      expect(loaded, unused).not.toContain(unused);
  });
});
