import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { configSourceFiles, MCP_JSON, userConfigDir } from "./config-paths.js";
import { loadTrustedConfig } from "./config-sources.js";

const dirs: string[] = [];
function temp(prefix: string): string {
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), prefix)));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("configSourceFiles", () => {
  it("names the user config folder as the loader finds it", () => {
    const home = temp("tb-paths-home-");
    expect(userConfigDir({ TOOLBELT_CONFIG_DIR: "rel/dir" })).toBe(path.resolve("rel/dir"));
    expect(userConfigDir({ TOOLBELT_CONFIG_DIR: "", XDG_CONFIG_HOME: home })).toBe(
      path.join(home, "toolbelt"),
    );
    expect(userConfigDir({})).toBe(path.join(os.homedir(), ".config", "toolbelt"));
  });

  // The CLI's `tools` fast path trusts this list to mean "no config anywhere": every file on it that
  // core reads must change what the loader does, or the list and the loader have drifted apart.
  it("lists every file core's loader reads: a broken one makes loading fail", () => {
    const root = temp("tb-paths-root-");
    const user = temp("tb-paths-user-");
    const env = { TOOLBELT_CONFIG_DIR: user, TOOLBELT_TRUST: "" };
    const files = configSourceFiles(root, env);
    expect(files).toContain(path.join(root, MCP_JSON));
    expect(() => loadTrustedConfig(root, { env })).not.toThrow();
    // .mcp.json is the mcp family's to read (through its contribution), not core's.
    for (const file of files.filter((f) => path.basename(f) !== MCP_JSON)) {
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, "{ not json");
      expect(() => loadTrustedConfig(root, { env }), file).toThrow(/not valid JSON/);
      rmSync(file);
    }
  });
});
