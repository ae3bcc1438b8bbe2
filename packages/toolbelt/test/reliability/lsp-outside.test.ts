import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lacks } from "../../../../test-support/capability.js";
import { assertBuilt, cli, jsonLines, lacksLandlock, REPO, tempRoot } from "../cli-harness.js";

// A checkout nobody trusts reaches files outside its root through the lsp tools: a symlinked folder
// (`lib -> /elsewhere`) whose files a server names, and a tsconfig that points the in-process ts-morph
// fallback outside (`include`, `files`, `paths`, `rootDirs`, `extends`, a triple-slash reference). The
// outside secrets must appear in no answer — definitions, references, hover, workspace symbols,
// diagnostics — from the fallback or the real server; a place inside the root keeps its line text.

const SLOW = 180_000;
const SCRIPTED = path.join(REPO, "packages/lsp/src/__fixtures__/scripted-server.mjs");
const tag = randomBytes(6).toString("hex");
const SECRET = `hunter2-outside-${tag}`;
const API_KEY = `sk-outside-${tag}`;
const GLOBAL_KEY = `sk-outside-global-${tag}`;
const BASE_KEY = `sk-outside-base-${tag}`;
const SECRETS = [SECRET, API_KEY, GLOBAL_KEY, BASE_KEY];

const cleanup: string[] = [];
let userDir: string;
let workspace: string;
beforeAll(() => {
  assertBuilt();
  // An empty user config folder: no trust list or config of the developer's leaks into these runs.
  userDir = tempRoot("tb-lsp-outside-user-");
  workspace = tempRoot("tb-lsp-outside-");
  cleanup.push(userDir, workspace);
});
afterAll(() => {
  for (const dir of cleanup) rmSync(dir, { recursive: true, force: true });
});

function write(file: string, text: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
}

/** The project whose `lib/` is a symlink to a folder outside it (the reported case). */
function symlinkedProject(name: string): string {
  const root = path.join(workspace, `linked-${name}`);
  const outside = path.join(workspace, "linked-outside");
  write(path.join(outside, "secret.ts"), `export const SECRET = "${SECRET}";\n`);
  mkdirSync(root, { recursive: true });
  symlinkSync(outside, path.join(root, "lib"));
  write(
    path.join(root, "main.ts"),
    [
      'import { SECRET } from "./lib/secret";',
      'import { inside } from "./src/inside";',
      "console.log(SECRET, inside);",
      "export const asNumber: number = SECRET;",
      "",
    ].join("\n"),
  );
  write(path.join(root, "src/inside.ts"), 'export const inside = "inside-the-root";\n');
  write(
    path.join(root, "tsconfig.json"),
    JSON.stringify({ compilerOptions: { preserveSymlinks: true, strict: true, module: "nodenext" } }),
  );
  return root;
}

/** A project whose tsconfig pulls a sibling checkout's sources in, every way a tsconfig can. */
function includingProject(name: string): string {
  const root = path.join(workspace, `proj-${name}`);
  const other = path.join(workspace, "other");
  write(path.join(other, "src/keys.ts"), `export const API_KEY = "${API_KEY}";\n`);
  write(path.join(other, "src/global.ts"), `const GLOBAL_KEY = "${GLOBAL_KEY}";\n`);
  write(path.join(other, "types/leak/index.d.ts"), `declare const BASE_KEY: "${BASE_KEY}";\n`);
  write(
    path.join(other, "tsconfig.base.json"),
    JSON.stringify({ compilerOptions: { strict: true }, files: ["./src/keys.ts", "./src/global.ts"] }),
  );
  write(
    path.join(root, "use.ts"),
    [
      '/// <reference path="../other/src/global.ts" />',
      'import { API_KEY } from "k";',
      'import { API_KEY as viaRootDirs } from "./keys";',
      "export const key = API_KEY;",
      "export const key2: number = viaRootDirs;",
      "export const key3: number = GLOBAL_KEY;",
      "export const key4: number = BASE_KEY;",
      "",
    ].join("\n"),
  );
  write(path.join(root, "src/inside.ts"), "export function insideFn(): number {\n  return 1;\n}\n");
  write(
    path.join(root, "src/caller.ts"),
    'import { insideFn } from "./inside";\nexport const n = insideFn();\n',
  );
  write(
    path.join(root, "tsconfig.json"),
    JSON.stringify({
      extends: "../other/tsconfig.base.json",
      compilerOptions: {
        strict: true,
        module: "nodenext",
        paths: { k: ["../other/src/keys.ts"] },
        rootDirs: [".", "../other/src"],
        typeRoots: ["../other/types"],
        types: ["leak"],
      },
      include: ["*.ts", "src", "../*/src/**/*", "../other/src/**/*"],
      files: ["../other/src/keys.ts"],
    }),
  );
  return root;
}

function env(extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return { TOOLBELT_CONFIG_DIR: userDir, TOOLBELT_TRUST: "0", ...extra };
}

type Call = { tool: string; input: Record<string, unknown> };

/** Runs the calls in one `toolbelt exec` session and returns the results (and all the output). */
async function exec(root: string, calls: Call[], extraEnv: NodeJS.ProcessEnv, args: string[] = []) {
  const input = calls.map((c, i) => JSON.stringify({ id: String(i), ...c })).join("\n");
  const out = await cli(["exec", "--root", root, ...args], {
    input: `${input}\n`,
    env: env(extraEnv),
    timeoutMs: SLOW,
  });
  const results = jsonLines(out.stdout)
    .filter((l) => "result" in l)
    .map((l) => l.result as Record<string, unknown>);
  expect(results.length, out.stderr).toBe(calls.length);
  return { ...out, results };
}

function expectNoSecret(out: { stdout: string; stderr: string }): void {
  for (const secret of SECRETS) {
    expect(out.stdout).not.toContain(secret);
    expect(out.stderr).not.toContain(secret);
  }
}

const linkedCalls: Call[] = [
  { tool: "lsp_definition", input: { path: "main.ts", line: 3, symbol: "SECRET" } },
  { tool: "lsp_hover", input: { path: "main.ts", line: 3, symbol: "SECRET" } },
  { tool: "lsp_references", input: { path: "main.ts", line: 3, symbol: "SECRET" } },
  { tool: "lsp_workspace_symbols", input: { query: "SECRET" } },
  { tool: "lsp_diagnostics", input: { path: "main.ts" } },
  { tool: "lsp_definition", input: { path: "main.ts", line: 3, symbol: "inside" } },
];

const includingCalls: Call[] = [
  { tool: "lsp_definition", input: { path: "use.ts", line: 4, symbol: "API_KEY" } },
  { tool: "lsp_hover", input: { path: "use.ts", line: 4, symbol: "API_KEY" } },
  { tool: "lsp_hover", input: { path: "use.ts", line: 5, symbol: "viaRootDirs" } },
  { tool: "lsp_hover", input: { path: "use.ts", line: 6, symbol: "GLOBAL_KEY" } },
  { tool: "lsp_hover", input: { path: "use.ts", line: 7, symbol: "BASE_KEY" } },
  { tool: "lsp_references", input: { path: "use.ts", line: 4, symbol: "API_KEY" } },
  { tool: "lsp_workspace_symbols", input: { query: "API_KEY" } },
  { tool: "lsp_workspace_symbols", input: { query: "GLOBAL_KEY" } },
  { tool: "lsp_diagnostics", input: { path: "use.ts" } },
  { tool: "lsp_definition", input: { path: "src/caller.ts", line: 2, symbol: "insideFn" } },
];

type Located = { path: string; line: number; text?: string; outside_root?: boolean };

/** The last call of each list is an ordinary definition inside the root: it keeps its line text. */
function expectInsideDefinition(result: Record<string, unknown> | undefined, where: Located): void {
  expect(result).toMatchObject({ kind: "lsp_definition" });
  expect(result?.locations as Located[]).toContainEqual(expect.objectContaining(where));
}

describe("the ts-morph fallback (TOOLBELT_LSP_FALLBACK=1) stays inside the root", { timeout: SLOW }, () => {
  it("a symlinked folder leading out: no outside line, type or symbol; inside places keep their text", async () => {
    const root = symlinkedProject("fallback");
    const out = await exec(root, linkedCalls, { TOOLBELT_LSP_FALLBACK: "1" });
    expect(String(out.results[0]?.server)).toMatch(/^ts-morph fallback/);
    expectNoSecret(out);
    expectInsideDefinition(out.results.at(-1), {
      path: "src/inside.ts",
      line: 1,
      text: 'export const inside = "inside-the-root";',
    });
  });

  it("the reported command: `run lsp_definition --format text` shows no outside line", async () => {
    const root = symlinkedProject("run");
    const out = await cli(
      [
        "run",
        "lsp_definition",
        "--root",
        root,
        "--format",
        "text",
        "--input",
        JSON.stringify({ path: "main.ts", line: 3, symbol: "SECRET" }),
      ],
      { env: env({ TOOLBELT_LSP_FALLBACK: "1" }), timeoutMs: SLOW },
    );
    expect(out.stdout, out.stderr).toContain("# Server: ts-morph fallback");
    expectNoSecret(out);
  });

  it("a tsconfig pointing outside (include, files, paths, rootDirs, typeRoots, extends, a reference) finds nothing there", async () => {
    const root = includingProject("fallback");
    const out = await exec(root, includingCalls, { TOOLBELT_LSP_FALLBACK: "1" });
    expect(String(out.results[0]?.server)).toMatch(/^ts-morph fallback/);
    expectNoSecret(out);
    // No place of the sibling checkout is listed, not even as outside the root.
    const places = out.results.flatMap((r) => [...((r.locations ?? r.symbols ?? []) as Located[])]);
    expect(places.filter((p) => p.path.includes("other/"))).toEqual([]);
    expectInsideDefinition(out.results.at(-1), {
      path: "src/inside.ts",
      line: 1,
      text: "export function insideFn(): number {",
    });
  });
});

// The server's reads are confined only under Landlock.
const unsandboxed = lacksLandlock();

describe.skipIf(unsandboxed)(
  "the real server (typescript-language-server, sandboxed)",
  { timeout: SLOW },
  () => {
    it("a symlinked folder leading out", async () => {
      const root = symlinkedProject("real");
      const out = await exec(root, linkedCalls, { TOOLBELT_LSP_FALLBACK: "0" });
      expect(String(out.results[0]?.server)).toMatch(/^typescript/);
      expectNoSecret(out);
      expectInsideDefinition(out.results.at(-1), {
        path: "src/inside.ts",
        line: 1,
        text: 'export const inside = "inside-the-root";',
      });
    });

    it("a tsconfig pointing outside", async () => {
      const root = includingProject("real");
      const out = await exec(root, includingCalls, { TOOLBELT_LSP_FALLBACK: "0" });
      expect(String(out.results[0]?.server)).toMatch(/^typescript/);
      expectNoSecret(out);
      expectInsideDefinition(out.results.at(-1), {
        path: "src/inside.ts",
        line: 1,
        text: "export function insideFn(): number {",
      });
    });
  },
);

// Without mkfifo the FIFO place is left out.
const noFifo = lacks("linux", spawnSync("mkfifo", ["--version"]).error && "no mkfifo on PATH");

describe("places a server names (a user-configured server that read outside)", { timeout: SLOW }, () => {
  it("a file under a symlinked folder or a symlink out is listed outside the root without text; a FIFO does not block", async () => {
    const root = path.join(workspace, "scripted");
    const outside = path.join(workspace, "scripted-outside");
    write(path.join(outside, "secret.ts"), `export const SECRET = "${SECRET}";\n`);
    write(path.join(root, "notes.scr"), "look here\n");
    write(path.join(root, "src/inside.ts"), "export const visible = 1;\n");
    symlinkSync(outside, path.join(root, "lib"));
    symlinkSync(path.join(outside, "secret.ts"), path.join(root, "secret-link.ts"));
    symlinkSync(path.join(root, "src/inside.ts"), path.join(root, "inside-link.ts"));
    if (!noFifo) spawnSync("mkfifo", [path.join(root, "pipe.ts")]);
    const at = (file: string) => ({
      uri: pathToFileURL(path.join(root, file)).href,
      range: { start: { line: 0, character: 0 }, end: { line: 0, character: 1 } },
    });
    const locations = [
      at("lib/secret.ts"),
      at("secret-link.ts"),
      at("src/inside.ts"),
      at("inside-link.ts"),
      ...(noFifo ? [] : [at("pipe.ts")]),
    ];
    const config = path.join(workspace, "scripted.config.json");
    writeFileSync(
      config,
      JSON.stringify({
        lsp: {
          scripted: {
            command: process.execPath,
            args: [SCRIPTED],
            extensions: [".scr"],
            env: { SCRIPTED_LOCATIONS: JSON.stringify(locations) },
          },
        },
      }),
    );
    const out = await exec(
      root,
      [
        { tool: "lsp_definition", input: { path: "notes.scr", line: 1 } },
        { tool: "lsp_references", input: { path: "notes.scr", line: 1 } },
        { tool: "lsp_workspace_symbols", input: { query: "scripted", path: "notes.scr" } },
      ],
      {},
      ["--config", config],
    );
    expectNoSecret(out);
    const def = out.results[0] as { locations?: Located[] };
    expect(def.locations, out.stderr).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ path: path.join(root, "lib/secret.ts"), outside_root: true }),
        expect.objectContaining({ path: path.join(root, "secret-link.ts"), outside_root: true }),
        expect.objectContaining({ path: "src/inside.ts", text: "export const visible = 1;" }),
        expect.objectContaining({ path: "inside-link.ts", text: "export const visible = 1;" }),
      ]),
    );
    for (const place of def.locations ?? []) if (place.outside_root) expect(place.text).toBeUndefined();
    if (!noFifo) {
      const pipe = def.locations?.find((p) => p.path === "pipe.ts");
      expect(pipe).toBeDefined();
      expect(pipe?.text).toBeUndefined();
    }
    const symbols = out.results[2] as { symbols?: Located[] };
    expect(symbols.symbols?.filter((s) => s.outside_root).length).toBe(2);
  });
});
