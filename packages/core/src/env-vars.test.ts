import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { COMMAND_ENV_NEVER, scrubCommandEnv } from "./command-env.js";
import { userConfigDir } from "./config-paths.js";
import { ENV, readEnv, renderEnvTable } from "./env-vars.js";
import { ToolbeltError } from "./errors.js";
import { projectTrust } from "./trust-store.js";

const REPO = fileURLToPath(new URL("../../../", import.meta.url));

/** Product sources: every package's src (not its tests or test helpers) and the sandbox helper's C. */
function productSources(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, e.name);
      if (e.isDirectory()) {
        if (e.name !== "testing" && e.name !== "node_modules") walk(full);
      } else if (/\.(ts|c)$/.test(e.name) && !/\.test\.ts$|test-harness\.ts$/.test(e.name)) out.push(full);
    }
  };
  for (const pkg of readdirSync(path.join(REPO, "packages"))) {
    for (const sub of ["src", "native"]) {
      try {
        walk(path.join(REPO, "packages", pkg, sub));
      } catch {
        // Not every package has native code.
      }
    }
  }
  return out;
}

const NAME = /\bTOOLBELT_[A-Z0-9]+(?:_[A-Z0-9]+)*\b/g;
const REGISTRY = path.join(REPO, "packages/core/src/env-vars.ts");

/**
 * Files still reading their variables straight from process.env: the CLI's, which are being split
 * into src/commands/ and rid of the one-shot path on another branch. Converted after that merges;
 * this list only shrinks.
 */
const NOT_YET_CONVERTED = new Set<string>();

describe("the TOOLBELT_* registry", () => {
  it("names every variable the code mentions, and nothing the code has forgotten", () => {
    const mentioned = new Set<string>();
    for (const file of productSources()) {
      if (file === REGISTRY) continue;
      for (const m of readFileSync(file, "utf8").matchAll(NAME)) mentioned.add(m[0]);
    }
    expect([...mentioned].filter((n) => !(n in ENV)).sort()).toEqual([]);
    expect(Object.keys(ENV).filter((n) => !mentioned.has(n) && n !== "TOOLBELT_HTTP_TOKEN")).toEqual([]);
  });

  it("is the only way product code reads one", () => {
    const direct: string[] = [];
    const read = /process\.env(?:\.TOOLBELT_|\[\s*["'`]TOOLBELT_)|\benv\.TOOLBELT_/;
    for (const file of productSources()) {
      const rel = path.relative(REPO, file);
      if (file === REGISTRY || NOT_YET_CONVERTED.has(rel)) continue;
      readFileSync(file, "utf8")
        .split("\n")
        .forEach((line, i) => {
          if (read.test(line)) direct.push(`${rel}:${i + 1}: ${line.trim()}`);
        });
    }
    expect(direct).toEqual([]);
  });

  it("is the table in docs/configuration.md", () => {
    const doc = readFileSync(path.join(REPO, "docs/configuration.md"), "utf8");
    const table = /<!-- env-table:start -->\n([\s\S]*?)\n<!-- env-table:end -->/.exec(doc)?.[1];
    expect(table, "docs/configuration.md is out of date: `npm run build && npm run docs:env`").toBe(
      renderEnvTable(),
    );
  });

  it("refuses a value a variable cannot take, naming the variable and what it takes", () => {
    const error = (() => {
      try {
        readEnv(ENV.TOOLBELT_SEARCH_ENGINE, { TOOLBELT_SEARCH_ENGINE: "ripgrap" });
      } catch (e) {
        return e;
      }
    })();
    expect(ToolbeltError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: "EINVAL_CONFIG" });
    expect(String((error as Error).message)).toBe(
      'TOOLBELT_SEARCH_ENGINE="ripgrap": expected ripgrep, rg, js (or unset it)',
    );
    expect(() => readEnv(ENV.TOOLBELT_MCP_CALL_TIMEOUT_MS, { TOOLBELT_MCP_CALL_TIMEOUT_MS: "5s" })).toThrow(
      /TOOLBELT_MCP_CALL_TIMEOUT_MS="5s": expected a positive whole number/,
    );
    // A misspelt trust switch is an error, not a silent "untrusted" (or worse, a silent "trusted").
    expect(() => projectTrust("/nowhere", { env: { TOOLBELT_TRUST: "yes" } })).toThrow(
      /TOOLBELT_TRUST="yes"/,
    );
  });

  it("reads a value as the code uses it; empty is unset", () => {
    expect(readEnv(ENV.TOOLBELT_SEARCH_ENGINE, { TOOLBELT_SEARCH_ENGINE: " RG " })).toBe("ripgrep");
    expect(readEnv(ENV.TOOLBELT_LSP_FALLBACK, { TOOLBELT_LSP_FALLBACK: "1" })).toBe("force");
    expect(readEnv(ENV.TOOLBELT_MCP_DEPTH, { TOOLBELT_MCP_DEPTH: "0" })).toBe(0);
    expect(readEnv(ENV.TOOLBELT_SHELL_CGROUPS, { TOOLBELT_SHELL_CGROUPS: "0" })).toBe(false);
    expect(readEnv(ENV.TOOLBELT_TRUST, { TOOLBELT_TRUST: "" })).toBeUndefined();
    expect(projectTrust("/nowhere", { env: { TOOLBELT_TRUST: "true" } }).trusted).toBe(true);
    expect(userConfigDir({ TOOLBELT_CONFIG_DIR: "/tmp/tb-user" })).toBe("/tmp/tb-user");
  });

  it("keeps the tokens from every command, whatever shell_env allows", () => {
    expect([...COMMAND_ENV_NEVER].sort()).toEqual(["TOOLBELT_HTTP_TOKEN", "TOOLBELT_TOKEN"]);
    const env = scrubCommandEnv(
      { TOOLBELT_TOKEN: "t", TOOLBELT_HTTP_TOKEN: "h", TOOLBELT_SHELL_MARK: "m", PATH: "/bin" },
      { allow: ["TOOLBELT_*"] },
    );
    expect(env).toMatchObject({ PATH: "/bin", TOOLBELT_SHELL_MARK: "m" });
    expect(env.TOOLBELT_TOKEN).toBeUndefined();
    expect(env.TOOLBELT_HTTP_TOKEN).toBeUndefined();
  });
});
