import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, cli, jsonLines, lacksLandlock, REPO, tempRoot } from "../cli-harness.js";

// Attacks on the lsp family through the built CLI: a repo that plants its own language server (a
// tsserver.js, a node_modules/.bin/typescript-language-server, a PATH entry into the repo) must not
// get it run unless the project is trusted; servers get the shell's scrubbed environment and
// sandbox; a rename's every file passes the write policy, or nothing is written.

const fromLsp = createRequire(path.join(REPO, "packages/lsp/package.json"));
const REAL_TSSERVER = fromLsp.resolve("typescript/lib/tsserver.js");
const REAL_TSLS = path.resolve(
  path.dirname(fromLsp.resolve("typescript-language-server/package.json")),
  (
    JSON.parse(readFileSync(fromLsp.resolve("typescript-language-server/package.json"), "utf8")) as {
      bin: Record<string, string>;
    }
  ).bin["typescript-language-server"] as string,
);
const SCRIPTED = path.join(REPO, "packages/lsp/src/__fixtures__/scripted-server.mjs");
const SLOW = 180_000;

const cleanup: string[] = [];
let userDir: string;
beforeAll(() => {
  assertBuilt();
  // An empty user config folder: no trust list of the developer's leaks into these runs.
  userDir = tempRoot("tb-lsp-user-");
  cleanup.push(userDir);
});
afterAll(() => {
  for (const dir of cleanup) rmSync(dir, { recursive: true, force: true });
});

function write(root: string, rel: string, text: string, mode?: number): void {
  const file = path.join(root, rel);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
  if (mode !== undefined) chmodSync(file, mode);
}

const TSCONFIG = JSON.stringify({
  compilerOptions: {
    strict: true,
    module: "NodeNext",
    moduleResolution: "NodeNext",
    noEmit: true,
    types: [],
  },
  include: ["src", "other"],
});

/**
 * A project that plants a tsserver.js and a typescript-language-server, each leaving a marker in
 * `.marks/` (inside the root, writable under the sandbox) and then handing over to the real one.
 */
function hostileTsProject(): string {
  const root = tempRoot("tb-lsp-hostile-");
  cleanup.push(root);
  write(root, "tsconfig.json", TSCONFIG);
  write(root, "src/a.ts", 'export function greet(name: string): string {\n  return "hi " + name;\n}\n');
  mkdirSync(path.join(root, ".marks"));
  write(
    root,
    "node_modules/typescript/package.json",
    JSON.stringify({ name: "typescript", version: "5.9.3" }),
  );
  write(
    root,
    "node_modules/typescript/lib/tsserver.js",
    `require("node:fs").writeFileSync(${JSON.stringify(path.join(root, ".marks/tsserver"))}, "ran");\nrequire(${JSON.stringify(REAL_TSSERVER)});\n`,
  );
  write(
    root,
    "node_modules/.bin/typescript-language-server",
    `#!${process.execPath}\nrequire("node:fs").writeFileSync(${JSON.stringify(path.join(root, ".marks/tsls"))}, "ran");\nimport(${JSON.stringify(REAL_TSLS)});\n`,
    0o755,
  );
  return root;
}

const marks = (root: string) => ["tsserver", "tsls"].filter((m) => existsSync(path.join(root, ".marks", m)));

function env(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return { TOOLBELT_CONFIG_DIR: userDir, TOOLBELT_TRUST: "0", TOOLBELT_LSP_FALLBACK: "0", ...extra };
}

async function symbols(
  root: string,
  file: string,
  options: { env?: NodeJS.ProcessEnv; args?: string[] } = {},
) {
  const out = await cli(
    [
      "run",
      "lsp_document_symbols",
      "--root",
      root,
      "--format",
      "json",
      "--input",
      JSON.stringify({ path: file }),
      ...(options.args ?? []),
    ],
    { env: env(options.env), timeoutMs: SLOW },
  );
  return { ...out, payload: JSON.parse(out.stdout || "null") as Record<string, unknown> | null };
}

describe("language servers a repo plants", { timeout: SLOW }, () => {
  it("an untrusted project's tsserver.js and node_modules/.bin server never run; toolbelt's own server answers", async () => {
    const root = hostileTsProject();
    const out = await symbols(root, "src/a.ts");
    expect(out.payload, out.stderr).toMatchObject({ kind: "lsp_document_symbols" });
    expect(JSON.stringify(out.payload)).toContain("greet");
    expect(marks(root)).toEqual([]);
  });

  it("a trusted project (TOOLBELT_TRUST=1) runs its own typescript-language-server and tsserver.js", async () => {
    const root = hostileTsProject();
    const out = await symbols(root, "src/a.ts", { env: { TOOLBELT_TRUST: "1" } });
    expect(out.payload, out.stderr).toMatchObject({ kind: "lsp_document_symbols" });
    expect(JSON.stringify(out.payload)).toContain("greet");
    expect(marks(root)).toEqual(["tsserver", "tsls"]);
  });

  it("a PATH entry into the untrusted root (relative or absolute) does not make a repo file the configured server", async () => {
    const root = tempRoot("tb-lsp-path-");
    cleanup.push(root);
    write(root, "notes.txt", "hello\n");
    const evil = `#!/bin/sh\necho ran > "${root}/.evil-ran"\n`;
    write(root, "node_modules/.bin/evil-ls", evil, 0o755);
    write(root, "evil-ls", evil, 0o755);
    const config = path.join(userDir, "evil-ls.json");
    writeFileSync(config, JSON.stringify({ lsp: { evil: { command: "evil-ls", extensions: [".txt"] } } }));
    for (const entry of ["node_modules/.bin", ".", path.join(root, "node_modules/.bin")]) {
      const out = await symbols(root, "notes.txt", {
        args: ["--config", config],
        env: { PATH: `${entry}${path.delimiter}${process.env.PATH}` },
      });
      expect(out.payload).toMatchObject({ kind: "error", code: "EUNAVAILABLE" });
      expect(String(out.payload?.message)).toContain("evil-ls not found on PATH");
      expect(existsSync(path.join(root, ".evil-ran"))).toBe(false);
    }
  });
});

describe("what a language server is given", { timeout: SLOW }, () => {
  function scriptedProject(tryWrite?: string): { root: string; config: string; dump: string } {
    const root = tempRoot("tb-lsp-env-");
    cleanup.push(root);
    write(root, "notes.txt", "hello\n");
    const dump = path.join(root, "env.json");
    const config = path.join(root, "..", `${path.basename(root)}.config.json`);
    cleanup.push(config);
    writeFileSync(
      config,
      JSON.stringify({
        lsp: {
          scripted: {
            command: process.execPath,
            args: [SCRIPTED],
            extensions: [".txt"],
            env: { SCRIPTED_ENV_DUMP: dump, ...(tryWrite ? { SCRIPTED_TRY_WRITE: tryWrite } : {}) },
          },
        },
      }),
    );
    return { root, config, dump };
  }

  it("the same scrubbed environment as shell commands: no tokens, keys or toolbelt's own settings", async () => {
    const { root, config, dump } = scriptedProject();
    const out = await symbols(root, "notes.txt", {
      args: ["--config", config],
      env: {
        GITHUB_TOKEN: "leak-1",
        AWS_SECRET_ACCESS_KEY: "leak-2",
        OPENAI_API_KEY: "leak-3",
        TOOLBELT_TOKEN: "leak-4",
        LSP_TRUST_PLAIN_VARIABLE: "kept",
      },
    });
    expect(out.payload, out.stderr).toMatchObject({ kind: "lsp_document_symbols" });
    const seen = JSON.parse(readFileSync(dump, "utf8")) as Record<string, string>;
    expect(JSON.stringify(seen)).not.toMatch(/leak-\d/);
    expect(seen.LSP_TRUST_PLAIN_VARIABLE).toBe("kept");
    expect(seen.SCRIPTED_ENV_DUMP).toBe(dump);
  });

  it.skipIf(lacksLandlock())(
    "runs under the shell's Landlock sandbox: it cannot write outside the root and its TMPDIR",
    async () => {
      const outside = tempRoot("tb-lsp-outside-");
      cleanup.push(outside);
      const target = path.join(outside, "planted");
      const { root, config, dump } = scriptedProject(target);
      // `exec` loads every family; `run` loads only the tool's own, so no shell wrapper is registered there.
      const out = await cli(["exec", "--root", root, "--config", config], {
        input: `${JSON.stringify({ id: "1", tool: "lsp_document_symbols", input: { path: "notes.txt" } })}\n`,
        env: env(),
        timeoutMs: SLOW,
      });
      expect(jsonLines(out.stdout)[0]?.result, out.stderr).toMatchObject({ kind: "lsp_document_symbols" });
      expect(readFileSync(`${dump}.write`, "utf8")).toMatch(/^E(ACCES|PERM)$/);
      expect(existsSync(target)).toBe(false);
    },
  );
});

describe("lsp_rename through the write policy (real typescript-language-server)", { timeout: SLOW }, () => {
  it("refuses a rename reaching outside the allowlist (EDENIED) or past fileWriteMaxBytes (ETOO_LARGE); nothing is written", async () => {
    const root = tempRoot("tb-lsp-rename-");
    cleanup.push(root);
    const files: Record<string, string> = {
      "tsconfig.json": TSCONFIG,
      "src/a.ts": "export function foo(): number {\n  return 1;\n}\n",
      "other/b.ts": 'import { foo } from "../src/a.js";\nexport const x = foo();\n',
      "src/c.ts": "export const bar = 1;\n",
      "src/big.ts": `import { bar } from "./c.js";\n${Array.from({ length: 12 }, (_, i) => `export const v${i} = bar + ${i};\n`).join("")}`,
    };
    for (const [rel, text] of Object.entries(files)) write(root, rel, text);
    const limit = Buffer.byteLength(files["src/big.ts"] as string) + 40;
    const config = path.join(userDir, "rename-policy.json");
    writeFileSync(
      config,
      JSON.stringify({
        tools: { lsp_rename: { allowlist: ["^src/"] } },
        limits: { fileWriteMaxBytes: limit },
      }),
    );
    const calls = [
      {
        id: "allowlist",
        tool: "lsp_rename",
        input: { path: "src/a.ts", symbol: "foo", new_name: "renamedFoo", apply: true },
      },
      {
        id: "size",
        tool: "lsp_rename",
        input: { path: "src/c.ts", symbol: "bar", new_name: "barWithAMuchLongerNameThanBefore", apply: true },
      },
    ];
    const out = await cli(["exec", "--root", root, "--config", config], {
      input: `${calls.map((c) => JSON.stringify(c)).join("\n")}\n`,
      env: env(),
      timeoutMs: SLOW,
    });
    const results = Object.fromEntries(
      jsonLines(out.stdout).map((l) => [l.id, l.result as Record<string, unknown>]),
    );
    expect(results.allowlist, out.stderr).toMatchObject({ kind: "error", code: "EDENIED" });
    expect(String(results.allowlist?.message)).toContain("other/b.ts is not in tools.lsp_rename.allowlist");
    expect(results.size, out.stderr).toMatchObject({ kind: "error", code: "ETOO_LARGE", path: "src/big.ts" });
    for (const [rel, text] of Object.entries(files))
      expect(readFileSync(path.join(root, rel), "utf8")).toBe(text);
  });
});
