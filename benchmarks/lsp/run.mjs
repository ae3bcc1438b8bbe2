// lsp: time to first diagnostics on a cold start and warm request latency, for the real
// typescript-language-server (the baseline), TypeScript 7's tsgo --lsp (when installed) and the
// in-process ts-morph fallback. `tsc --noEmit` on the same project is shown as a reference.
// Usage: node benchmarks/lsp/run.mjs [--files N] [--cold N] [--warm N]
// Needs the built packages: npx turbo run build --filter=@toolbelt/lsp...
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createSession } from "@toolbelt/core";
import { createLspFamily } from "@toolbelt/lsp";
import { fmt, REPO, ratio, stats, table } from "../lib.mjs";

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(name);
  return i === -1 ? fallback : Number(args[i + 1]);
};
const FILES = opt("--files", 200);
const COLD = opt("--cold", 3);
const WARM = opt("--warm", 20);

/** A project of FILES modules in a chain of imports, each with a class, a function and a call; one error. */
function makeProject() {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), "toolbelt-bench-lsp-")));
  mkdirSync(path.join(root, "src"));
  writeFileSync(
    path.join(root, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        target: "ES2022",
        module: "NodeNext",
        moduleResolution: "NodeNext",
        noEmit: true,
        types: [],
      },
      include: ["src"],
    }),
  );
  for (let i = 0; i < FILES; i++) {
    const prev = i > 0 ? `import { Model${i - 1}, compute${i - 1} } from "./m${i - 1}.js";\n` : "";
    const body = i > 0 ? `compute${i - 1}(new Model${i - 1}(n).value) + 1` : "n * 2";
    writeFileSync(
      path.join(root, "src", `m${i}.ts`),
      `${prev}export class Model${i} {
  constructor(readonly value: number) {}
  twice(): number {
    return this.value * 2;
  }
}

export function compute${i}(n: number): number {
  return ${body};
}
`,
    );
  }
  // The last module calls the chain and holds the one error.
  writeFileSync(
    path.join(root, "src", "main.ts"),
    `import { compute${FILES - 1}, Model${FILES - 1} } from "./m${FILES - 1}.js";
export const result: number = compute${FILES - 1}(3);
export const wrong: string = new Model${FILES - 1}(1).twice();
`,
  );
  return root;
}

const now = () => performance.now();

async function cold(root, family) {
  const times = [];
  for (let i = 0; i < COLD; i++) {
    const session = await createSession({ root, plugins: [family()] });
    const start = now();
    const result = await session.call("lsp_diagnostics", { path: "src/main.ts" });
    times.push(now() - start);
    if (result.kind !== "lsp_diagnostics" || result.errors !== 1)
      throw new Error(`unexpected: ${JSON.stringify(result).slice(0, 300)}`);
    await session.close();
  }
  return stats(times);
}

async function warm(root, family) {
  const session = await createSession({ root, plugins: [family()] });
  await session.call("lsp_diagnostics", { path: "src/main.ts" });
  const main = path.join(root, "src", "main.ts");
  const original = `import { compute${FILES - 1}, Model${FILES - 1} } from "./m${FILES - 1}.js";
export const result: number = compute${FILES - 1}(3);
export const wrong: string = new Model${FILES - 1}(1).twice();
`;
  const measure = async (fn) => {
    const times = [];
    for (let i = 0; i < WARM; i++) {
      const start = now();
      await fn(i);
      times.push(now() - start);
    }
    return stats(times);
  };
  const out = {
    // An edit each time, so the server must re-check a new version.
    diagnostics: await measure(async (i) => {
      writeFileSync(main, `${original}// edit ${i}\n`);
      const r = await session.call("lsp_diagnostics", { path: "src/main.ts" });
      if (r.errors !== 1) throw new Error(`unexpected ${JSON.stringify(r).slice(0, 200)}`);
    }),
    definition: await measure(() =>
      session.call("lsp_definition", { path: "src/main.ts", line: 2, symbol: `compute${FILES - 1}` }),
    ),
    references: await measure(() =>
      session.call("lsp_references", {
        path: `src/m${Math.floor(FILES / 2)}.ts`,
        symbol: `Model${Math.floor(FILES / 2)}`,
      }),
    ),
    hover: await measure(() => session.call("lsp_hover", { path: "src/main.ts", line: 3, symbol: "twice" })),
    symbol_path: await measure(() =>
      session.call("lsp_hover", {
        path: `src/m${Math.floor(FILES / 2)}.ts`,
        symbol: `Model${Math.floor(FILES / 2)}/twice`,
      }),
    ),
  };
  writeFileSync(main, original);
  await session.close();
  return out;
}

const root = makeProject();
const backends = [
  {
    name: "typescript-language-server",
    family: () => createLspFamily({ fallback: "off", diagnosticsTimeoutMs: 120_000 }),
  },
  {
    name: "tsgo --lsp (TS 7)",
    family: () =>
      createLspFamily({ fallback: "off", typescriptServer: "tsgo", diagnosticsTimeoutMs: 120_000 }),
  },
  {
    name: "ts-morph fallback",
    family: () => createLspFamily({ fallback: "force", diagnosticsTimeoutMs: 120_000 }),
  },
];

const results = [];
for (const b of backends) {
  try {
    results.push({ name: b.name, cold: await cold(root, b.family), warm: await warm(root, b.family) });
  } catch (error) {
    console.log(`${b.name}: not measured (${error.message.split("\n")[0]})`);
  }
}

const tscStart = now();
const tsc = spawnSync(
  process.execPath,
  [path.join(REPO, "node_modules/typescript/lib/tsc.js"), "--noEmit", "-p", root],
  { encoding: "utf8" },
);
const tscMs = now() - tscStart;
rmSync(root, { recursive: true, force: true });

const base = results[0];
console.log(
  `Project: ${FILES + 1} TypeScript files; cold runs: ${COLD}; warm runs: ${WARM}; ${os.cpus().length} CPUs; Node ${process.version}\n`,
);
console.log(`Reference: tsc --noEmit (TypeScript 5.9, whole project, exit ${tsc.status}): ${fmt(tscMs)}\n`);
console.log(
  "Time to first diagnostics of src/main.ts, cold (new session: server start + project load + check):\n",
);
console.log(
  table(
    ["backend", "median", "p90", "vs typescript-language-server"],
    results.map((r) => [
      r.name,
      fmt(r.cold.median),
      fmt(r.cold.p90),
      base ? ratio(r.cold.median, base.cold.median) : "-",
    ]),
  ),
);
console.log(
  "\nWarm request latency, median (p90), through session.call (tool validation and rendering included):\n",
);
const kinds = ["diagnostics", "definition", "references", "hover", "symbol_path"];
console.log(
  table(
    ["backend", "diagnostics after an edit", "definition", "references", "hover", "hover by Class/method"],
    results.map((r) => [r.name, ...kinds.map((k) => `${fmt(r.warm[k].median)} (${fmt(r.warm[k].p90)})`)]),
  ),
);
console.log("\nWarm medians relative to typescript-language-server:\n");
console.log(
  table(
    ["backend", ...kinds],
    results.map((r) => [
      r.name,
      ...kinds.map((k) => (base ? ratio(r.warm[k].median, base.warm[k].median) : "-")),
    ]),
  ),
);
