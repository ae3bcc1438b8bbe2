import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { lacks } from "../../../test-support/capability.js";
import { assertBuilt } from "../../toolbelt/test/cli-harness.js";
import { FILES, makeProject } from "../src/__fixtures__/project.js";
import { findTsgo } from "../src/servers.js";

// End to end through the built bin.
const BIN = fileURLToPath(new URL("../../toolbelt/dist/bin.js", import.meta.url));
// A missing or stale build fails these tests (see assertBuilt), it does not skip them.
beforeAll(assertBuilt);

function toolbelt(args: string[], options: { env?: Record<string, string>; input?: string } = {}) {
  return spawnSync(process.execPath, [BIN, ...args], {
    encoding: "utf8",
    env: { ...process.env, ...options.env },
    input: options.input ?? "",
    timeout: 120_000,
  });
}

describe("toolbelt CLI with the lsp family", { timeout: 120_000 }, () => {
  it("runs lsp_diagnostics with the fallback forced by TOOLBELT_LSP_FALLBACK=1", () => {
    const { root, cleanup } = makeProject(FILES);
    try {
      const result = toolbelt(
        ["run", "lsp_diagnostics", "--root", root, "--input", '{"path":"src/main.ts"}', "--format", "text"],
        {
          env: { TOOLBELT_LSP_FALLBACK: "1" },
        },
      );
      expect(result.status).toBe(0);
      expect(result.stdout).toContain("# Server: ts-morph fallback");
      expect(result.stdout).toContain(
        "9: error TS2322 (col 9): Type 'string' is not assignable to type 'number'.",
      );
      expect(result.stdout).toContain("10: error TS2304 (col 18): Cannot find name 'missingName'.");
    } finally {
      cleanup();
    }
  });

  it("lists the language servers in doctor", () => {
    const { root, cleanup } = makeProject({
      "configs/app.json": JSON.stringify({
        lsp: { pyright: { command: "no-such-pyright", extensions: [".py"] } },
      }),
    });
    try {
      // --trust: a language-server command from configs/app.json counts only for a trusted project.
      const result = toolbelt(["doctor", "--trust", "--root", root, "--format", "json"]);
      expect(result.status).toBe(0);
      const report = JSON.parse(result.stdout) as Array<{
        family: string;
        name: string;
        status: string;
        detail: string;
      }>;
      const lsp = report.filter((r) => r.family === "lsp");
      expect(lsp.find((r) => r.name === "typescript-language-server")).toMatchObject({ status: "ok" });
      expect(lsp.find((r) => r.name === "config:pyright")).toMatchObject({ status: "missing" });
      expect(lsp.find((r) => r.name === "ts-morph fallback")).toBeDefined();
    } finally {
      cleanup();
    }
  });

  it.skipIf(
    lacks("tsgo", !findTsgo() && "TypeScript 7 (tsgo from @typescript/native-preview) is not installed"),
  )("answers several calls from one server in an exec session", () => {
    const { root, cleanup } = makeProject(FILES);
    try {
      const input = [
        JSON.stringify({
          id: "1",
          tool: "lsp_definition",
          input: { path: "src/main.ts", line: 5, symbol: "totalArea" },
        }),
        JSON.stringify({
          id: "2",
          tool: "lsp_references",
          input: { path: "src/shapes.ts", symbol: "Circle" },
        }),
      ].join("\n");
      const result = toolbelt(["exec", "--root", root], {
        env: { TOOLBELT_LSP_TS_SERVER: "tsgo" },
        input: `${input}\n`,
      });
      expect(result.status).toBe(0);
      const lines = result.stdout
        .trim()
        .split("\n")
        .map(
          (l) =>
            JSON.parse(l) as {
              id: string;
              result: { kind: string; server?: string; locations?: Array<{ path: string; line: number }> };
            },
        );
      expect(lines[0]?.result.server).toMatch(/^tsgo/);
      expect(lines[0]?.result.locations?.map((l) => `${l.path}:${l.line}`)).toEqual(["src/shapes.ts:19"]);
      expect(lines[1]?.result.locations?.map((l) => `${l.path}:${l.line}`)).toEqual([
        "src/main.ts:1",
        "src/main.ts:4",
        "src/shapes.ts:5",
      ]);
    } finally {
      cleanup();
    }
  });
});
