import { describe, expect, it } from "vitest";
import { MAX_JSON_DEPTH, nestsDeeperThan, valueNestsDeeperThan } from "./json-depth.js";

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

describe("valueNestsDeeperThan", () => {
  const nested = (depth: number): unknown => {
    let value: unknown = 1;
    for (let i = 0; i < depth; i++) value = i % 2 ? { a: value } : [value];
    return value;
  };

  it("counts objects and arrays as the text form does", () => {
    for (const depth of [0, 1, 3, 128, 129]) {
      const value = nested(depth);
      expect(valueNestsDeeperThan(value, 3)).toBe(nestsDeeperThan(JSON.stringify(value), 3));
      expect(valueNestsDeeperThan(value)).toBe(depth > MAX_JSON_DEPTH);
    }
  });

  it("ends at the bound on a cycle, and walks 100 000 levels without overflowing", () => {
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(valueNestsDeeperThan(cycle)).toBe(true);
    expect(valueNestsDeeperThan(nested(100_000))).toBe(true);
  });
});
