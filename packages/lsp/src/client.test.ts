import { writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createSession, type Payload, parseToolText } from "@toolbelt/core";
import { describe, expect, it } from "vitest";
import { lacks } from "../../../test-support/capability.js";
import { FILES, makeProject } from "./__fixtures__/project.js";
import { createLspFamily, type LspClient, type LspManager } from "./index.js";
import { findTsgo } from "./servers.js";

const PUSH_SERVER = fileURLToPath(new URL("./__fixtures__/push-server.mjs", import.meta.url));

type DiagPayload = Payload & {
  status: string;
  count: number;
  server: string;
  files: Array<{
    path: string;
    version: number;
    diagnostics: Array<{ line: number; code?: string | number; message: string }>;
  }>;
};

function fixtureConfig(mode: "staged" | "silent" | "crash") {
  return {
    lsp: {
      fixture: {
        command: process.execPath,
        args: [PUSH_SERVER],
        extensions: [".txt"],
        env: { PUSH_FIXTURE_MODE: mode },
      },
    },
  };
}

describe("a configured push server", () => {
  it("waits for the staged publishes to settle and never reports an older version's diagnostics", async () => {
    const { root, cleanup } = makeProject({ "notes.txt": "fine\nan ERROR here\n" });
    const session = await createSession({
      root,
      config: fixtureConfig("staged"),
      plugins: [createLspFamily()],
    });
    try {
      const first = (await session.call("lsp_diagnostics", { path: "notes.txt" })) as DiagPayload;
      expect(first.server).toBe("fixture (push-fixture 1)");
      expect(first.status).toBe("ok");
      expect(first.files[0]?.version).toBe(1);
      expect(first.files[0]?.diagnostics.map((d) => [d.line, d.code])).toEqual([[2, "E1"]]);

      // Version 2: the server first republishes version 1 ("stale"), then an empty partial, then the answer.
      writeFileSync(path.join(root, "notes.txt"), "ERROR one\nfine\nERROR two\n");
      const second = (await session.call("lsp_diagnostics", { path: "notes.txt" })) as DiagPayload;
      expect(second.files[0]?.version).toBe(2);
      expect(second.files[0]?.diagnostics.map((d) => d.message)).toEqual([
        "found ERROR on line 1",
        "found ERROR on line 3",
      ]);
    } finally {
      await session.close();
      cleanup();
    }
  });

  it('says "timed out", not "no problems", when no diagnostics come in time', async () => {
    const { root, cleanup } = makeProject({ "notes.txt": "ERROR\n" });
    const session = await createSession({
      root,
      config: fixtureConfig("silent"),
      plugins: [createLspFamily()],
    });
    try {
      const started = Date.now();
      const { payload, text } = await session.callWithText("lsp_diagnostics", {
        path: "notes.txt",
        timeout_ms: 500,
      });
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(payload).toMatchObject({ kind: "lsp_diagnostics", status: "timed_out", count: 0 });
      expect(parseToolText(text).headers.Status).toMatch(
        /^timed out after 500 ms .*this is not "no problems"/,
      );
      expect(text).not.toContain("No problems.");
    } finally {
      await session.close();
      cleanup();
    }
  });
});

describe("sub-agents", () => {
  it("share the parent's server, and closing a fork leaves it running", async () => {
    const { root, cleanup } = makeProject({ "notes.txt": "ERROR\n" });
    const session = await createSession({
      root,
      config: fixtureConfig("staged"),
      plugins: [createLspFamily()],
    });
    try {
      await session.call("lsp_diagnostics", { path: "notes.txt" });
      const manager = session.state<LspManager | undefined>("lsp.manager", () => undefined) as LspManager;
      const [client] = (await manager.running(session.root)) as LspClient[];
      const child = await session.fork();
      const viaChild = (await child.call("lsp_diagnostics", { path: "notes.txt" })) as DiagPayload;
      expect(viaChild.count).toBe(1);
      expect(await manager.running(session.root)).toEqual([client]);
      await child.close();
      expect(() => process.kill(client?.pid as number, 0)).not.toThrow();
      expect(((await session.call("lsp_diagnostics", { path: "notes.txt" })) as DiagPayload).count).toBe(1);
    } finally {
      await session.close();
      cleanup();
    }
  });
});

describe("servers that cannot start", () => {
  it("reports the failure once and does not retry on every call", async () => {
    const { root, cleanup } = makeProject({ "a.foo": "x\n" });
    const session = await createSession({
      root,
      config: { lsp: { broken: { command: path.join(root, "no-such-server"), extensions: ["foo"] } } },
      plugins: [createLspFamily()],
    });
    try {
      const first: Payload = await session.call("lsp_diagnostics", { path: "a.foo" });
      expect(first).toMatchObject({ kind: "error", code: "EUNAVAILABLE" });
      expect(String(first.message)).toContain("no-such-server");
      const second: Payload = await session.call("lsp_document_symbols", { path: "a.foo" });
      expect(second).toMatchObject({ kind: "error", code: "EUNAVAILABLE" });
      expect(String(second.message)).toContain("not retried in this session");
      const none = await session.call("lsp_diagnostics", { path: "src.unknown" });
      expect(none).toMatchObject({ kind: "error", code: "ENOENT" });
      writeFileSync(path.join(root, "x.unknown"), "");
      const unserved: Payload = await session.call("lsp_hover", { path: "x.unknown", line: 1, column: 1 });
      expect(unserved).toMatchObject({ kind: "error", code: "EUNAVAILABLE" });
      expect(String(unserved.message)).toContain('add one under "lsp"');
    } finally {
      await session.close();
      cleanup();
    }
  });

  it("reports a server that dies mid-session with its exit, without restarting it", async () => {
    const { root, cleanup } = makeProject({ "notes.txt": "ERROR\n" });
    const session = await createSession({
      root,
      config: fixtureConfig("crash"),
      plugins: [createLspFamily()],
    });
    try {
      const first: Payload = await session.call("lsp_diagnostics", { path: "notes.txt" });
      expect(first).toMatchObject({ kind: "error", code: "EUNAVAILABLE" });
      expect(String(first.message)).toContain("exited with code 3");
      const second: Payload = await session.call("lsp_diagnostics", { path: "notes.txt" });
      expect(second).toMatchObject({ kind: "error", code: "EUNAVAILABLE" });
      expect(String(second.message)).toContain("exited with code 3");
    } finally {
      await session.close();
      cleanup();
    }
  });

  it("refuses paths outside the root", async () => {
    const { root, cleanup } = makeProject(FILES);
    const session = await createSession({ root, plugins: [createLspFamily({ fallback: "force" })] });
    try {
      expect(await session.call("lsp_definition", { path: "../etc/passwd", line: 1 })).toMatchObject({
        kind: "error",
        code: "EPATH_ESCAPE",
      });
      expect(await session.call("lsp_definition", { path: "src/main.ts" })).toMatchObject({
        kind: "error",
        code: "EINVAL_INPUT",
      });
      expect(await session.call("lsp_definition", { path: "src/main.ts", line: 99 })).toMatchObject({
        kind: "error",
        code: "EINVAL_INPUT",
      });
    } finally {
      await session.close();
      cleanup();
    }
  });
});

const tsgo = findTsgo();
const noTsgo = lacks("tsgo", !tsgo && "TypeScript 7 (tsgo from @typescript/native-preview) is not installed");

describe.skipIf(noTsgo)("TypeScript 7 (tsgo --lsp) as the TypeScript server", () => {
  it("pulls diagnostics and finds definitions", async () => {
    const { root, cleanup } = makeProject(FILES);
    const session = await createSession({
      root,
      plugins: [createLspFamily({ typescriptServer: "tsgo", fallback: "off", diagnosticsTimeoutMs: 60_000 })],
    });
    try {
      const diags = (await session.call("lsp_diagnostics", { path: "src/main.ts" })) as DiagPayload;
      expect(diags.server).toMatch(/^tsgo \(typescript-go/);
      expect(diags.files[0]?.diagnostics.map((d) => [d.line, d.code])).toEqual([
        [9, 2322],
        [10, 2304],
      ]);
      const def = (await session.call("lsp_definition", {
        path: "src/main.ts",
        line: 5,
        symbol: "totalArea",
      })) as Payload & {
        locations: Array<{ path: string; line: number }>;
      };
      expect(def.locations.map((p) => `${p.path}:${p.line}`)).toEqual(["src/shapes.ts:19"]);
    } finally {
      await session.close();
      cleanup();
    }
  });
});
