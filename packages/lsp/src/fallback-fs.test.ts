import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SymbolInformation } from "vscode-languageserver-protocol";
import { lacks } from "../../../test-support/capability.js";
import { TsMorphBackend } from "./fallback.js";
import { RootFileSystem } from "./fallback-fs.js";
import { projectFiles } from "./project-files.js";

const noFifo = lacks("linux", spawnSync("mkfifo", ["--version"]).error && "no mkfifo on PATH");

let base: string;
let root: string;
let outside: string;

function write(file: string, text: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
}

beforeAll(() => {
  base = realpathSync(mkdtempSync(path.join(os.tmpdir(), "tb-fallback-fs-")));
  root = path.join(base, "root");
  outside = path.join(base, "outside");
  write(path.join(outside, "secret.ts"), 'export const OUTSIDE_SECRET = "outside-secret";\n');
  write(
    path.join(outside, "tsconfig.json"),
    JSON.stringify({ compilerOptions: { strict: true }, files: ["./secret.ts"] }),
  );
  write(path.join(root, "src/a.ts"), 'export const inside = "inside";\n');
  symlinkSync(outside, path.join(root, "lib"));
  symlinkSync(path.join(root, "src/a.ts"), path.join(root, "a-link.ts"));
  // The project's own tsconfig is a link to one outside that names the outside file.
  symlinkSync(path.join(outside, "tsconfig.json"), path.join(root, "tsconfig.json"));
  if (!noFifo) execFileSync("mkfifo", [path.join(root, "src/pipe.ts")]);
});

afterAll(() => {
  rmSync(base, { recursive: true, force: true });
});

describe("the fallback's file system", () => {
  it("answers only for real paths inside the root", () => {
    const fs = new RootFileSystem(projectFiles(root));
    expect(fs.fileExistsSync(path.join(root, "src/a.ts"))).toBe(true);
    expect(fs.readFileSync(path.join(root, "src/a.ts"))).toContain('"inside"');
    expect(fs.realpathSync(path.join(root, "a-link.ts"))).toBe(path.join(root, "src/a.ts"));
    for (const p of [
      path.join(root, "lib/secret.ts"),
      path.join(outside, "secret.ts"),
      path.join(root, "tsconfig.json"),
    ]) {
      expect(fs.fileExistsSync(p)).toBe(false);
      expect(() => fs.readFileSync(p)).toThrow(expect.objectContaining({ code: "ENOENT" }));
      expect(() => fs.realpathSync(p)).toThrow(expect.objectContaining({ code: "ENOENT" }));
    }
    expect(fs.directoryExistsSync(path.join(root, "lib"))).toBe(false);
    expect(fs.directoryExistsSync(outside)).toBe(false);
    expect(() => fs.readDirSync(outside)).toThrow(expect.objectContaining({ code: "ENOENT" }));
    expect(() => fs.readDirSync(path.join(root, "lib"))).toThrow(expect.objectContaining({ code: "ENOENT" }));
    const lib = fs.readDirSync(root).find((e) => e.name === path.join(root, "lib"));
    expect(lib).toMatchObject({ isFile: false, isDirectory: false, isSymlink: true });
    expect(fs.getCurrentDirectory()).toBe(root);
  });

  it("never writes and takes no globs", () => {
    const fs = new RootFileSystem(projectFiles(root));
    expect(() => fs.writeFileSync(path.join(root, "x.ts"))).toThrow(/does not change files/);
    expect(() => fs.mkdirSync(path.join(root, "d"))).toThrow(/does not change files/);
    expect(() => fs.globSync([`${root}/**/*.ts`])).toThrow(/not globs/);
    expect(fs.globSync([path.join(root, "src/a.ts"), path.join(root, "lib/secret.ts")])).toEqual([
      path.join(root, "src/a.ts"),
    ]);
  });

  it.skipIf(noFifo)("does not block on a FIFO: it is no file", () => {
    const fs = new RootFileSystem(projectFiles(root));
    expect(fs.fileExistsSync(path.join(root, "src/pipe.ts"))).toBe(false);
    expect(() => fs.readFileSync(path.join(root, "src/pipe.ts"))).toThrow(
      expect.objectContaining({ code: "ENOENT" }),
    );
  });

  it("a tsconfig that is a link out is no tsconfig: the folder's own files are served, nothing outside", async () => {
    const backend = new TsMorphBackend(root);
    const symbols = await backend.request<SymbolInformation[]>("workspace/symbol", { query: "inside" });
    expect(symbols.map((s) => s.name)).toContain("inside");
    const secret = await backend.request<SymbolInformation[]>("workspace/symbol", {
      query: "OUTSIDE_SECRET",
    });
    expect(secret).toEqual([]);
    expect(backend.text(path.join(outside, "secret.ts"))).toBeUndefined();
  });
});
