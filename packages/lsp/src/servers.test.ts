import { chmodSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  builtinTypescriptSpec,
  findTypescriptLanguageServer,
  resolveServerCommand,
  type ServerSpec,
  tsserverPathFor,
  whichSync,
} from "./servers.js";

const dirs: string[] = [];
const savedPath = process.env.PATH;
afterEach(() => {
  process.env.PATH = savedPath;
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A project whose node_modules holds a tsserver.js, a typescript-language-server and `evil-ls`. */
function hostileProject(): string {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), "tb-lsp-servers-")));
  dirs.push(root);
  mkdirSync(path.join(root, "node_modules/typescript/lib"), { recursive: true });
  writeFileSync(path.join(root, "node_modules/typescript/lib/tsserver.js"), "");
  mkdirSync(path.join(root, "node_modules/.bin"), { recursive: true });
  for (const name of ["typescript-language-server", "evil-ls"]) {
    writeFileSync(path.join(root, "node_modules/.bin", name), "#!/bin/sh\n");
    chmodSync(path.join(root, "node_modules/.bin", name), 0o755);
  }
  return root;
}

const spec = (command: string): ServerSpec => ({
  name: "evil",
  command,
  args: [],
  extensions: [".txt"],
  builtin: false,
  diagnostics: "standard",
  origin: "config",
});

describe("where a language server may come from", () => {
  it("names toolbelt's own tsserver for an untrusted project that ships one, and lets a trusted one use its own", () => {
    const root = hostileProject();
    const ours = tsserverPathFor({ root, trusted: false });
    expect(ours).toBeDefined();
    expect(ours?.startsWith(root)).toBe(false);
    expect(tsserverPathFor({ root, trusted: true })).toBeUndefined();
    const untrusted = builtinTypescriptSpec({ root, trusted: false }, "typescript-language-server");
    expect(untrusted?.initializationOptions).toMatchObject({ tsserver: { path: ours } });
  });

  it("runs the project's node_modules/.bin/typescript-language-server only when trusted", () => {
    const root = hostileProject();
    expect(findTypescriptLanguageServer({ root, trusted: false })?.origin.startsWith("project:")).toBe(false);
    expect(findTypescriptLanguageServer({ root, trusted: true })?.command).toBe(
      path.join(root, "node_modules/.bin/typescript-language-server"),
    );
  });

  it("skips PATH entries that are relative or lead into the untrusted root", () => {
    const root = hostileProject();
    const bin = path.join(root, "node_modules/.bin");
    const cwd = process.cwd();
    try {
      process.chdir(root);
      for (const entry of ["node_modules/.bin", "./node_modules/.bin", bin]) {
        process.env.PATH = `${entry}${path.delimiter}${savedPath}`;
        expect(whichSync("evil-ls", { outside: root })).toBeUndefined();
        expect(() => resolveServerCommand(spec("evil-ls"), { root, trusted: false })).toThrow(
          /not found on PATH \(PATH entries inside the untrusted project are skipped\)/,
        );
      }
      process.env.PATH = `${bin}${path.delimiter}${savedPath}`;
      expect(resolveServerCommand(spec("evil-ls"), { root, trusted: true })).toBe(path.join(bin, "evil-ls"));
      // Entries outside the root still work for an untrusted project.
      expect(resolveServerCommand(spec("sh"), { root, trusted: false })).toMatch(/\/sh$/);
    } finally {
      process.chdir(cwd);
    }
  });
});
