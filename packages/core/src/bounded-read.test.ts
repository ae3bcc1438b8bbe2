import { execFileSync } from "node:child_process";
import {
  mkdirSync,
  mkdtempSync,
  realpathSync,
  rmSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lacks } from "../../../test-support/capability.js";
import { MAX_CONFIG_BYTES, readFileInRoot, readRegularFile, readStreamBounded } from "./bounded-read.js";
import { readConfigFile } from "./config.js";
import { ToolbeltError } from "./errors.js";
import { listTrustedProjects } from "./trust-store.js";

const linux = process.platform === "linux";
const notLinux = lacks("linux", !linux && `FIFOs, /dev/zero and /proc files: this is ${process.platform}`);
let base: string;
let root: string;
let outside: string;

function failure(fn: () => unknown): ToolbeltError {
  try {
    fn();
  } catch (error) {
    if (ToolbeltError.isInstance(error)) return error;
    throw error;
  }
  throw new Error("expected a ToolbeltError");
}

beforeAll(() => {
  base = realpathSync(mkdtempSync(path.join(os.tmpdir(), "tb-bounded-")));
  root = path.join(base, "root");
  outside = path.join(base, "outside");
  mkdirSync(path.join(root, "docs"), { recursive: true });
  mkdirSync(outside);
  writeFileSync(path.join(root, "a.txt"), "hello\n");
  writeFileSync(path.join(outside, "secret"), "SECRET\n");
  symlinkSync(path.join(outside, "secret"), path.join(root, "abs-link"));
  symlinkSync("../outside/secret", path.join(root, "rel-link"));
  symlinkSync("a.txt", path.join(root, "inside-link"));
  symlinkSync(outside, path.join(root, "dir-link"));
  symlinkSync(path.join(root, "missing"), path.join(root, "dangling"));
  if (linux) {
    execFileSync("mkfifo", [path.join(root, "fifo")]);
    symlinkSync("/dev/zero", path.join(root, "zero"));
  }
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

describe("readFileInRoot", () => {
  it("reads a regular file of the root whole, by relative or absolute path", () => {
    for (const name of ["a.txt", path.join(root, "a.txt"), "inside-link"]) {
      const read = readFileInRoot(root, name, { maxBytes: 100 });
      expect(read.bytes.toString()).toBe("hello\n");
      expect(read).toMatchObject({ size: 6, truncated: false, path: path.join(root, "a.txt") });
    }
  });

  it("refuses a symlink (absolute or relative, or a directory on the way) leaving the root, never reading it", () => {
    for (const name of ["abs-link", "rel-link", "dir-link/secret", "../outside/secret"]) {
      const error = failure(() => readFileInRoot(root, name, { maxBytes: 100 }));
      expect(error.code).toBe("EPATH_ESCAPE");
      expect(error.details.reason).toBe("outside_root");
      expect(error.message).toContain("points outside");
      expect(error.message).not.toContain("SECRET");
    }
  });

  it("says ENOENT for a missing file and a dangling symlink", () => {
    for (const name of ["nope", "dangling"]) {
      const error = failure(() => readFileInRoot(root, name, { maxBytes: 100 }));
      expect(error).toMatchObject({ code: "ENOENT", details: { reason: "missing" } });
    }
  });

  it.skipIf(notLinux)("refuses a FIFO at once (no blocking open) and a directory: only regular files", () => {
    const fifo = failure(() => readFileInRoot(root, "fifo", { maxBytes: 100 }));
    expect(fifo).toMatchObject({ code: "EINVAL_INPUT", details: { reason: "not_regular" } });
    expect(fifo.message).toContain("is a FIFO, not a regular file");
    const dir = failure(() => readFileInRoot(root, "docs", { maxBytes: 100 }));
    expect(dir.message).toContain("is a directory, not a regular file");
  });

  it("reads at most maxBytes of a larger file and says it was cut (a sparse 4 GiB file too)", () => {
    writeFileSync(path.join(root, "big"), "0123456789");
    expect(readFileInRoot(root, "big", { maxBytes: 4 })).toMatchObject({ size: 10, truncated: true });
    expect(readFileInRoot(root, "big", { maxBytes: 4 }).bytes.toString()).toBe("0123");
    expect(readFileInRoot(root, "big", { maxBytes: 10 }).truncated).toBe(false);
    truncateSync(path.join(root, "big"), 4 * 1024 ** 3);
    const huge = readFileInRoot(root, "big", { maxBytes: 1024 });
    expect(huge).toMatchObject({ size: 4 * 1024 ** 3, truncated: true });
    expect(huge.bytes.length).toBe(1024);
  });

  it("an empty file is read as empty", () => {
    writeFileSync(path.join(root, "empty"), "");
    expect(readFileInRoot(root, "empty", { maxBytes: 10 })).toMatchObject({ size: 0, truncated: false });
  });
});

describe("readRegularFile (the user's own files)", () => {
  it("follows a symlink to a regular file, wherever it is", () => {
    expect(readRegularFile(path.join(root, "abs-link"), { maxBytes: 100 }).bytes.toString()).toBe("SECRET\n");
  });

  it.skipIf(notLinux)("refuses a FIFO and /dev/zero behind a symlink, at once", () => {
    expect(failure(() => readRegularFile(path.join(root, "fifo"), { maxBytes: 100 })).message).toContain(
      "is a FIFO",
    );
    expect(failure(() => readRegularFile(path.join(root, "zero"), { maxBytes: 100 })).message).toContain(
      "is a character device",
    );
  });

  it.skipIf(notLinux)(
    "a file with more bytes than fstat gave (a /proc file: size 0) is read to its end, bounded",
    () => {
      const whole = readRegularFile("/proc/self/status", { maxBytes: 1024 * 1024 });
      expect(whole.size).toBe(0);
      expect(whole.truncated).toBe(false);
      expect(whole.bytes.toString()).toContain("Name:");
      const cut = readRegularFile("/proc/self/status", { maxBytes: 10 });
      expect(cut).toMatchObject({ truncated: true });
      expect(cut.bytes.length).toBe(10);
    },
  );
});

describe("config files through the bounded readers", () => {
  it("a project config read `within` its root refuses a symlink out, without its text in the error", () => {
    mkdirSync(path.join(root, "configs"), { recursive: true });
    const config = path.join(root, "configs", "app.json");
    symlinkSync(path.join(outside, "secret"), config);
    try {
      const error = failure(() => readConfigFile(config, { optional: true, within: root }));
      expect(error.code).toBe("EINVAL_CONFIG");
      expect(error.message).toContain("points outside the project");
      expect(error.message).not.toContain("SECRET");
      // Without `within` (a trusted project, the user's file) the link is followed.
      expect(failure(() => readConfigFile(config)).message).toContain("is not valid JSON");
    } finally {
      rmSync(config);
    }
  });

  it("a config over MAX_CONFIG_BYTES is refused naming the limit; a missing optional one is undefined", () => {
    const file = path.join(base, "large.json");
    writeFileSync(file, `{"x":"${"a".repeat(MAX_CONFIG_BYTES)}"}`);
    const error = failure(() => readConfigFile(file));
    expect(error).toMatchObject({ code: "EINVAL_CONFIG", details: { limit: MAX_CONFIG_BYTES } });
    expect(error.message).toContain(`larger than ${MAX_CONFIG_BYTES} bytes`);
    expect(readConfigFile(path.join(base, "nope.json"), { optional: true })).toBeUndefined();
    expect(readConfigFile(path.join(base, "nope.json"), { optional: true, within: base })).toBeUndefined();
    expect(failure(() => readConfigFile(path.join(base, "nope.json"))).code).toBe("EINVAL_CONFIG");
  });

  it.skipIf(notLinux)("a FIFO as a config or as the trust list is an error at once, not a hang", () => {
    const dir = path.join(base, "user");
    mkdirSync(dir);
    execFileSync("mkfifo", [path.join(dir, "config.json")]);
    execFileSync("mkfifo", [path.join(dir, "trusted-projects.json")]);
    expect(
      failure(() => readConfigFile(path.join(dir, "config.json"), { optional: true })).message,
    ).toContain("is a FIFO");
    const trust = failure(() => listTrustedProjects(dir));
    expect(trust.code).toBe("EINVAL_CONFIG");
    expect(trust.message).toContain("is a FIFO");
  });
});

describe("readStreamBounded", () => {
  it("returns a stream's bytes up to the bound, and past it stops reading an endless stream and cancels it", async () => {
    const small = new Blob(["hello ", "world"]).stream();
    expect((await readStreamBounded(small, 11))?.toString()).toBe("hello world");
    let pulled = 0;
    let cancelled = false;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled++;
        controller.enqueue(new Uint8Array(1024));
      },
      cancel() {
        cancelled = true;
      },
    });
    expect(await readStreamBounded(endless, 10_000)).toBeUndefined();
    expect(cancelled).toBe(true);
    // Read up to the first chunk past the bound, not beyond (the queue may hold one more).
    expect(pulled).toBeLessThanOrEqual(12);
  });
});
