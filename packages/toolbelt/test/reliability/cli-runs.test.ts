import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, cli, lacksLandlock, REPO, tempRoot } from "../cli-harness.js";

// `toolbelt run lsp_*` loads only what the tool needs. Before: only the lsp family, so the shell
// family's command wrapper (the Landlock sandbox for language servers) was never registered and a
// language server started by `run` could write anywhere the user can. Now `run` loads shell too.

const SCRIPTED = path.join(REPO, "packages/lsp/src/__fixtures__/scripted-server.mjs");
const cleanup: string[] = [];
let userDir: string;

beforeAll(() => {
  assertBuilt();
  userDir = tempRoot("tb-runs-user-");
  cleanup.push(userDir);
});
afterAll(() => {
  for (const dir of cleanup) rmSync(dir, { recursive: true, force: true });
});

const noLandlock = lacksLandlock();

describe("toolbelt run lsp_* keeps the language server sandboxed", { timeout: 180_000 }, () => {
  it.skipIf(noLandlock)("a language server started by `run` cannot write outside the root", async () => {
    const root = tempRoot("tb-runs-lsp-");
    const outside = tempRoot("tb-runs-outside-");
    cleanup.push(root, outside);
    mkdirSync(path.join(root, "docs"));
    writeFileSync(path.join(root, "docs", "notes.txt"), "hello\n");
    const dump = path.join(root, "env.json");
    const target = path.join(outside, "planted");
    // The user's own --config names the server (trusted): the sandbox still applies to it.
    const config = path.join(outside, "config.json");
    writeFileSync(
      config,
      JSON.stringify({
        lsp: {
          scripted: {
            command: process.execPath,
            args: [SCRIPTED],
            extensions: [".txt"],
            env: { SCRIPTED_ENV_DUMP: dump, SCRIPTED_TRY_WRITE: target },
          },
        },
      }),
    );
    const out = await cli(
      [
        "run",
        "lsp_document_symbols",
        "--root",
        root,
        "--config",
        config,
        "--input",
        JSON.stringify({ path: "docs/notes.txt" }),
      ],
      {
        env: { TOOLBELT_CONFIG_DIR: userDir, TOOLBELT_TRUST: "0", TOOLBELT_LSP_FALLBACK: "0" },
        timeoutMs: 180_000,
      },
    );
    expect(JSON.parse(out.stdout), out.stderr).toMatchObject({ kind: "lsp_document_symbols" });
    expect(readFileSync(`${dump}.write`, "utf8")).toMatch(/^E(ACCES|PERM)$/);
    expect(existsSync(target)).toBe(false);
  });
});
