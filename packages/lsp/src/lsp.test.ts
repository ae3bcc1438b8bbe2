import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { createSession, type Payload, parseToolText, type Session } from "@toolbelt/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lacks } from "../../../test-support/capability.js";
import { MORE_FILES, makeProject } from "./__fixtures__/project.js";
import { createLspFamily, type LspClient, type LspManager } from "./index.js";
import { findTypescriptLanguageServer } from "./servers.js";

// Against the real typescript-language-server (TypeScript 5.9), one server shared by the file.
const noServer = lacks(
  "typescript-language-server",
  findTypescriptLanguageServer() === undefined && "typescript-language-server is not installed",
);
// A cold server on a loaded 2-core machine can take many seconds; the bounded wait itself is tested with the push fixture.
const SLOW_MACHINE_MS = 120_000;

type Diag = {
  line: number;
  column: number;
  end_line: number;
  end_column: number;
  code?: string | number;
  severity: string;
  message: string;
};
type DiagPayload = Payload & {
  status: string;
  count: number;
  files: Array<{ path: string; diagnostics: Diag[] }>;
};
type Place = { path: string; line: number; column: number; text?: string };

describe.skipIf(noServer)(
  "lsp tools against typescript-language-server",
  { timeout: SLOW_MACHINE_MS },
  () => {
    let project: ReturnType<typeof makeProject>;
    let session: Session;
    let moreCodes: Array<string | number | undefined> = [];

    beforeAll(async () => {
      project = makeProject(MORE_FILES);
      session = await createSession({
        root: project.root,
        plugins: [createLspFamily({ fallback: "off", diagnosticsTimeoutMs: SLOW_MACHINE_MS })],
      });
    });

    afterAll(async () => {
      await session?.close();
      project?.cleanup();
    });

    const call = async (tool: string, input: unknown) => session.callWithText(tool, input);

    it("finds the errors of a file with their lines, codes and messages", async () => {
      const { payload, text } = await call("lsp_diagnostics", { path: "src/main.ts" });
      expect(payload.kind).toBe("lsp_diagnostics");
      const result = payload as DiagPayload;
      expect(result.status).toBe("ok");
      const diags = result.files[0]?.diagnostics ?? [];
      expect(diags.map((d) => [d.line, d.code])).toEqual([
        [9, 2322],
        [10, 2304],
      ]);
      expect(diags[1]?.message).toContain("missingName");
      const parsed = parseToolText(text);
      expect(parsed.headers.Status).toBe("ok");
      expect(parsed.counts.Diagnostics?.count).toBe(2);
      expect(text).toContain("9: error TS2322 (col 9): Type 'string' is not assignable to type 'number'.");
      expect(text).toMatch(/^src\/\n {2}main\.ts$/m);
    });

    it("gives the same diagnostics as the ts-morph fallback for the same fixture", async () => {
      const fallback = await createSession({
        root: project.root,
        plugins: [createLspFamily({ fallback: "force", diagnosticsTimeoutMs: SLOW_MACHINE_MS })],
      });
      try {
        const viaServer = (await session.call("lsp_diagnostics", { severity: "hint" })) as DiagPayload;
        const viaFallback = (await fallback.call("lsp_diagnostics", { severity: "hint" })) as DiagPayload;
        expect(viaServer.server).toMatch(/^typescript/);
        expect(viaFallback.server).toMatch(/^ts-morph fallback/);
        const shape = (p: DiagPayload) =>
          p.files.map((f) => ({
            path: f.path,
            diagnostics: f.diagnostics.map(
              ({ line, column, end_line, end_column, code, severity, message }) => ({
                line,
                column,
                end_line,
                end_column,
                code,
                severity,
                message,
              }),
            ),
          }));
        expect(shape(viaServer).map((f) => f.path)).toEqual(["src/main.ts", "src/more.ts"]);
        const more = shape(viaServer)[1]?.diagnostics ?? [];
        expect(more.map((d) => d.code)).toEqual([2322, 2345, 2304, 2322]);
        // A message chain comes flattened the same way from both.
        expect(more[3]?.message).toContain("\n");
        expect(shape(viaFallback)).toEqual(shape(viaServer));
        moreCodes =
          shape(viaServer)[1]
            ?.diagnostics.filter((d) => d.severity !== "hint")
            .map((d) => d.code) ?? [];
      } finally {
        await fallback.close();
      }
    });

    it('says "No problems." for a clean file', async () => {
      const { payload, text } = await call("lsp_diagnostics", { path: "src/clean.ts" });
      expect((payload as DiagPayload).status).toBe("ok");
      expect((payload as DiagPayload).count).toBe(0);
      expect(text).toContain("No problems.");
    });

    it("finds a definition in another file, by line or by symbol name", async () => {
      const byLine = await call("lsp_definition", { path: "src/main.ts", line: 5, column: 22 });
      const locations = (byLine.payload as Payload & { locations: Place[] }).locations;
      expect(locations).toEqual([expect.objectContaining({ path: "src/shapes.ts", line: 19, column: 17 })]);
      expect(locations[0]?.text).toBe("export function totalArea(shapes: Shape[]): number {");
      expect(byLine.text).toContain("19: export function totalArea(shapes: Shape[]): number {");
      const byName = await call("lsp_definition", { path: "src/main.ts", line: 5, symbol: "totalArea" });
      expect((byName.payload as Payload & { locations: Place[] }).locations[0]?.line).toBe(19);
    });

    it("lists references across files", async () => {
      const { payload, text } = await call("lsp_references", { path: "src/shapes.ts", symbol: "totalArea" });
      const places = (payload as Payload & { locations: Place[] }).locations.map(
        (p) => `${p.path}:${p.line}`,
      );
      expect(places).toEqual(["src/main.ts:1", "src/main.ts:5", "src/shapes.ts:19"]);
      expect(parseToolText(text).counts.Locations?.count).toBe(3);
    });

    it("caps a listing and states the cap", async () => {
      const { payload, text } = await call("lsp_references", {
        path: "src/shapes.ts",
        symbol: "totalArea",
        limit: 2,
      });
      expect((payload as Payload & { locations: Place[] }).locations).toHaveLength(2);
      expect(parseToolText(text).headers.Locations).toBe("3 (capped at 2)");
    });

    it("finds implementations of an interface method named by path", async () => {
      const { payload } = await call("lsp_implementation", { path: "src/shapes.ts", symbol: "Shape/area" });
      const places = (payload as Payload & { locations: Place[] }).locations.map(
        (p) => `${p.path}:${p.line}`,
      );
      expect(places).toEqual(["src/shapes.ts:7", "src/shapes.ts:14"]);
    });

    it("refuses an ambiguous or unknown name path with the candidates", async () => {
      const many = await call("lsp_hover", { path: "src/shapes.ts", symbol: "area" });
      expect(many.payload).toMatchObject({ kind: "error", code: "EMULTI_MATCH" });
      expect(String(many.payload.message)).toContain("Circle/area (line 7)");
      const none = await call("lsp_hover", { path: "src/shapes.ts", symbol: "Circle/perimeter" });
      expect(none.payload).toMatchObject({ kind: "error", code: "ENO_MATCH" });
      expect(String(none.payload.message)).toContain("Circle");
    });

    it("hovers a symbol", async () => {
      const { payload } = await call("lsp_hover", { path: "src/shapes.ts", symbol: "Square/area" });
      expect(String(payload.text)).toContain("Square.area(): number");
    });

    it("outlines a file and searches the workspace for symbols", async () => {
      const outline = await call("lsp_document_symbols", { path: "src/shapes.ts" });
      expect(outline.text).toMatch(/^5: class Circle \(to 10\)$/m);
      expect(outline.text).toMatch(/^ {2}7: method area \(to 9\)$/m);
      const found = await call("lsp_workspace_symbols", { query: "Square" });
      const symbols = (found.payload as Payload & { symbols: Array<Place & { name: string }> }).symbols;
      expect(symbols[0]).toMatchObject({ name: "Square", path: "src/shapes.ts", line: 12 });
    });

    it("shows incoming and outgoing calls", async () => {
      const { payload, text } = await call("lsp_call_hierarchy", {
        path: "src/shapes.ts",
        symbol: "totalArea",
      });
      const incoming = (
        payload as Payload & { incoming: Array<Place & { name: string; call_lines: number[] }> }
      ).incoming;
      expect(incoming).toEqual([
        expect.objectContaining({ name: "report", path: "src/main.ts", call_lines: [5] }),
      ]);
      const outgoing = (payload as Payload & { outgoing: Array<{ name: string }> }).outgoing.map(
        (c) => c.name,
      );
      expect(outgoing).toContain("reduce");
      expect(text).toContain("incoming calls (1):");
    });

    it("syncs a changed file to the server with a new version before answering", async () => {
      const file = path.join(project.root, "src/clean.ts");
      const original = readFileSync(file, "utf8");
      writeFileSync(file, `${original}export const wrong: string = 1;\n`);
      const after = (await call("lsp_diagnostics", { path: "src/clean.ts" })).payload as DiagPayload;
      expect(after.files[0]?.diagnostics.map((d) => [d.line, d.code])).toEqual([[2, 2322]]);
      writeFileSync(file, original);
      const fixed = (await call("lsp_diagnostics", { path: "src/clean.ts" })).payload as DiagPayload;
      expect(fixed.count).toBe(0);
    });

    it("previews a rename, applies it across files atomically, and the project re-checks clean of new errors", async () => {
      const preview = await call("lsp_rename", {
        path: "src/shapes.ts",
        symbol: "totalArea",
        new_name: "sumOfAreas",
      });
      expect(preview.payload).toMatchObject({ kind: "lsp_rename", applied: false, edit_count: 3 });
      expect(readFileSync(path.join(project.root, "src/main.ts"), "utf8")).toContain("totalArea");
      // The preview shows each changed line as it will read.
      expect(preview.text).toContain(["5: return `total: $", "{sumOfAreas(shapes)}`;"].join(""));

      const ledgerKey = path.join(project.root, "src/main.ts");
      session.ledger.record(ledgerKey, { size: 1, mtimeMs: 1, hash: "x" }, { start: 1, end: Infinity });
      const applied = await call("lsp_rename", {
        path: "src/shapes.ts",
        symbol: "totalArea",
        new_name: "sumOfAreas",
        apply: true,
      });
      expect(applied.payload).toMatchObject({ kind: "lsp_rename", applied: true });
      expect(session.ledger.status(ledgerKey)).toBe("unread");
      const main = readFileSync(path.join(project.root, "src/main.ts"), "utf8");
      expect(main).toContain('import { Circle, Square, sumOfAreas } from "./shapes.js";');
      expect(main).not.toContain("totalArea");
      expect(readFileSync(path.join(project.root, "src/shapes.ts"), "utf8")).toContain(
        "export function sumOfAreas(",
      );

      const workspace = await call("lsp_diagnostics", {});
      const result = workspace.payload as DiagPayload & { scope: string };
      expect(result.scope).toBe("workspace");
      expect(result.status).toBe("ok");
      expect(result.files.map((f) => [f.path, f.diagnostics.map((d) => d.code)])).toEqual([
        ["src/main.ts", [2322, 2304]],
        ["src/more.ts", moreCodes],
      ]);
      expect(parseToolText(workspace.text).headers.Files).toBe("4");
    });

    it("refuses to apply a rename when a file changed after the server computed it", async () => {
      // The server has the current text; a file changed behind toolbelt's back between plan and write.
      const shapes = path.join(project.root, "src/shapes.ts");
      const before = readFileSync(shapes, "utf8");
      const manager = session.state<LspManager | undefined>("lsp.manager", () => undefined) as LspManager;
      const [backend] = await manager.running(session.root);
      const original = backend?.text.bind(backend);
      expect(backend).toBeDefined();
      (backend as { text: (abs: string) => string | undefined }).text = (abs) =>
        abs === shapes ? `${before}// edited elsewhere\n` : original?.(abs);
      try {
        const { payload } = await call("lsp_rename", {
          path: "src/shapes.ts",
          symbol: "Square",
          new_name: "Box",
          apply: true,
        });
        expect(payload).toMatchObject({ kind: "error", code: "ECONFLICT" });
      } finally {
        (backend as { text: (abs: string) => string | undefined }).text = original as (
          abs: string,
        ) => string | undefined;
      }
      expect(readFileSync(shapes, "utf8")).toBe(before);
      expect(readFileSync(path.join(project.root, "src/main.ts"), "utf8")).toContain("Square");
    });

    it("shuts its server down when the session closes (last: closes the shared session)", async () => {
      const manager = session.state<LspManager | undefined>("lsp.manager", () => undefined) as LspManager;
      const [client] = (await manager.running(session.root)) as LspClient[];
      const pid = client?.pid as number;
      expect(pid).toBeGreaterThan(0);
      expect(() => process.kill(pid, 0)).not.toThrow();
      await session.close();
      expect(() => process.kill(pid, 0)).toThrow();
      expect(await session.call("lsp_diagnostics", { path: "src/main.ts" })).toMatchObject({
        kind: "error",
        code: "EUNAVAILABLE",
      });
    });
  },
);
