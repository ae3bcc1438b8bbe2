import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { TestContext } from "vitest";
import { afterEach, describe, expect, it, vi } from "vitest";
import { CAPABILITIES, lacks, need } from "./capability.js";

const REPO = fileURLToPath(new URL("../", import.meta.url));
const saved = process.env.CI;

afterEach(() => {
  if (saved === undefined) delete process.env.CI;
  else process.env.CI = saved;
  vi.restoreAllMocks();
});

/** A test context that records the skip it was given (ctx.skip throws, as vitest's does). */
function context(): { ctx: TestContext; skipped: () => string | undefined } {
  let note: string | undefined;
  const ctx = {
    task: { name: "a test" },
    skip: (reason: string) => {
      note = reason;
      throw new Error("skipped");
    },
  } as unknown as TestContext; // only the two members need() uses
  return { ctx, skipped: () => note };
}

describe("lacks", () => {
  it("is false when the machine has the capability, whatever CI says", () => {
    process.env.CI = "true";
    expect(lacks("ripgrep", undefined)).toBe(false);
    expect(lacks("ripgrep", false)).toBe(false);
    expect(lacks("landlock", "")).toBe(false);
  });

  it("outside CI skips and logs the reason", () => {
    delete process.env.CI;
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    expect(lacks("ripgrep", "no rg binary (probe one)")).toBe(true);
    expect(warn).toHaveBeenCalledWith("skipped: needs ripgrep, missing here (no rg binary (probe one))");
  });

  it("under CI=true fails for a capability CI provides, and still skips one it cannot provide", () => {
    process.env.CI = "true";
    vi.spyOn(console, "warn").mockImplementation(() => {});
    expect(() => lacks("chromium", "/usr/bin/chromium is missing")).toThrow(
      /^chromium is missing under CI=true \(\/usr\/bin\/chromium is missing\), and CI provides it: \.ci\/run installs Debian's chromium/,
    );
    expect(lacks("landlock", "Landlock is not enabled in this kernel")).toBe(true);
  });
});

describe("need", () => {
  it("skips a running test with the reason as its note, or fails it under CI", () => {
    delete process.env.CI;
    vi.spyOn(console, "warn").mockImplementation(() => {});
    const quiet = context();
    need(quiet.ctx, "script", undefined);
    expect(quiet.skipped()).toBeUndefined();
    const skipped = context();
    expect(() => need(skipped.ctx, "script", "no script")).toThrow("skipped");
    expect(skipped.skipped()).toBe('skipped "a test": needs script, missing here (no script)');
    process.env.CI = "true";
    const failed = context();
    expect(() => need(failed.ctx, "script", "no script")).toThrow(/script is missing under CI=true/);
    expect(failed.skipped()).toBeUndefined();
    const kernel = context();
    expect(() => need(kernel.ctx, "process-cap", "no cgroup")).toThrow("skipped");
    expect(kernel.skipped()).toContain("CI cannot provide it either");
  });
});

/** Every test source and test helper of the workspaces. */
function testSources(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name === "node_modules" || entry.name === "dist" || entry.name.startsWith(".")) continue;
      const abs = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(abs);
      else if (/\.(ts|mts)$/.test(entry.name)) out.push(abs);
    }
  };
  for (const top of ["packages", "plugins", "examples", "runtime-tests"]) walk(path.join(REPO, top));
  const isTestCode = (f: string) =>
    /\.test\.ts$/.test(f) ||
    /[/\\]test[/\\]/.test(f) ||
    /[/\\]testing[/\\]/.test(f) ||
    /test-harness\.ts$/.test(f);
  return out.filter(isTestCode);
}

/** The text between the parenthesis at `open` and the one that closes it. */
function argument(source: string, open: number): string {
  let depth = 0;
  for (let i = open; i < source.length; i++) {
    if (source[i] === "(") depth++;
    else if (source[i] === ")" && --depth === 0) return source.slice(open + 1, i);
  }
  return source.slice(open + 1);
}

/** `condition` split at its top-level `||` and `&&` (not those inside calls or strings). */
function operands(condition: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let quote = "";
  let start = 0;
  for (let i = 0; i < condition.length; i++) {
    const c = condition[i] as string;
    if (quote) {
      if (c === "\\") i++;
      else if (c === quote) quote = "";
    } else if (c === '"' || c === "'" || c === "`") quote = c;
    else if ("([{".includes(c)) depth++;
    else if (")]}".includes(c)) depth--;
    else if (depth === 0 && (condition.startsWith("||", i) || condition.startsWith("&&", i))) {
      out.push(condition.slice(start, i).trim());
      start = i + 2;
      i++;
    }
  }
  out.push(condition.slice(start).trim());
  return out;
}

/** Whether `name` is a const whose value comes from the capability helper. */
function fromHelper(source: string, name: string): boolean {
  const declaration = new RegExp(`const ${name}\\s*=([^;]*);`).exec(source);
  return declaration !== null && /\blacks(?:Landlock)?\(/.test(declaration[1] as string);
}

describe("every capability skip goes through the helper", () => {
  const sources = testSources();

  it("finds the test sources", () => {
    expect(sources.length).toBeGreaterThan(100);
  });

  it("no test skips on its own (.skip, .runIf, ctx.skip)", () => {
    const own = sources.flatMap((file) =>
      readFileSync(file, "utf8")
        .split("\n")
        .map((line, i) => ({ line, at: `${path.relative(REPO, file)}:${i + 1}` }))
        .filter(({ line }) => /\.(?:skip|runIf)\s*\(/.test(line))
        .map(({ at, line }) => `${at}: ${line.trim()}`),
    );
    expect(own).toEqual([]);
  });

  it("every skipIf condition is the helper's answer", () => {
    const unchecked: string[] = [];
    for (const file of sources) {
      const source = readFileSync(file, "utf8");
      for (const match of source.matchAll(/\.skipIf\s*\(/g)) {
        const condition = argument(source, (match.index as number) + match[0].length - 1);
        const ok = operands(condition).every(
          (o) => /^lacks(?:Landlock)?\(/.test(o) || (/^\w+$/.test(o) && fromHelper(source, o)),
        );
        if (!ok) unchecked.push(`${path.relative(REPO, file)}: skipIf(${condition})`);
      }
    }
    expect(unchecked).toEqual([]);
  });

  it("lists each capability with how CI provides it or why it cannot", () => {
    for (const [name, provided] of Object.entries(CAPABILITIES))
      expect(provided.ci ? provided.how : provided.why, name).toMatch(/\w/);
  });
});
