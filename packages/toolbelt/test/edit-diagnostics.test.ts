import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parseToolText } from "@toolbelt/core";
import { createToolbelt } from "@toolbelt/toolbelt";
import { beforeAll, describe, expect, it } from "vitest";
import { lacks } from "../../../test-support/capability.js";
import { findTypescriptLanguageServer } from "../../lsp/src/servers.js";
import { assertBuilt, cli, jsonLines, REPO, tempRoot } from "./cli-harness.js";

// Diagnostics after edits, end to end: the built CLI and the SDK with every family, real servers.
beforeAll(assertBuilt);

const PUSH_SERVER = path.join(REPO, "packages/lsp/src/__fixtures__/push-server.mjs");
/** The failure bound of a wait for a real server on a loaded machine, not a guess at its speed. */
const SLOW_MACHINE_MS = 60_000;

const CLEAN = `export function fine(): number {
  const label: number = 1;
  return label;
}
`;
const BREAK = { old_text: "const label: number = 1;", new_text: 'const label: number = "one";' };
const FIX = { old_text: 'const label: number = "one";', new_text: "const label: number = 2;" };

function project(): string {
  const root = tempRoot("tb-diag-");
  writeFileSync(
    path.join(root, "tsconfig.json"),
    JSON.stringify({ compilerOptions: { strict: true, noEmit: true, types: [] }, include: ["src"] }),
  );
  mkdirSync(path.join(root, "src"));
  writeFileSync(path.join(root, "src/main.ts"), CLEAN);
  return root;
}

type Diagnostics = { status: string; new: Array<{ line: number; code?: number | string; text?: string }> };
type EditResult = { kind: string; files: Array<{ diagnostics?: Diagnostics }> };

const noTsls = lacks(
  "typescript-language-server",
  !findTypescriptLanguageServer() && "typescript-language-server is not installed",
);

describe.skipIf(noTsls)("edits report the type errors they introduce", { timeout: 180_000 }, () => {
  it("exec: a server started by an lsp call checks the edits that follow", async () => {
    const root = project();
    const config = path.join(root, "diag.json");
    // Only the wait is raised (for a slow machine); the setting itself stays at its default.
    writeFileSync(config, JSON.stringify({ tools: { edit: { diagnostics_timeout_ms: SLOW_MACHINE_MS } } }));
    const lines = [
      {
        id: "before",
        tool: "edit_file",
        input: { path: "src/main.ts", old_text: "return label;", new_text: "return label * 1;" },
      },
      { id: "start", tool: "lsp_diagnostics", input: { path: "src/main.ts" } },
      { id: "break", tool: "edit_file", input: { path: "src/main.ts", ...BREAK } },
      { id: "fix", tool: "edit_file", input: { path: "src/main.ts", ...FIX } },
    ];
    const input = `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`;
    const result = await cli(["exec", "--root", root, "--config", config], { input });
    expect(result.code).toBe(0);
    const answers = new Map(jsonLines(result.stdout).map((l) => [l.id, l.result as EditResult]));
    // No server runs before the lsp call, and the default starts none.
    expect(answers.get("before")?.files[0]?.diagnostics?.status).toBe("no_server");
    const broke = answers.get("break")?.files[0]?.diagnostics;
    expect(broke?.status).toBe("ok");
    expect(broke?.new.map((d) => [d.line, d.code, d.text])).toEqual([
      [2, 2322, 'const label: number = "one";'],
    ]);
    expect(answers.get("fix")?.files[0]?.diagnostics).toMatchObject({ status: "ok", new: [] });
  });

  it("run: set explicitly, the edit starts the server and its text says what is new", async () => {
    const root = project();
    const config = path.join(root, "diag.json");
    writeFileSync(
      config,
      JSON.stringify({ tools: { edit: { diagnostics: "errors", diagnostics_timeout_ms: SLOW_MACHINE_MS } } }),
    );
    const result = await cli([
      "run",
      "edit_file",
      "--root",
      root,
      "--config",
      config,
      "--format",
      "text",
      "--input",
      JSON.stringify({ path: "src/main.ts", ...BREAK }),
    ]);
    expect(result.code).toBe(0);
    const parsed = parseToolText(result.stdout);
    expect(parsed.headers.Diagnostics).toMatch(/^1 new error \(typescript/);
    expect(result.stdout).toContain("New errors in src/main.ts:");
    expect(result.stdout).toMatch(
      / {2}2:9 error 2322 \(typescript\): Type 'string' is not assignable to type 'number'\./,
    );
    expect(result.stdout).toContain('      const label: number = "one";');
  });

  it("the SDK: the payload's diagnostics field and the model-facing text agree", async () => {
    const root = project();
    const session = await createToolbelt({
      root,
      userConfig: false,
      config: { tools: { edit: { diagnostics: "errors", diagnostics_timeout_ms: SLOW_MACHINE_MS } } },
    });
    try {
      const broke = await session.callWithText("edit_file", { path: "src/main.ts", ...BREAK });
      const payload = broke.payload as unknown as EditResult;
      expect(payload.files[0]?.diagnostics?.new.map((d) => d.code)).toEqual([2322]);
      expect(broke.text).toContain("# Diagnostics: 1 new error (typescript");
      const fixed = await session.callWithText("edit_file", { path: "src/main.ts", ...FIX });
      expect((fixed.payload as unknown as EditResult).files[0]?.diagnostics).toMatchObject({
        status: "ok",
        new: [],
      });
      expect(parseToolText(fixed.text).headers.Diagnostics).toMatch(/^no new errors/);
      // write_file reports the same way.
      const written = await session.callWithText("write_file", {
        path: "src/other.ts",
        content: "export const n: number = 'x';\n",
      });
      expect(written.payload).toMatchObject({ kind: "file_written", diagnostics: { status: "ok" } });
      expect(written.text).toContain("New errors in src/other.ts:");
    } finally {
      await session.close();
    }
  });
});

describe("a server that never answers", () => {
  it('makes the edit say "timed out", through the CLI and its text', async () => {
    const root = tempRoot("tb-diag-");
    writeFileSync(path.join(root, "notes.txt"), "fine\n");
    const config = path.join(root, "diag.json");
    writeFileSync(
      config,
      JSON.stringify({
        lsp: {
          silent: {
            command: process.execPath,
            args: [PUSH_SERVER],
            extensions: [".txt"],
            env: { PUSH_FIXTURE_MODE: "silent" },
          },
        },
        tools: { edit: { diagnostics: "errors", diagnostics_timeout_ms: 300 } },
      }),
    );
    const input = `${JSON.stringify({ tool: "write_file", input: { path: "notes.txt", content: "ERROR\n" } })}\n`;
    const json = await cli(["exec", "--root", root, "--config", config], { input });
    expect(json.code).toBe(0);
    expect(jsonLines(json.stdout)[0]?.result).toMatchObject({
      kind: "file_written",
      diagnostics: { status: "timed_out", timeout_ms: 300, new: [] },
    });
    const text = await cli([
      "run",
      "edit_file",
      "--root",
      root,
      "--config",
      config,
      "--format",
      "text",
      "--input",
      JSON.stringify({ path: "notes.txt", old_text: "ERROR", new_text: "ERROR ERROR" }),
    ]);
    expect(text.code).toBe(0);
    expect(parseToolText(text.stdout).headers.Diagnostics).toMatch(
      /^timed out after 300 ms.*: new errors unknown, not "none"/,
    );
  });
});
