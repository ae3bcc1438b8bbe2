import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createSession } from "@toolbelt/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { family } from "./index.js";

let root: string;
beforeEach(async () => {
  root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "tb-edit-large-")));
});
afterEach(() => fs.rm(root, { recursive: true, force: true }));

describe("edit_file on a file over fileWriteMaxBytes", () => {
  it("applies a small edit to a 3 MiB file (the limit bounds what the edit adds, not the file)", async () => {
    const lines = Array.from({ length: 150_000 }, (_, i) => `line ${i} ${"-".repeat(12)}`);
    const text = `${lines.join("\n")}\n`;
    expect(Buffer.byteLength(text)).toBeGreaterThan(3 * 1024 * 1024);
    await fs.writeFile(path.join(root, "big.txt"), text);
    const s = await createSession({ root, plugins: [family] });
    const out = await s.call("edit_file", {
      path: "big.txt",
      old_text: "line 75000 ------------",
      new_text: "line 75000 edited",
    });
    expect(out).toMatchObject({ kind: "edit_result" });
    const after = await fs.readFile(path.join(root, "big.txt"), "utf8");
    expect(after.split("\n")[75000]).toBe("line 75000 edited");
    // Growing it by more than fileWriteMaxBytes in one edit is still refused, nothing written.
    const huge = await s.call("edit_file", {
      path: "big.txt",
      old_text: "line 1 ------------",
      new_text: "z".repeat(2 * 1024 * 1024 + 100),
    });
    expect(huge).toMatchObject({ kind: "error", code: "ETOO_LARGE" });
    expect(await fs.readFile(path.join(root, "big.txt"), "utf8")).toBe(after);
    await s.close();
  });
});
