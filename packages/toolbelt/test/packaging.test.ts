// The packages as a user gets them: every publishable package is `npm pack`ed, the tarballs are
// installed into a fresh directory outside the workspace (third-party dependencies from the npm
// registry, siblings from the tarballs), and the installed tree is used the ways the docs say:
// the `toolbelt` bin, import and require of the SDK, a third-party plugin type-checked against the
// published types, and `serve --mcp` driven by a real MCP client.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lacks } from "../../../test-support/capability.js";
import { assertBuilt, REPO, tempRoot } from "./cli-harness.js";

interface Manifest {
  name: string;
  version: string;
  private?: boolean;
  license?: string;
  main?: string;
  types?: string;
  bin?: Record<string, string>;
  exports?: Record<string, unknown>;
  publishConfig?: { access?: string };
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

interface Packed {
  dir: string;
  manifest: Manifest;
  tarball: string;
  files: string[];
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

const readJson = <T>(file: string): T => JSON.parse(readFileSync(file, "utf8")) as T;

// A test run under `npm test` inherits npm_config_* (workspace, prefix, user agent…); the install
// must behave like a user's shell in a fresh directory, so none of that leaks into it.
const cleanEnv = (): NodeJS.ProcessEnv =>
  Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k) && k !== "INIT_CWD"));

function run(command: string, args: string[], cwd: string, timeoutMs = 120_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: { ...cleanEnv(), NO_COLOR: "1" }, stdio: "pipe" });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => {
      stdout += d;
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${command} ${args.join(" ")} did not finish\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, timeoutMs);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end();
  });
}

const ok = (r: Run, what: string): Run => {
  if (r.code !== 0) throw new Error(`${what} exited ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  return r;
};

// Every non-private package of the workspaces that publish (packages/*, plugins/*).
function publishable(): Array<{ dir: string; manifest: Manifest }> {
  return ["packages", "plugins"].flatMap((parent) =>
    readdirSync(path.join(REPO, parent), { withFileTypes: true })
      .filter((e) => e.isDirectory() && existsSync(path.join(REPO, parent, e.name, "package.json")))
      .map((e) => ({
        dir: `${parent}/${e.name}`,
        manifest: readJson<Manifest>(path.join(REPO, parent, e.name, "package.json")),
      }))
      .filter((p) => !p.manifest.private),
  );
}

const PLUGIN = `import { readFile } from "node:fs/promises";
import { createToolbelt } from "@toolbelt/toolbelt";
import { definePlugin, defineTool, type Plugin, z } from "@toolbelt/core";

const wordCount = defineTool({
  name: "word_count",
  family: "words",
  access: "read",
  description: "Count the words of a text file in the project.",
  input: z.object({ path: z.string() }),
  paths: (input) => [input.path],
  async execute(input, ctx) {
    const file = ctx.resolve(input.path);
    if (!file.exists) return { kind: "error" as const, code: "ENOENT", message: \`no such file: \${file.rel}\` };
    const text = await readFile(file.abs, "utf8");
    return { kind: "word_count" as const, path: file.rel, words: text.split(/\\s+/).filter(Boolean).length };
  },
});

export const plugin: Plugin = definePlugin({ name: "words", version: "1.0.0", tools: [wordCount] });
export const open = () => createToolbelt({ root: ".", plugins: [plugin] });
`;

// The same plugin shape reading a field its schema does not have: if the published types degraded
// to \`any\` (a missing .d.ts, an exports map tsc cannot follow), this would compile.
const WRONG = `import { defineTool, z } from "@toolbelt/core";

export const wrong = defineTool({
  name: "wrong",
  family: "words",
  access: "read",
  description: "Reads a field its schema does not have.",
  input: z.object({ path: z.string() }),
  execute: (input) => ({ kind: "wrong", n: input.nosuchfield.length }),
});
`;

const ESM = `import { createToolbelt } from "@toolbelt/toolbelt";
import gitPlugin from "@toolbelt/plugin-git";
import { EventStream } from "@toolbelt/core/internal";
const session = await createToolbelt({ root: process.argv[2], plugins: [gitPlugin] });
const result = await session.call("read_file", { path: "hello.txt" });
const names = session.bind().tools.map((t) => t.name);
// The families' toolkit entry and the public one share their classes (one copy of core's code).
const oneCore = session.events instanceof EventStream;
await session.close();
console.log(JSON.stringify({ result, names, oneCore }));
`;

const CJS = `const { createToolbelt } = require("@toolbelt/toolbelt");
const core = require("@toolbelt/core");
(async () => {
  const session = await createToolbelt({ root: process.argv[2] });
  const result = await session.call("read_file", { path: "hello.txt" });
  await session.close();
  const imported = await import("@toolbelt/core");
  console.log(JSON.stringify({ result, defineTool: typeof core.defineTool, sameModule: imported === core }));
})();
`;

const MCP_CLIENT = `import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
const transport = new StdioClientTransport({
  command: process.argv[2],
  args: ["serve", "--mcp", "--root", process.argv[3]],
  stderr: "inherit",
});
const client = new Client({ name: "packaging-test", version: "1.0.0" });
await client.connect(transport);
const { tools } = await client.listTools();
const result = await client.callTool({ name: "read_file", arguments: { path: "hello.txt" } });
console.log(JSON.stringify({ tools: tools.map((t) => t.name), server: client.getServerVersion(), result }));
await client.close();
`;

// @toolbelt/ai-sdk with the `ai` its peer range resolves to: a mock model (the AI SDK's own) calls
// read_file through the adapter; what the model was sent back is printed.
const AI_SDK = `import { createToolbeltSandbox, createToolbeltTools } from "@toolbelt/ai-sdk";
import { createToolbelt } from "@toolbelt/toolbelt";
import { generateText, isStepCount } from "ai";
import { MockLanguageModelV4 } from "ai/test";
const session = await createToolbelt({ root: process.argv[2] });
const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};
const seen = [];
let turn = 0;
const model = new MockLanguageModelV4({
  doGenerate: async ({ prompt }) => {
    for (const m of prompt) if (m.role === "tool") for (const p of m.content) seen.push(p.output);
    const content = turn++ === 0
      ? [{ type: "tool-call", toolCallId: "c1", toolName: "read_file", input: JSON.stringify({ path: "hello.txt" }) }]
      : [{ type: "text", text: "done" }];
    const unified = turn === 1 ? "tool-calls" : "stop";
    return { content, finishReason: { unified, raw: undefined }, usage, warnings: [] };
  },
});
const { tools, toolApproval } = createToolbeltTools(session);
const result = await generateText({ model, tools, toolApproval, prompt: "read", stopWhen: isStepCount(3) });
const sandbox = await createToolbeltSandbox(session).readTextFile({ path: "hello.txt" });
await session.close();
console.log(JSON.stringify({ text: result.text, output: result.steps[0].toolResults[0].output, seen, sandbox }));
`;

const tsconfig = (moduleResolution: "node16" | "bundler", files: string[]) =>
  JSON.stringify({
    compilerOptions: {
      module: moduleResolution === "node16" ? "node16" : "esnext",
      moduleResolution,
      target: "es2022",
      lib: ["es2023"],
      types: ["node"],
      strict: true,
      noEmit: true,
      // The published .d.ts files themselves are checked too, not only what the plugin uses.
      skipLibCheck: false,
    },
    files,
  });

const HELLO = "hello from outside\n";

/** The README's SDK example ("1. Import the SDK into an agent loop"), exactly as a reader copies it. */
function readmeSdkExample(): string {
  const readme = readFileSync(path.join(REPO, "README.md"), "utf8");
  const section = readme.split("### 1. Import the SDK into an agent loop")[1] ?? "";
  const block = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  if (!block?.includes("createToolbelt")) throw new Error("README.md: the SDK example was not found");
  return block;
}

// Type fixtures for the published result types: built-in tools' results narrowing by kind, and a
// plugin's declared output added to ToolResultMap.
const TYPE_FIXTURES = path.join(REPO, "packages/toolbelt/test/__fixtures__/published-types");

// require() of an ES module works without a flag from Node 20.19 (and 22.12).
const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
const noRequireEsm = lacks(
  "require-esm",
  !(major > 22 || (major === 22 && minor >= 12) || (major === 20 && minor >= 19)) &&
    `Node ${process.version} has no require(esm)`,
);

// The helper is compiled at install time, which needs Linux and a C compiler.
const cannotBuildHelper =
  lacks(
    "linux",
    process.platform !== "linux" && `the sandbox helper is Linux's; this is ${process.platform}`,
  ) ||
  lacks(
    "gcc",
    ![process.env.CC, "cc", "gcc", "clang"].some(
      (cc) => cc && spawnSync(cc, ["--version"], { stdio: "ignore" }).status === 0,
    ) && "no C compiler ($CC, cc, gcc or clang)",
  );

describe("changesets", () => {
  // A changeset naming a package that is not in the workspace (the old unscoped "toolbelt") makes
  // `changeset version` fail at release time; catch it when the changeset lands.
  it("name only workspace packages", () => {
    const names = new Set(publishable().map((p) => p.manifest.name));
    const dir = path.join(REPO, ".changeset");
    const unknown: string[] = [];
    for (const file of readdirSync(dir).filter((f) => f.endsWith(".md") && f !== "README.md")) {
      const front = /^---\n([\s\S]*?)\n---/.exec(readFileSync(path.join(dir, file), "utf8"))?.[1] ?? "";
      for (const line of front.split("\n").filter((l) => l.trim())) {
        const name = /^\s*["']?([^"':]+)["']?\s*:/.exec(line)?.[1];
        if (!name || !names.has(name)) unknown.push(`${file}: ${line}`);
      }
    }
    expect(names.has("@toolbelt/toolbelt")).toBe(true);
    expect(unknown).toEqual([]);
  });
});

// Generous bounds: tsc over the published types and spawning the bin are slow on a loaded CI box.
describe("the packed packages, installed outside the workspace", { timeout: 180_000 }, () => {
  let work = "";
  let app = "";
  let project = "";
  let bin = "";
  const packed: Packed[] = [];

  beforeAll(async () => {
    assertBuilt();
    const packages = publishable();
    for (const p of packages) {
      for (const file of ["dist/index.js", "dist/index.d.ts"])
        if (!existsSync(path.join(REPO, p.dir, file)))
          throw new Error(`${p.dir}/${file} is missing: run \`npm run build\` first`);
    }
    work = tempRoot("tb-packaging-");
    expect(path.relative(REPO, work).startsWith("..")).toBe(true);
    const packDir = path.join(work, "tarballs");
    app = path.join(work, "app");
    project = path.join(work, "project");
    for (const d of [packDir, app, project]) mkdirSync(d, { recursive: true });
    writeFileSync(path.join(project, "hello.txt"), HELLO);

    const pack = ok(
      await run(
        "npm",
        [
          "pack",
          "--json",
          "--ignore-scripts",
          "--pack-destination",
          packDir,
          ...packages.flatMap((p) => ["-w", p.dir]),
        ],
        REPO,
      ),
      "npm pack",
    );
    const report = JSON.parse(pack.stdout) as Array<{
      name: string;
      filename: string;
      files: Array<{ path: string }>;
    }>;
    for (const p of packages) {
      const entry = report.find((r) => r.name === p.manifest.name);
      if (!entry) throw new Error(`npm pack did not pack ${p.manifest.name}`);
      packed.push({
        ...p,
        tarball: path.join(packDir, entry.filename),
        files: entry.files.map((f) => f.path),
      });
    }

    // @toolbelt/shell's install script compiles the Landlock helper; npm 11 wants it allowed (by
    // name from the registry, by its spec for a tarball).
    const shell = packed.find((p) => p.manifest.name === "@toolbelt/shell");
    const allowScripts = shell ? { [`file:${shell.tarball}`]: true } : {};
    const manifest = { name: "outside-app", private: true, type: "module", allowScripts };
    writeFileSync(path.join(app, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
    ok(
      await run(
        "npm",
        [
          "install",
          "--no-audit",
          "--no-fund",
          "--prefer-offline",
          ...packed.map((p) => p.tarball),
          "typescript@~5.9.3",
          "@types/node@^20.19.0",
        ],
        app,
        240_000,
      ),
      "npm install of the tarballs",
    );
    bin = path.join(app, "node_modules/.bin/toolbelt");
    writeFileSync(path.join(app, "esm.mjs"), ESM);
    writeFileSync(path.join(app, "cjs.cjs"), CJS);
    writeFileSync(path.join(app, "mcp-client.mjs"), MCP_CLIENT);
    writeFileSync(path.join(app, "ai-sdk.mjs"), AI_SDK);
    mkdirSync(path.join(app, "src"));
    writeFileSync(path.join(app, "src/plugin.ts"), PLUGIN);
    writeFileSync(path.join(app, "src/wrong.ts"), WRONG);
    writeFileSync(path.join(app, "src/readme-example.ts"), readmeSdkExample());
    for (const file of readdirSync(TYPE_FIXTURES))
      writeFileSync(path.join(app, "src", file), readFileSync(path.join(TYPE_FIXTURES, file)));
  }, 300_000);

  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it("packs every publishable package with its license, readme, dist and types", () => {
    const names = packed.map((p) => p.manifest.name).sort();
    expect(names).toContain("@toolbelt/toolbelt");
    expect(names).toContain("@toolbelt/core");
    expect(names).toContain("@toolbelt/plugin-git");
    for (const name of names) expect(name.startsWith("@toolbelt/")).toBe(true);
    for (const p of packed) {
      expect(p.files, p.manifest.name).toEqual(
        expect.arrayContaining(["LICENSE", "README.md", "package.json", "dist/index.js", "dist/index.d.ts"]),
      );
      expect(
        p.files.some((f) => f.startsWith("src/") || f.startsWith("test/")),
        p.manifest.name,
      ).toBe(false);
    }
    expect(packed.find((p) => p.manifest.name === "@toolbelt/toolbelt")?.manifest.bin).toEqual({
      toolbelt: "./bin/toolbelt.js",
    });
  });

  it("publishes manifests a registry and a resolver can use", () => {
    const versions = new Map(packed.map((p) => [p.manifest.name, p.manifest.version]));
    for (const { manifest: m } of packed) {
      expect(m.license, m.name).toBe("MIT");
      expect(m.publishConfig?.access, m.name).toBe("public");
      expect(m.main, m.name).toBe("./dist/index.js");
      expect(m.types, m.name).toBe("./dist/index.d.ts");
      expect(m.exports?.["."], m.name).toEqual({
        types: "./dist/index.d.ts",
        import: "./dist/index.js",
        default: "./dist/index.js",
      });
      // Every subpath a package exports is in its tarball, types included.
      const files = packed.find((p) => p.manifest.name === m.name)?.files ?? [];
      for (const [subpath, target] of Object.entries(m.exports ?? {})) {
        if (typeof target === "string") continue;
        for (const file of Object.values(target as Record<string, string>))
          expect(files, `${m.name} ${subpath}`).toContain(file.replace(/^\.\//, ""));
      }
      // Siblings: a caret on the sibling's current version, so one published set resolves together.
      for (const [dep, range] of Object.entries(m.dependencies ?? {})) {
        if (dep.startsWith("@toolbelt/"))
          expect(`${m.name} -> ${dep}@${range}`).toBe(`${m.name} -> ${dep}@^${versions.get(dep)}`);
      }
      // zod is declared where it is imported, and only there: core's code and types import it (the
      // `z` it hands plugin authors), so core depends on it; a package whose published files never
      // import zod declares it nowhere.
      const dist = path.join(app, "node_modules", m.name, "dist");
      const importsZod = readdirSync(dist, { recursive: true, encoding: "utf8" })
        .filter((f) => /\.(?:js|cjs|d\.ts)$/.test(f))
        .some((f) =>
          /from ['"]zod['"]|import\(['"]zod['"]\)|require\(['"]zod['"]\)/.test(
            readFileSync(path.join(dist, f), "utf8"),
          ),
        );
      const declared = ["dependencies", "peerDependencies"].filter((k) => m[k as "dependencies"]?.zod);
      expect(`${m.name}: ${declared.join(", ") || "none"}`).toBe(
        `${m.name}: ${importsZod ? "dependencies" : "none"}`,
      );
      if (importsZod) expect(m.dependencies?.zod, m.name).toMatch(/^\^4\./);
    }
  });

  it("installs the siblings from the tarballs, with one copy of each and of zod", () => {
    const lock = readJson<{ packages: Record<string, { resolved?: string; version?: string }> }>(
      path.join(app, "package-lock.json"),
    );
    const toolbeltEntries = Object.entries(lock.packages).filter(([key]) =>
      key.includes("node_modules/@toolbelt/"),
    );
    expect(toolbeltEntries.map(([key]) => key).sort()).toEqual(
      packed.map((p) => `node_modules/${p.manifest.name}`).sort(),
    );
    for (const [key, entry] of toolbeltEntries) expect(entry.resolved, key).toMatch(/^file:.*\.tgz$/);
    const zods = Object.keys(lock.packages).filter((key) => key.endsWith("node_modules/zod"));
    expect(zods).toEqual(["node_modules/zod"]);
  });

  it("runs the toolbelt bin: --version and run read_file", async () => {
    const version = ok(await run(bin, ["--version"], app), "toolbelt --version");
    expect(version.stdout.trim()).toBe(
      packed.find((p) => p.manifest.name === "@toolbelt/toolbelt")?.manifest.version,
    );
    // What the docs tell a user to type resolves to this package, not to the unscoped `toolbelt`.
    const npx = ok(await run("npx", ["--no-install", "@toolbelt/toolbelt", "--version"], app), "npx");
    expect(npx.stdout.trim()).toBe(version.stdout.trim());
    const read = ok(
      await run(bin, ["run", "read_file", "--root", project, "--input", '{"path":"hello.txt"}'], app),
      "toolbelt run read_file",
    );
    const payload = JSON.parse(read.stdout) as { kind: string; content: string };
    expect(payload.kind).toBe("file_content");
    expect(payload.content).toContain("hello from outside");
  });

  // The build's map of tool names to families holds only for the packages it was made from: in the
  // installed tree the fingerprint must find them (node_modules/@toolbelt/*, not the workspace) and match,
  // so `run read_file` loads the files family alone.
  it("runs read_file in the installed tree loading the files family only", () => {
    const dir = tempRoot("tb-packaging-hook-");
    const log = path.join(dir, "loaded.txt");
    const hooks = path.join(dir, "hooks.mjs");
    writeFileSync(
      hooks,
      `import { appendFileSync } from "node:fs";\nexport async function resolve(s, c, next) {\n  const out = await next(s, c);\n  appendFileSync(${JSON.stringify(log)}, out.url + "\\n");\n  return out;\n}\n`,
    );
    const register = path.join(dir, "register.mjs");
    writeFileSync(
      register,
      `import { register } from "node:module";\nimport { pathToFileURL } from "node:url";\nregister(pathToFileURL(${JSON.stringify(hooks)}).href);\n`,
    );
    const main = path.join(app, "node_modules/@toolbelt/toolbelt/dist/bin.js");
    const env = { ...cleanEnv(), TOOLBELT_CONFIG_DIR: tempRoot("tb-packaging-user-"), TOOLBELT_TRUST: "" };
    writeFileSync(log, "");
    const r = spawnSync(
      process.execPath,
      ["--import", register, main, "run", "read_file", "--root", project, "--input", '{"path":"hello.txt"}'],
      { cwd: app, env, encoding: "utf8" },
    );
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ kind: "file_content" });
    const loaded = readFileSync(log, "utf8").split("\n").filter(Boolean);
    const families = ["files", "edit", "shell", "lsp", "ui", "projects", "mcp"].filter((f) =>
      loaded.some((u) => u.endsWith(`/node_modules/@toolbelt/${f}/dist/index.js`)),
    );
    expect(families).toEqual(["files"]);
  });

  const doctor = async () => {
    const out = ok(await run(bin, ["doctor", "--format", "json", "--root", project], app), "toolbelt doctor");
    const checks = JSON.parse(out.stdout) as Array<{
      family: string;
      name: string;
      status: string;
      detail: string;
    }>;
    return (family: string, name: string) => checks.find((c) => c.family === family && c.name === name);
  };

  it("finds the bundled ripgrep in the installed tree", async () => {
    const check = await doctor();
    expect(check("files", "search")).toMatchObject({ status: "ok", detail: expect.stringContaining(app) });
  });

  it.skipIf(cannotBuildHelper)(
    "built the sandbox helper through @toolbelt/shell's install script",
    async () => {
      const check = await doctor();
      expect(check("shell", "sandbox-helper")).toMatchObject({
        status: "ok",
        detail: path.join(app, "node_modules/@toolbelt/shell/bin/toolbelt-sandbox"),
      });
    },
  );

  it("imports the SDK from ESM", async () => {
    const out = ok(await run(process.execPath, ["esm.mjs", project], app), "esm.mjs");
    const { result, names, oneCore } = JSON.parse(out.stdout) as {
      result: { kind: string; content: string };
      names: string[];
      oneCore: boolean;
    };
    expect(result.kind).toBe("file_content");
    expect(result.content).toContain("hello from outside");
    expect(names).toEqual(expect.arrayContaining(["read_file", "git_status"]));
    expect(oneCore).toBe(true);
  });

  it.skipIf(noRequireEsm)(
    "requires the SDK from CommonJS (require of ESM), the same module instance as import",
    async () => {
      const out = ok(await run(process.execPath, ["cjs.cjs", project], app), "cjs.cjs");
      const parsed = JSON.parse(out.stdout) as {
        result: { kind: string };
        defineTool: string;
        sameModule: boolean;
      };
      expect(parsed).toEqual({
        result: expect.objectContaining({ kind: "file_content" }),
        defineTool: "function",
        sameModule: true,
      });
    },
  );

  for (const resolution of ["node16", "bundler"] as const) {
    it(`type-checks a third-party plugin against the published types (moduleResolution ${resolution})`, async () => {
      const tsc = path.join(app, "node_modules/typescript/bin/tsc");
      // One program with both files: the plugin must be clean, and the only error is the one planted
      // in wrong.ts (which proves the types are real, not \`any\`).
      writeFileSync(
        path.join(app, `tsconfig.${resolution}.json`),
        tsconfig(resolution, ["src/plugin.ts", "src/wrong.ts"]),
      );
      const out = await run(process.execPath, [tsc, "-p", `tsconfig.${resolution}.json`], app);
      const errors = out.stdout.split("\n").filter((line) => /error TS\d+/.test(line));
      expect(errors).toEqual([
        expect.stringMatching(
          /^src\/wrong\.ts\(\d+,\d+\): error TS2339: Property 'nosuchfield' does not exist/,
        ),
      ]);
      expect(out.code).toBe(2);
    });
  }

  // The README's own example and the narrowing a user writes, compiled under strict settings with the
  // published .d.ts files checked too: after `result.kind === "error"`, `code` and `message` are typed,
  // and so are each tool's own fields after its kind.
  for (const resolution of ["node16", "bundler"] as const) {
    it(`compiles the README's SDK example and narrows results by kind (moduleResolution ${resolution})`, async () => {
      const tsc = path.join(app, "node_modules/typescript/bin/tsc");
      const config = `tsconfig.results.${resolution}.json`;
      writeFileSync(
        path.join(app, config),
        tsconfig(resolution, ["src/readme-example.ts", ...readdirSync(TYPE_FIXTURES).map((f) => `src/${f}`)]),
      );
      const out = await run(process.execPath, [tsc, "-p", config], app);
      const errors = out.stdout.split("\n").filter((line) => /error TS\d+/.test(line));
      expect(errors).toEqual([]);
      expect(out.code).toBe(0);
    });
  }

  it("runs the AI SDK adapter from the installed tree, with the `ai` its peer range installs", async () => {
    const out = ok(await run(process.execPath, ["ai-sdk.mjs", project], app), "ai-sdk.mjs");
    const { text, output, seen, sandbox } = JSON.parse(out.stdout) as {
      text: string;
      output: { kind: string; content: string };
      seen: Array<{ type: string; value: string }>;
      sandbox: string;
    };
    expect(text).toBe("done");
    expect(output.kind).toBe("file_content");
    expect(output.content).toContain("hello from outside");
    // The model was sent toolbelt's text for the result, not the JSON payload.
    expect(seen).toHaveLength(1);
    expect(seen[0]?.type).toBe("text");
    expect(seen[0]?.value).toContain("hello from outside");
    expect(seen[0]?.value).not.toContain('"kind"');
    expect(sandbox).toBe(HELLO);
    const ai = readJson<{ version: string }>(path.join(app, "node_modules/ai/package.json"));
    expect(ai.version).toMatch(/^7\./);
  });

  it("serves the console over HTTP from the installed tree", async () => {
    const child = spawn(bin, ["serve", "--http", "--port", "0", "--root", project], {
      cwd: app,
      env: { ...cleanEnv(), NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = "";
        child.stdout.on("data", (d) => {
          out += d;
          const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
          if (match?.[1]) resolve(match[1]);
        });
        child.on("close", (code) =>
          reject(new Error(`serve --http exited ${code} before listening: ${out}`)),
        );
      });
      const page = await fetch(`${url}/`);
      expect(page.status).toBe(200);
      const html = await page.text();
      expect(html.toLowerCase()).toContain("<!doctype html>");
      expect(html).toContain("<script");
    } finally {
      child.kill("SIGTERM");
    }
  });

  it("serves MCP to a real MCP client from the installed tree: lists tools and calls read_file", async () => {
    const out = ok(await run(process.execPath, ["mcp-client.mjs", bin, project], app), "mcp-client.mjs");
    const { tools, server, result } = JSON.parse(out.stdout) as {
      tools: string[];
      server: { name: string };
      result: { isError?: boolean; structuredContent: { kind: string; content: string } };
    };
    expect(server.name).toBe("toolbelt");
    expect(tools).toEqual(expect.arrayContaining(["read_file", "search_files", "edit_file"]));
    expect(result.isError).toBe(false);
    expect(result.structuredContent.kind).toBe("file_content");
    expect(result.structuredContent.content).toContain("hello from outside");
  });
});
