import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, cli, REPO, tempRoot } from "../../packages/toolbelt/test/cli-harness.js";

// The deno binary comes from the pinned `deno` npm package (a root devDependency).
const DENO = path.join(REPO, "node_modules/.bin/deno");
const runtime = [DENO, "run", "-A"];
let root: string;

beforeAll(() => {
  assertBuilt();
  if (!existsSync(DENO))
    throw new Error(`deno is missing at ${DENO}: the pinned deno npm package must install it`);
  root = tempRoot("tb-deno-");
  mkdirSync(path.join(root, "configs"));
  writeFileSync(
    path.join(root, "configs", "app.json"),
    JSON.stringify({ plugins: [path.join(REPO, "packages/toolbelt/test/__fixtures__/greet-plugin.mjs")] }),
  );
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("the built CLI under Deno", () => {
  it("prints its version", async () => {
    const result = await cli(["--version"], { runtime });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
  });

  it("prints the bound tools", async () => {
    // The plugin is named by the project's own config, which only a trusted project may do.
    const result = await cli(["tools", "--root", root, "--trust"], { runtime });
    expect(result.code).toBe(0);
    const names = JSON.parse(result.stdout).tools.map((t: { name: string }) => t.name);
    expect(names).toContain("greet");
  });

  it("runs a tool", async () => {
    const result = await cli(["run", "greet", "--root", root, "--trust", "--input", '{"name":"deno"}'], {
      runtime,
    });
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ kind: "greeting", text: "hello deno" });
  });

  it("exits 1 with EUNKNOWN_TOOL", async () => {
    const result = await cli(["run", "no_such_tool", "--root", root, "--input", "{}"], { runtime });
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout).code).toBe("EUNKNOWN_TOOL");
  });
});
