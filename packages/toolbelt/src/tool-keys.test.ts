import { BUILTIN_TOOL_KEYS } from "@toolbelt/core";
import { describe, expect, it } from "vitest";
import { loadFamilies } from "./families.js";

// Core validates tools.* keys against BUILTIN_TOOL_KEYS even when a session loads one family; a new
// built-in tool, family or profile name missing from that list would make a valid config an error.
describe("BUILTIN_TOOL_KEYS", () => {
  it("names every family, tool and profile name of the built-in families", async () => {
    const keys = new Set<string>(["tool_search"]);
    for (const family of await loadFamilies()) {
      keys.add(family.name);
      for (const tool of family.tools ?? []) {
        keys.add(tool.name);
        keys.add(tool.family);
        for (const variant of Object.values(tool.profiles ?? {}))
          if (variant && variant.name !== undefined) keys.add(variant.name);
      }
    }
    expect([...BUILTIN_TOOL_KEYS].sort()).toEqual([...keys].sort());
  });
});
