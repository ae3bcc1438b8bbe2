// A plugin author's mistakes, as the built CLI reports them: a malformed plugin object stops the run
// with EPLUGIN naming the plugin and the field; an event nobody declared, or one that does not match
// its declaration, fails the call with EPLUGIN naming the plugin, the tool and the type.
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, cli, REPO, tempRoot } from "./cli-harness.js";

const fixture = (name: string) => path.join(REPO, "packages/toolbelt/test/__fixtures__", name);
const dirs: string[] = [];

/** A project whose configs/app.json loads `plugins` (the runs pass --trust). */
function project(plugins: string[]): string {
  const dir = tempRoot("tb-plugin-errors-");
  dirs.push(dir);
  mkdirSync(path.join(dir, "configs"));
  writeFileSync(path.join(dir, "configs", "app.json"), JSON.stringify({ plugins }));
  return dir;
}

beforeAll(() => assertBuilt());
afterAll(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("a malformed plugin object", () => {
  it("stops the run with EPLUGIN naming the plugin, where it came from and the field", async () => {
    const plugin = fixture("malformed-plugin.mjs");
    const root = project([plugin]);
    const result = await cli(["tools", "--trust", "--root", root]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`toolbelt: EPLUGIN: plugin broken (${plugin}): tools[0] (shout):`);
    expect(result.stderr).toContain('"execute" must be a function');
    expect(result.stdout).toBe("");
  });
});

describe("events a plugin's tool emits", () => {
  it("an undeclared type is EPLUGIN naming the plugin, the tool and the type, and pointing to defineEvents", async () => {
    const root = project([fixture("undeclared-event-plugin.mjs")]);
    const result = await cli(["run", "wave", "--trust", "--root", root, "--input", "{}"]);
    expect(result.code).toBe(1);
    const payload = JSON.parse(result.stdout) as { kind: string; code: string; message: string };
    expect(payload).toMatchObject({ kind: "error", code: "EPLUGIN", event_type: "wave/waved" });
    expect(payload.message).toContain('plugin wave\'s tool wave emitted the event type "wave/waved"');
    expect(payload.message).toContain('defineEvents("wave", { waved: {');
    // Not zod's dump of the whole union.
    expect(payload.message).not.toMatch(/invalid_union|discriminator/);
  });

  it("a declared type with a wrong field is EPLUGIN naming the field", async () => {
    const root = project([fixture("undeclared-event-plugin.mjs")]);
    const result = await cli(["run", "wave_badly", "--trust", "--root", root, "--input", "{}"]);
    expect(result.code).toBe(1);
    const payload = JSON.parse(result.stdout) as { kind: string; code: string; message: string };
    expect(payload).toMatchObject({ kind: "error", code: "EPLUGIN", event_type: "wave/greeted" });
    expect(payload.message).toContain(
      'plugin wave\'s tool wave_badly emitted a "wave/greeted" event that does not match its declaration',
    );
    expect(payload.message).toMatch(/expected string, received number\s+→ at name/);
  });
});
