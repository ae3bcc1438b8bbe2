import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { composeConfigSchema, loadConfig, parseConfig, toolSearchMode } from "./config.js";
import { defineConfigSection } from "./contributions.js";
import { ToolbeltError } from "./errors.js";

const dirs: string[] = [];
function tempRoot(config?: unknown): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), "tb-config-"));
  dirs.push(dir);
  if (config !== undefined) {
    mkdirSync(path.join(dir, "configs"));
    writeFileSync(
      path.join(dir, "configs", "app.json"),
      typeof config === "string" ? config : JSON.stringify(config),
    );
  }
  return dir;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function failure(fn: () => unknown): ToolbeltError {
  try {
    fn();
  } catch (error) {
    if (ToolbeltError.isInstance(error)) return error;
    throw error;
  }
  throw new Error("expected a failure");
}

describe("config", () => {
  it("has the documented defaults", () => {
    const config = parseConfig({});
    expect(config.limits).toMatchObject({
      fileReadMaxLines: 10000,
      fileReadMaxImageBytes: 4 * 1024 * 1024,
      fileListMaxEntries: 500,
      fileSearchMaxMatches: 100,
      fileSearchMaxBytes: 1024 * 1024,
      fileWriteMaxBytes: 2 * 1024 * 1024,
    });
    expect(toolSearchMode(config)).toBe("auto");
    expect(toolSearchMode(parseConfig({ agent: { tool_search: false } }))).toBe("off");
  });

  it("names the failing key and what was expected", () => {
    const error = failure(() => parseConfig({ agent: { tool_search: "sometimes" } }));
    expect(error.code).toBe("EINVAL_CONFIG");
    expect(error.message).toContain("agent.tool_search");
    expect(error.message).toMatch(/off|on|auto/);
  });

  it("reports unknown keys instead of ignoring them", () => {
    const error = failure(() => parseConfig({ agent: { edit_tools: "edit_file" }, colour: "blue", lsp: {} }));
    expect(error.message).toContain("agent.edit_tools");
    expect(error.message).toContain("colour");
    // Without the lsp family's contribution, its section is as unknown as any other.
    expect(error.message).toContain("lsp");
  });

  it("loads configs/app.json from the root and layers --config over it", () => {
    const root = tempRoot({ agent: { mode: "plan" }, limits: { fileListMaxEntries: 10 } });
    const extra = path.join(root, "extra.json");
    writeFileSync(extra, JSON.stringify({ limits: { fileSearchMaxMatches: 7 } }));
    const config = loadConfig(root, { file: extra });
    expect(config.agent.mode).toBe("plan");
    expect(config.limits.fileListMaxEntries).toBe(10);
    expect(config.limits.fileSearchMaxMatches).toBe(7);
    expect(config.limits.fileReadMaxLines).toBe(10000);
  });

  it("works with no config file at all", () => {
    expect(loadConfig(tempRoot()).agent).toEqual({});
  });

  it("says which file is not JSON", () => {
    const root = tempRoot("{ nope");
    const error = failure(() => loadConfig(root));
    expect(error.code).toBe("EINVAL_CONFIG");
    expect(error.message).toContain(path.join("configs", "app.json"));
  });

  it("validates each layer on its own, naming the file", () => {
    const root = tempRoot({ limits: { fileReadMaxLines: -1 } });
    const error = failure(() => loadConfig(root));
    expect(error.message).toContain("limits.fileReadMaxLines");
    expect(error.message).toContain("app.json");
  });
});

describe("composeConfigSchema", () => {
  const section = (owner: string) =>
    defineConfigSection({ owner, keys: { [owner]: { schema: z.object({ n: z.number() }).optional() } } });

  it("composes once for the same contributions in another array, and apart for others", () => {
    const a = section("sec_a");
    const b = section("sec_b");
    const schema = composeConfigSchema([a, b]);
    // The loader, createToolbelt and the session each pass their own array of the same sections.
    expect(composeConfigSchema([a, b])).toBe(schema);
    expect(composeConfigSchema([a, b], { unknownSections: "allow" })).not.toBe(schema);
    expect(composeConfigSchema([a])).not.toBe(schema);
    // Each still checks what its own sections say.
    expect(
      (parseConfig({ sec_b: { n: 1 } }, "config", [a, b]) as unknown as Record<string, unknown>).sec_b,
    ).toEqual({
      n: 1,
    });
    expect(() => parseConfig({ sec_b: { n: 1 } }, "config", [a])).toThrow(/sec_b/);
  });
});
