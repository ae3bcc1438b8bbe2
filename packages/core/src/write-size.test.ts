import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createSession } from "./index.js";

const MiB = 1024 * 1024;
let root: string;

beforeEach(async () => {
  root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "tb-write-size-")));
});
afterEach(() => fs.rm(root, { recursive: true, force: true }));

describe("write sizes", () => {
  it("lets a small change to a 3 MiB file through, but not a new 3 MiB file or a 2 MiB growth", async () => {
    const s = await createSession({ root });
    const big = path.join(root, "big.txt");
    const original = "x".repeat(3 * MiB);
    await fs.writeFile(big, original);
    const edited = `${original.slice(0, 100)}changed${original.slice(100)}`;
    await s.writeFile(big, edited);
    expect((await fs.stat(big)).size).toBe(3 * MiB + 7);
    await expect(s.writeFile(path.join(root, "new.txt"), original)).rejects.toMatchObject({
      code: "ETOO_LARGE",
    });
    await expect(s.writeFile(big, `${edited}${"y".repeat(2 * MiB + 1)}`)).rejects.toMatchObject({
      code: "ETOO_LARGE",
      message: expect.stringContaining("would grow from"),
    });
    expect((await fs.stat(big)).size).toBe(3 * MiB + 7);
    await s.close();
  });

  it("never writes a file over limits.fileMaxBytes", async () => {
    const s = await createSession({ root, config: { limits: { fileMaxBytes: 4 * MiB } } });
    const big = path.join(root, "big.txt");
    await fs.writeFile(big, "x".repeat(4 * MiB));
    await expect(s.writeFile(big, "x".repeat(4 * MiB + 1))).rejects.toMatchObject({
      code: "ETOO_LARGE",
      message: expect.stringContaining("limits.fileMaxBytes"),
    });
    await s.close();
  });
});
