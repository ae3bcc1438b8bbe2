import { describe, expect, it } from "vitest";
import { randomBytes, randomUUID } from "./random-id.js";

describe("random ids without node:crypto", () => {
  it("makes version 4 UUIDs, all different", () => {
    const seen = new Set<string>();
    for (let i = 0; i < 2000; i++) {
      const id = randomUUID();
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      seen.add(id);
    }
    expect(seen.size).toBe(2000);
  });

  it("hands out each byte once, across pool refills, and larger requests too", () => {
    const chunks = Array.from({ length: 300 }, () => randomBytes(7).toString("hex"));
    expect(new Set(chunks).size).toBe(300);
    expect(randomBytes(64)).toHaveLength(64);
    expect(randomBytes(1000)).toHaveLength(1000);
    // Not all zero: a pool handed out is wiped, so a bug that re-served it would show zeros.
    const many = Buffer.concat(Array.from({ length: 100 }, () => randomBytes(16)));
    expect(many.filter((b) => b === 0).length).toBeLessThan(many.length / 16);
  });
});
