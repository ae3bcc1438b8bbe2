import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ToolbeltError } from "./errors.js";
import { checkPlugin, definePlugin, PLUGIN_API_VERSION } from "./plugin.js";
import { createSession } from "./session.js";

const tool = {
  name: "shout",
  family: "loud",
  access: "read",
  description: "Shouts.",
  input: z.object({}),
  execute: () => ({ kind: "shouted" }),
};

/** What checkPlugin throws for `value`, checked to be an EPLUGIN ToolbeltError. */
function refusal(value: unknown, from?: string): string {
  try {
    checkPlugin(value, from);
  } catch (error) {
    expect(ToolbeltError.isInstance(error)).toBe(true);
    expect((error as ToolbeltError).code).toBe("EPLUGIN");
    return (error as Error).message;
  }
  throw new Error("checkPlugin accepted it");
}

describe("checkPlugin", () => {
  it("accepts a plugin definePlugin made, and hands back the same object", () => {
    const plugin = definePlugin({ name: "loud", tools: [tool] });
    expect(checkPlugin(plugin)).toBe(plugin);
  });

  it.each([
    [
      undefined,
      "./none.mjs",
      "./none.mjs exports no plugin object (export default definePlugin({ name, tools })); got undefined",
    ],
    [[], undefined, "a plugin is an object (see definePlugin); got an array"],
    [{ apiVersion: 1 }, "./x.mjs", 'a plugin needs a "name" (a non-empty string) (./x.mjs); got undefined'],
    [
      { name: "old", apiVersion: 0 },
      undefined,
      'plugin old speaks plugin API 0 ("apiVersion"); this toolbelt speaks 1',
    ],
    [{ name: "p", apiVersion: 1, version: 2 }, undefined, 'plugin p: "version" must be a string; got 2'],
    [
      { name: "p", apiVersion: 1, tools: {} },
      undefined,
      'plugin p: "tools" must be an array of tools (defineTool); got an object',
    ],
    [{ name: "p", apiVersion: 1, setup: "go" }, undefined, 'plugin p: "setup" must be a function; got "go"'],
    [
      { name: "p", apiVersion: 1, tools: [null] },
      "pkg",
      "plugin p (pkg): tools[0] is not a tool (see defineTool); got null",
    ],
    [
      { name: "p", apiVersion: 1, tools: [{ ...tool, execute: undefined }] },
      undefined,
      'plugin p: tools[0] (shout): "execute" must be a function (see defineTool); got undefined',
    ],
    [
      { name: "p", apiVersion: 1, tools: [tool, { ...tool, name: "two words" }] },
      undefined,
      'plugin p: tools[1] (two words): "name" must be letters, digits, _ and - (max 64) (see defineTool); got "two words"',
    ],
    [
      { name: "p", apiVersion: 1, tools: [{ ...tool, input: { type: "object" } }] },
      undefined,
      'plugin p: tools[0] (shout): "input" must be a zod schema (see defineTool); got an object',
    ],
    [
      { name: "p", apiVersion: 1, tools: [{ ...tool, access: "admin" }] },
      undefined,
      'plugin p: tools[0] (shout): "access" must be one of read, write, execute, interact (see defineTool); got "admin"',
    ],
    [
      { name: "p", apiVersion: 1, skills: [{ name: "s" }] },
      undefined,
      'plugin p: skills[0] needs a "name" and a "description" (strings); got an object',
    ],
  ])("refuses %j (from %s) as EPLUGIN naming the plugin and the field", (value, from, message) => {
    expect(refusal(value, from)).toBe(message);
  });

  it("createSession refuses a malformed plugin as EPLUGIN too", async () => {
    const made = createSession({
      root: process.cwd(),
      // A plugin object as JavaScript can pass it, without the tool's execute.
      plugins: [
        { name: "loud", apiVersion: PLUGIN_API_VERSION, tools: [{ ...tool, execute: undefined }] } as never,
      ],
    });
    await expect(made).rejects.toMatchObject({
      code: "EPLUGIN",
      message: expect.stringContaining("plugin loud: tools[0] (shout)"),
    });
  });
});
