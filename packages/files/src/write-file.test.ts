import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createSession, parseToolText, type Session } from "@toolbelt/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { family } from "./index.js";

let root: string;
let session: Session;

beforeEach(async () => {
  root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "tb-write-")));
  session = await createSession({ root, plugins: [family], config: { limits: { fileWriteMaxBytes: 64 } } });
});
afterEach(async () => {
  await session.close();
  await fs.rm(root, { recursive: true, force: true });
});

describe("write_file", () => {
  it("creates a file with its parents and says created and the size", async () => {
    const { payload, text } = await session.callWithText("write_file", {
      path: "a/b/c.txt",
      content: "héllo\n",
    });
    expect(payload).toMatchObject({ kind: "file_written", path: "a/b/c.txt", result: "created", bytes: 7 });
    expect(await fs.readFile(path.join(root, "a/b/c.txt"), "utf8")).toBe("héllo\n");
    const parsed = parseToolText(text);
    expect(parsed.headers).toMatchObject({ Kind: "file_written", Result: "created", Bytes: "7" });
  });

  it("overwrites, keeps the file mode and leaves no temporary file", async () => {
    const file = path.join(root, "run.sh");
    await fs.writeFile(file, "old\n");
    await fs.chmod(file, 0o755);
    const p = await session.call("write_file", { path: "run.sh", content: "#!/bin/sh\n" });
    expect(p).toMatchObject({ result: "overwritten", bytes: 10 });
    expect((await fs.stat(file)).mode & 0o777).toBe(0o755);
    expect(await fs.readdir(root)).toEqual(["run.sh"]);
  });

  it("refuses content over fileWriteMaxBytes with ETOO_LARGE and writes nothing", async () => {
    const p = await session.call("write_file", { path: "big.txt", content: "x".repeat(65) });
    expect(p).toMatchObject({ kind: "error", code: "ETOO_LARGE" });
    await expect(fs.stat(path.join(root, "big.txt"))).rejects.toThrow();
  });

  it("refuses paths outside the root, also through a symlinked directory", async () => {
    const outside = await fs.mkdtemp(path.join(os.tmpdir(), "tb-out-"));
    await fs.symlink(outside, path.join(root, "out"));
    expect(await session.call("write_file", { path: "../x.txt", content: "" })).toMatchObject({
      code: "EPATH_ESCAPE",
    });
    expect(await session.call("write_file", { path: "out/new/x.txt", content: "" })).toMatchObject({
      code: "EPATH_ESCAPE",
    });
    expect(await fs.readdir(outside)).toEqual([]);
    await fs.rm(outside, { recursive: true, force: true });
  });

  it("refuses to replace a directory", async () => {
    await fs.mkdir(path.join(root, "d"));
    expect(await session.call("write_file", { path: "d", content: "x" })).toMatchObject({ code: "EISDIR" });
  });
});

describe("write_file in the mouaif profile", () => {
  it("answers relPath, chars and lines", async () => {
    const s = await createSession({ root, plugins: [family], profile: "mouaif" });
    try {
      expect(await s.call("write_file", { path: "d/x.txt", content: "a\nbc\n" })).toMatchObject({
        relPath: "d/x.txt",
        chars: 5,
        lines: 2,
      });
      expect(await s.call("write_file", { path: "e.txt", content: "" })).toMatchObject({
        chars: 0,
        lines: 0,
      });
    } finally {
      await s.close();
    }
  });
});
