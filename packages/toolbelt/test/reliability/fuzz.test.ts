import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { ERROR_CODES, type JsonSchema, type Session } from "@toolbelt/core";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createToolbelt } from "../../src/create.js";
import { HOSTILE_PATHS, makeHostileTree, snapshot } from "./hostile.js";

// Property-based fuzzing of every bound tool through session.call: random and hostile inputs must
// yield a payload (an error one with a stable code when they fail) — never a crash, a hang, or a
// write outside the root. Counts go to stdout for docs/reliability.md.

const RUNS = Number(process.env.FUZZ_RUNS ?? 150);
const CALL_TIMEOUT_MS = 20_000;
const SAFE_COMMANDS = ["true", "echo fuzz", "printf x", "ls", "pwd"];

let base: string;
let root: string;
let outside: string;
let session: Session;
let before: Record<string, string>;
const counts: Record<string, { runs: number; ok: number; errors: Record<string, number> }> = {};

const pathish = /path|file|dir|cwd|root|include|pattern/i;

function valueFor(name: string, schema: JsonSchema | undefined): fc.Arbitrary<unknown> {
  const junk = fc.oneof(
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    fc.double({ noNaN: true }),
    fc.constantFrom(-1, 0, 2 ** 31, Number.MAX_SAFE_INTEGER, -1e308),
    fc.string(),
    fc.string({ unit: "binary", maxLength: 50 }),
    fc.array(fc.jsonValue(), { maxLength: 3 }),
    fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 3 }),
  );
  const options: Array<{ weight: number; arbitrary: fc.Arbitrary<unknown> }> = [
    { weight: 1, arbitrary: junk },
  ];
  const add = (arbitrary: fc.Arbitrary<unknown>, weight = 3) => options.push({ weight, arbitrary });
  if (name === "command") return fc.constantFrom(...SAFE_COMMANDS);
  if (pathish.test(name)) add(fc.constantFrom(...HOSTILE_PATHS), 6);
  const type = schema?.type;
  if (type === "string") add(fc.string({ maxLength: 200 }));
  if (type === "integer" || type === "number") add(fc.integer({ min: -5, max: 10_000 }));
  if (type === "boolean") add(fc.boolean());
  if (Array.isArray(schema?.enum)) add(fc.constantFrom(...(schema.enum as unknown[])), 6);
  if (type === "array")
    add(fc.array(fc.oneof(fc.constantFrom(...HOSTILE_PATHS), fc.string()), { maxLength: 4 }));
  return fc.oneof(...options);
}

function inputFor(schema: JsonSchema): fc.Arbitrary<unknown> {
  const props = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const shaped = fc.record(
    Object.fromEntries(Object.entries(props).map(([name, prop]) => [name, valueFor(name, prop)])),
    // Required keys are always present (so most inputs reach the tool's own code); others come and go.
    { requiredKeys: ((schema.required ?? []) as string[]).filter((k) => k in props) },
  );
  // Mostly schema-shaped inputs (they reach the tool's own code), some arbitrary JSON.
  return fc.oneof({ weight: 4, arbitrary: shaped }, { weight: 1, arbitrary: fc.jsonValue() });
}

function withTimeout<T>(promise: Promise<T>, what: string): Promise<T> {
  return Promise.race([
    promise,
    new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`hang: ${what}`)), CALL_TIMEOUT_MS)),
  ]);
}

beforeAll(async () => {
  base = realpathSync(mkdtempSync(path.join(os.tmpdir(), "tb-fuzz-")));
  ({ root, outside } = makeHostileTree(base));
  writeFileSync(path.join(root, "tsconfig.json"), '{"compilerOptions":{"strict":true}}\n');
  before = snapshot(outside);
  session = await createToolbelt({
    root,
    allow: ["shell"],
    config: { agent: { workspace_mode: "auto", shell_sandbox: "best-effort" } },
    client: {
      capabilities: ["ask_user", "generative_ui"],
      ask: async () => ({ answers: [{ text: "fuzz" }] }),
      approve: async () => true,
    },
  });
}, 60_000);

afterAll(async () => {
  await session?.close();
  const lines = Object.entries(counts).map(
    ([tool, c]) => `${tool}: ${c.runs} inputs, ${c.ok} results, errors ${JSON.stringify(c.errors)}`,
  );
  console.log(`fuzz summary (${RUNS} runs per tool)\n${lines.join("\n")}`);
  rmSync(base, { recursive: true, force: true });
});

describe("fuzzing every bound tool", () => {
  it("binds tools to fuzz", () => {
    expect(session.bind().tools.length).toBeGreaterThan(5);
  });

  it("never crashes, hangs, or writes outside the root", async () => {
    const known = new Set<string>(ERROR_CODES);
    for (const tool of session.bind().tools) {
      const c: (typeof counts)[string] = { runs: 0, ok: 0, errors: {} };
      counts[tool.name] = c;
      const runs = tool.name.startsWith("lsp_") ? Math.min(RUNS, 8) : RUNS;
      await fc.assert(
        fc.asyncProperty(inputFor(tool.inputSchema), async (input) => {
          c.runs++;
          const result = await withTimeout(
            session.call(tool.name, input),
            `${tool.name} ${JSON.stringify(input)}`,
          );
          expect(typeof result.kind).toBe("string");
          if (result.kind === "error") {
            expect(known.has(String(result.code))).toBe(true);
            // EINTERNAL is what a crash inside a tool turns into: a defect, never an answer to input.
            expect(result.code, `${tool.name} ${JSON.stringify(input)}: ${result.message}`).not.toBe(
              "EINTERNAL",
            );
            expect(typeof result.message).toBe("string");
            c.errors[String(result.code)] = (c.errors[String(result.code)] ?? 0) + 1;
          } else {
            c.ok++;
          }
        }),
        { numRuns: runs, seed: Number(process.env.FUZZ_SEED ?? 20261129) },
      );
      expect(snapshot(outside)).toEqual(before);
    }
  }, 600_000);
});
