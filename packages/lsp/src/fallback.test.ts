import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { createSession, type Payload, type Session } from "@toolbelt/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MORE_FILES, makeProject } from "./__fixtures__/project.js";
import { createLspFamily } from "./index.js";

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
  server: string;
  files: Array<{ path: string; diagnostics: Diag[] }>;
};
type Place = { path: string; line: number };

// A cold server on a loaded 2-core machine can take many seconds; the bounded wait itself is tested with the push fixture.
const SLOW_MACHINE_MS = 120_000;

describe("the ts-morph fallback", { timeout: SLOW_MACHINE_MS }, () => {
  let project: ReturnType<typeof makeProject>;
  let session: Session;

  beforeAll(async () => {
    project = makeProject(MORE_FILES);
    session = await createSession({
      root: project.root,
      plugins: [createLspFamily({ fallback: "force", diagnosticsTimeoutMs: SLOW_MACHINE_MS })],
    });
  });

  afterAll(async () => {
    await session?.close();
    project?.cleanup();
  });

  it("serves TS files in process when forced", async () => {
    const result = (await session.call("lsp_diagnostics", { path: "src/main.ts" })) as DiagPayload;
    expect(result.server).toMatch(/^ts-morph fallback/);
    expect(result.files[0]?.diagnostics.map((d) => [d.line, d.code])).toEqual([
      [9, 2322],
      [10, 2304],
    ]);
  });

  it("answers definitions, references, hover, symbols and calls", async () => {
    const def = (await session.call("lsp_definition", {
      path: "src/main.ts",
      line: 5,
      symbol: "totalArea",
    })) as Payload & {
      locations: Place[];
    };
    expect(def.locations.map((p) => `${p.path}:${p.line}`)).toEqual(["src/shapes.ts:19"]);
    const refs = (await session.call("lsp_references", {
      path: "src/shapes.ts",
      symbol: "totalArea",
    })) as Payload & {
      locations: Place[];
    };
    expect(refs.locations.map((p) => `${p.path}:${p.line}`)).toEqual([
      "src/main.ts:1",
      "src/main.ts:5",
      "src/shapes.ts:19",
    ]);
    const impl = (await session.call("lsp_implementation", {
      path: "src/shapes.ts",
      symbol: "Shape/area",
    })) as Payload & {
      locations: Place[];
    };
    expect(impl.locations.map((p) => p.line)).toEqual([7, 14]);
    const hover = await session.call("lsp_hover", { path: "src/shapes.ts", symbol: "Square/area" });
    expect(String(hover.text)).toContain("Square.area(): number");
    const outline = await session.callWithText("lsp_document_symbols", { path: "src/shapes.ts" });
    expect(outline.text).toMatch(/^ {2}7: method area \(to 9\)$/m);
    const symbols = (await session.call("lsp_workspace_symbols", { query: "Square" })) as Payload & {
      symbols: Array<Place & { name: string }>;
    };
    expect(symbols.symbols[0]).toMatchObject({ name: "Square", path: "src/shapes.ts", line: 12 });
    const calls = (await session.call("lsp_call_hierarchy", {
      path: "src/shapes.ts",
      symbol: "totalArea",
      direction: "incoming",
    })) as Payload & {
      incoming: Array<Place & { name: string }>;
    };
    expect(calls.incoming.map((c) => `${c.name} ${c.path}:${c.line}`)).toEqual(["report src/main.ts:3"]);
  });

  it("sees files changed on disk, and applies a rename across files", async () => {
    const clean = path.join(project.root, "src/clean.ts");
    writeFileSync(clean, "export const answer: string = 42;\n");
    const after = (await session.call("lsp_diagnostics", { path: "src/clean.ts" })) as DiagPayload;
    expect(after.files[0]?.diagnostics.map((d) => d.code)).toEqual([2322]);

    const renamed = await session.call("lsp_rename", {
      path: "src/shapes.ts",
      symbol: "Circle",
      new_name: "Disc",
      apply: true,
    });
    expect(renamed).toMatchObject({ kind: "lsp_rename", applied: true });
    expect(readFileSync(path.join(project.root, "src/main.ts"), "utf8")).toContain("new Disc(1)");
    expect(readFileSync(path.join(project.root, "src/more.ts"), "utf8")).toContain(
      'import { Disc } from "./shapes.js";',
    );
    const main = (await session.call("lsp_diagnostics", { path: "src/main.ts" })) as DiagPayload;
    expect(main.files[0]?.diagnostics.map((d) => d.code)).toEqual([2322, 2304]);
  });
});
