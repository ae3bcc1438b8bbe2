import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ToolbeltError } from "./errors.js";
import { PathResolver } from "./paths.js";

let base: string;
let root: string;
let outside: string;
let resolver: PathResolver;

beforeAll(() => {
  base = realpathSync(mkdtempSync(path.join(os.tmpdir(), "tb-paths-")));
  root = path.join(base, "root");
  outside = path.join(base, "outside");
  mkdirSync(path.join(root, "src", "deep"), { recursive: true });
  mkdirSync(outside);
  writeFileSync(path.join(root, "src", "a.ts"), "a");
  writeFileSync(path.join(outside, "secret.txt"), "secret");
  symlinkSync(outside, path.join(root, "out-dir"));
  symlinkSync(path.join(outside, "secret.txt"), path.join(root, "out-file"));
  symlinkSync(path.join(outside, "not-yet.txt"), path.join(root, "dangling-out"));
  symlinkSync(path.join(root, "src"), path.join(root, "src-link"));
  symlinkSync("src/a.ts", path.join(root, "rel-link"));
  symlinkSync("../outside", path.join(root, "rel-out"));
  symlinkSync("loop-b", path.join(root, "loop-a"));
  symlinkSync("loop-a", path.join(root, "loop-b"));
  resolver = new PathResolver(root);
});

afterAll(() => rmSync(base, { recursive: true, force: true }));

function code(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (error) {
    return ToolbeltError.isInstance(error) ? error.code : `thrown ${(error as Error).message}`;
  }
}

describe("PathResolver", () => {
  it("resolves relative, absolute and dotted paths inside the root", () => {
    expect(resolver.resolve("src/a.ts")).toEqual({
      abs: path.join(root, "src/a.ts"),
      rel: "src/a.ts",
      exists: true,
    });
    expect(resolver.resolve(path.join(root, "src", "a.ts")).rel).toBe("src/a.ts");
    expect(resolver.resolve("src/deep/../a.ts").rel).toBe("src/a.ts");
    expect(resolver.resolve("./").rel).toBe(".");
    expect(resolver.resolve("").rel).toBe(".");
  });

  it("resolves against a cwd inside the root", () => {
    expect(resolver.resolve("a.ts", path.join(root, "src")).rel).toBe("src/a.ts");
    expect(resolver.resolve("../src/a.ts", path.join(root, "src")).rel).toBe("src/a.ts");
  });

  it("follows symlinks that stay inside, also for files that do not exist yet", () => {
    expect(resolver.resolve("src-link/a.ts").rel).toBe("src/a.ts");
    expect(resolver.resolve("rel-link").rel).toBe("src/a.ts");
    const fresh = resolver.resolve("src-link/new/file.ts");
    expect(fresh).toMatchObject({ rel: "src/new/file.ts", exists: false });
  });

  const hostile: Array<[string, string]> = [
    ["..", "parent"],
    ["../outside/secret.txt", "sibling through .."],
    ["src/../../outside", "dotdot after a real dir"],
    ["/etc/passwd", "absolute elsewhere"],
    ["/", "filesystem root"],
    ["out-dir/secret.txt", "symlinked parent pointing out"],
    ["out-dir/new-file.txt", "new file under a symlinked parent pointing out"],
    ["out-file", "symlink to a file outside"],
    ["dangling-out", "dangling symlink pointing outside (a write target)"],
    ["rel-out/secret.txt", "relative symlink pointing out"],
    ["src/\0/a.ts", "NUL byte"],
    ["loop-a", "symlink loop"],
  ];
  it.each(hostile)("refuses %j (%s) with EPATH_ESCAPE", (input) => {
    expect(code(() => resolver.resolve(input))).toBe("EPATH_ESCAPE");
  });

  it("treats a very long name as invalid input, not a crash", () => {
    expect(code(() => resolver.resolve("x".repeat(5000)))).toBe("EINVAL_INPUT");
  });

  it("keeps a root given through a symlink", () => {
    const linkedRoot = path.join(base, "root-link");
    symlinkSync(root, linkedRoot);
    const viaLink = new PathResolver(linkedRoot);
    expect(viaLink.root).toBe(root);
    expect(viaLink.resolve(path.join(linkedRoot, "src/a.ts")).rel).toBe("src/a.ts");
  });

  it("refuses a root that does not exist", () => {
    expect(code(() => new PathResolver(path.join(base, "missing")))).toBe("ENOENT");
  });
});
