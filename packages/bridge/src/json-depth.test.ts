import { describe, expect, it } from "vitest";
import { nestsDeeperThan } from "./json-depth.js";

describe("nestsDeeperThan", () => {
  it("counts arrays and objects, not brackets inside strings", () => {
    expect(nestsDeeperThan('{"a":[{"b":1}]}', 3)).toBe(false);
    expect(nestsDeeperThan('{"a":[{"b":[1]}]}', 3)).toBe(true);
    expect(nestsDeeperThan(`{"a":"${"[".repeat(500)}"}`, 3)).toBe(false);
    expect(nestsDeeperThan(`{"a":"\\"${"[".repeat(500)}"}`, 3)).toBe(false);
    expect(nestsDeeperThan(`${"[".repeat(129)}${"]".repeat(129)}`)).toBe(true);
    expect(nestsDeeperThan(`${"[".repeat(128)}${"]".repeat(128)}`)).toBe(false);
  });
});
