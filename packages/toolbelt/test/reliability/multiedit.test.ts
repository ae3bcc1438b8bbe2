import { promises as fs } from "node:fs";
import path from "node:path";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { assertBuilt, cli, tempRoot } from "../cli-harness.js";

// Attacks through a multi-edit call (edits: [...]): one harmless edit as cover for one that reaches
// outside the root or asks for unbounded work. End to end through the built CLI with real files.

let root: string;
let outside: string;
beforeAll(() => assertBuilt());
beforeEach(() => {
  root = tempRoot("tb-multiedit-attack-");
  outside = tempRoot("tb-multiedit-outside-");
});
afterEach(async () => {
  await fs.rm(root, { recursive: true, force: true });
  await fs.rm(outside, { recursive: true, force: true });
});

const run = (input: unknown, extra: string[] = []) =>
  cli(["run", "edit_file", "--root", root, "--input", "-", ...extra], { input: JSON.stringify(input) });

describe("multi-edit attacks", () => {
  it("a symlink to a file outside the root, hidden among edits: EPATH_ESCAPE, neither file written", async () => {
    await fs.writeFile(path.join(root, "a.txt"), "alpha\n");
    await fs.writeFile(path.join(outside, "secret.txt"), "token=1\n");
    await fs.symlink(path.join(outside, "secret.txt"), path.join(root, "notes.txt"));
    const r = await run({
      edits: [
        { path: "a.txt", old_text: "alpha", new_text: "ALPHA" },
        { path: "notes.txt", old_text: "token=1", new_text: "token=stolen" },
      ],
    });
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ code: "EPATH_ESCAPE" });
    expect(await fs.readFile(path.join(outside, "secret.txt"), "utf8")).toBe("token=1\n");
    expect(await fs.readFile(path.join(root, "a.txt"), "utf8")).toBe("alpha\n");
  });

  it("an edit creating a file through a symlinked directory outside the root: refused, nothing written", async () => {
    await fs.writeFile(path.join(root, "a.txt"), "alpha\n");
    await fs.symlink(outside, path.join(root, "out"));
    const r = await run({
      edits: [
        { path: "a.txt", old_text: "alpha", new_text: "ALPHA" },
        { path: "out/planted.sh", old_text: "", new_text: "#!/bin/sh\n" },
      ],
    });
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ code: "EPATH_ESCAPE" });
    expect(await fs.readdir(outside)).toEqual([]);
    expect(await fs.readFile(path.join(root, "a.txt"), "utf8")).toBe("alpha\n");
  });

  it("more edits than the bound are refused, naming it; the bound itself finishes", async () => {
    const lines = Array.from({ length: 100 }, (_, i) => `line ${i}`);
    await fs.writeFile(path.join(root, "a.txt"), `${lines.join("\n")}\n`);
    const over = await run({
      path: "a.txt",
      edits: Array.from({ length: 101 }, (_, i) => ({ old_text: `line ${i}\n`, new_text: `LINE ${i}\n` })),
    });
    expect(over.code).toBe(1);
    const refused = JSON.parse(over.stdout) as { code: string; message: string };
    expect(refused.code).toBe("EINVAL_INPUT");
    expect(refused.message).toContain("100");
    const atBound = await run({
      path: "a.txt",
      edits: lines.map((l) => ({ old_text: `${l}\n`, new_text: `${l.toUpperCase()}\n` })),
    });
    expect(atBound.stderr).toBe("");
    expect(atBound.code).toBe(0);
    expect(await fs.readFile(path.join(root, "a.txt"), "utf8")).toBe(
      `${lines.map((l) => l.toUpperCase()).join("\n")}\n`,
    );
  });

  it("edits whose searches match everywhere (one character, a thousand times): EMULTI_MATCH, bounded answer", async () => {
    await fs.writeFile(path.join(root, "a.txt"), "x\n".repeat(5000));
    const r = await run({
      path: "a.txt",
      edits: Array.from({ length: 100 }, () => ({ old_text: "x", new_text: "y" })),
    });
    expect(r.code).toBe(1);
    const payload = JSON.parse(r.stdout) as { code: string; match_lines?: number[]; message: string };
    expect(payload.code).toBe("EMULTI_MATCH");
    // Only the first edit is tried (the file's later edits would see text that never existed), and
    // its match list is capped.
    expect(payload.message).toContain("1 of 100 edits failed");
    expect((payload.match_lines ?? []).length).toBeLessThanOrEqual(50);
    expect(r.stdout.length).toBeLessThan(64 * 1024);
  });
});
