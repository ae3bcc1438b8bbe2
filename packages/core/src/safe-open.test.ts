import { execFileSync, spawnSync } from "node:child_process";
import {
  closeSync,
  existsSync,
  fstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lacks } from "../../../test-support/capability.js";
import { removeFileAt, writeFileAtomic } from "./atomic-write.js";
import { CheckedDir, DirRef, hasProcFd, openForRead } from "./safe-open.js";
import { isStaleTemp, sweepJournals, tempName } from "./temp-files.js";

let base: string;
let root: string;
let outside: string;
let state: string;
const savedState = process.env.TOOLBELT_STATE_DIR;

beforeAll(() => {
  base = realpathSync(mkdtempSync(path.join(os.tmpdir(), "tb-safe-open-")));
  root = path.join(base, "root");
  outside = path.join(base, "outside");
  state = path.join(base, "state");
  mkdirSync(path.join(root, "d"), { recursive: true });
  mkdirSync(outside);
  writeFileSync(path.join(root, "d", "f.txt"), "inside\n");
  writeFileSync(path.join(outside, "f.txt"), "OUTSIDE\n");
  process.env.TOOLBELT_STATE_DIR = state;
});
afterAll(() => {
  rmSync(base, { recursive: true, force: true });
  if (savedState === undefined) delete process.env.TOOLBELT_STATE_DIR;
  else process.env.TOOLBELT_STATE_DIR = savedState;
});

/** Replaces `root/d` by a symlink to outside, as a swapping attacker would between check and open. */
function swapIn(): () => void {
  renameSync(path.join(root, "d"), path.join(root, "d.real"));
  symlinkSync(outside, path.join(root, "d"));
  return () => {
    rmSync(path.join(root, "d"));
    renameSync(path.join(root, "d.real"), path.join(root, "d"));
  };
}

/** A pid that belonged to a process that has exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]);
  return Number(child.stdout.toString());
}

const noProcFd = lacks("linux", !hasProcFd() && "no /proc/self/fd: the descriptor checks fall back to paths");

describe.skipIf(noProcFd)("opens that hold their path check", () => {
  it("reads the file of the checked directory, and refuses when a symlink was swapped in", async () => {
    const abs = path.join(root, "d", "f.txt");
    const handle = await openForRead(abs, { root });
    expect((await handle.readFile()).toString()).toBe("inside\n");
    await handle.close();
    const restore = swapIn();
    try {
      await expect(openForRead(abs, { root })).rejects.toMatchObject({ code: "EPATH_ESCAPE" });
    } finally {
      restore();
    }
  });

  it("does not follow a symlink in the last component", async () => {
    symlinkSync(path.join(outside, "f.txt"), path.join(root, "d", "link"));
    try {
      await expect(openForRead(path.join(root, "d", "link"), { root })).rejects.toMatchObject({
        code: "ELOOP",
      });
    } finally {
      rmSync(path.join(root, "d", "link"));
    }
  });

  it("opens a FIFO without blocking", async () => {
    const fifo = path.join(root, "d", "pipe");
    execFileSync("mkfifo", [fifo]);
    try {
      const handle = await openForRead(fifo, { root });
      expect((await handle.stat()).isFIFO()).toBe(true);
      await handle.close();
    } finally {
      rmSync(fifo);
    }
  });

  it("writes nothing outside, and leaves no temp file there, when the parent was swapped", async () => {
    const restore = swapIn();
    try {
      await expect(writeFileAtomic(path.join(root, "d", "f.txt"), "pwned", { root })).rejects.toMatchObject({
        code: "EPATH_ESCAPE",
      });
      await expect(removeFileAt(path.join(root, "d", "f.txt"), root)).rejects.toMatchObject({
        code: "EPATH_ESCAPE",
      });
    } finally {
      restore();
    }
    expect(readFileSync(path.join(outside, "f.txt"), "utf8")).toBe("OUTSIDE\n");
    expect(readdirSync(outside)).toEqual(["f.txt"]);
  });

  it("creates missing parents through their verified parents, never at or above the root", async () => {
    await writeFileAtomic(path.join(root, "new", "deep", "x.txt"), "x", { root });
    expect(readFileSync(path.join(root, "new", "deep", "x.txt"), "utf8")).toBe("x");
    const gone = path.join(base, "not-a-root");
    await expect(writeFileAtomic(path.join(gone, "x.txt"), "x", { root: gone })).rejects.toMatchObject({
      code: "ENOENT",
    });
    expect(existsSync(gone)).toBe(false);
  });

  it("proves a directory descriptor is the path asked for", async () => {
    symlinkSync(path.join(root, "d"), path.join(root, "alias"));
    try {
      const ref = await DirRef.open(path.join(root, "d"));
      expect(await ref.currentPath()).toBe(path.join(root, "d"));
      await ref.close();
      await expect(DirRef.open(path.join(root, "alias"))).rejects.toMatchObject({
        code: "EPATH_ESCAPE",
      });
    } finally {
      rmSync(path.join(root, "alias"));
    }
  });
});

describe.skipIf(noProcFd)("CheckedDir: a directory held for a synchronous walk", () => {
  it("lists and opens inside the directory it holds, whatever its name points to now", () => {
    const dir = CheckedDir.open(path.join(root, "d"));
    const restore = swapIn();
    try {
      // `d` is a symlink to outside now: the held directory is still the one that was opened.
      expect(readdirSync(dir.listPath())).toEqual(["f.txt"]);
      const fd = dir.openFile("f.txt");
      try {
        expect(readFileSync(fd, "utf8")).toBe("inside\n");
      } finally {
        closeSync(fd);
      }
      expect(() => CheckedDir.open(path.join(root, "d"))).toThrow(
        expect.objectContaining({ code: "EPATH_ESCAPE" }),
      );
    } finally {
      restore();
      dir.close();
    }
  });

  it("never follows a symlink to a child directory or file, and opens a FIFO without blocking", () => {
    const top = CheckedDir.open(root);
    symlinkSync(outside, path.join(root, "d", "out"));
    symlinkSync(path.join(outside, "f.txt"), path.join(root, "d", "leak"));
    execFileSync("mkfifo", [path.join(root, "d", "pipe")]);
    const d = top.child("d");
    try {
      expect(d.path).toBe(path.join(root, "d"));
      expect(() => d.child("out")).toThrow(
        expect.objectContaining({ code: expect.stringMatching(/^(ENOTDIR|ELOOP)$/) }),
      );
      expect(() => d.openFile("leak")).toThrow(expect.objectContaining({ code: "ELOOP" }));
      expect(() => d.openFile("../d/f.txt")).toThrow(expect.objectContaining({ code: "EINVAL_INPUT" }));
      const fd = d.openFile("pipe");
      try {
        expect(fstatSync(fd).isFIFO()).toBe(true);
      } finally {
        closeSync(fd);
      }
    } finally {
      for (const name of ["out", "leak", "pipe"]) rmSync(path.join(root, "d", name));
      d.close();
      top.close();
    }
    // Closing twice is harmless; using it after close is an error, never a silent open by path.
    d.close();
    expect(() => d.openFile("f.txt")).toThrow(/after close/);
  });
});

describe("temp files of killed writers", () => {
  it("names temp files with the writer's pid and tells stale ones from live ones", () => {
    const mine = tempName("a.txt");
    expect(mine).toMatch(/^\.a\.txt\.[0-9a-f]{16}\.tbtmp$/);
    // Ours but not being written now: stale. Another live process's (pid 1): kept.
    expect(isStaleTemp(root, mine)).toBe(true);
    expect(isStaleTemp(root, ".a.txt.0000000100000000.tbtmp")).toBe(false);
    const dead = deadPid().toString(16).padStart(8, "0");
    expect(isStaleTemp(root, `.a.txt.${dead}deadbeef.tbtmp`)).toBe(true);
    expect(isStaleTemp(root, "a.txt")).toBe(false);
  });

  it("removes a dead writer's temp file on the next write in that directory", async () => {
    const dir = path.join(root, "sweep-on-write");
    mkdirSync(dir);
    const dead = deadPid().toString(16).padStart(8, "0");
    const stale = `.big.bin.${dead}00c0ffee.tbtmp`;
    const kept = ".other.0000000100000000.tbtmp";
    writeFileSync(path.join(dir, stale), "x".repeat(1000));
    writeFileSync(path.join(dir, kept), "live writer");
    await writeFileAtomic(path.join(dir, "f.txt"), "new", { root });
    expect(readdirSync(dir).sort()).toEqual([kept, "f.txt"].sort());
  });

  it("cleans the directories a dead process's journal names, at session start", async () => {
    const dir = path.join(root, "journaled");
    mkdirSync(dir);
    const pid = deadPid();
    const stale = `.x.${pid.toString(16).padStart(8, "0")}12345678.tbtmp`;
    writeFileSync(path.join(dir, stale), "leftover");
    mkdirSync(path.join(state, "writes"), { recursive: true });
    writeFileSync(path.join(state, "writes", `${pid}.dirs`), `${dir}\n/no/such/dir\n`);
    expect(await sweepJournals()).toBe(1);
    expect(readdirSync(dir)).toEqual([]);
    expect(existsSync(path.join(state, "writes", `${pid}.dirs`))).toBe(false);
  });
});
