import path from "node:path";
import { fileURLToPath } from "node:url";
import { createSession, type Session, type WriteDiagnostics } from "@toolbelt/core";
import { afterEach, describe, expect, it } from "vitest";
import { lacks } from "../../../test-support/capability.js";
import { FILES, makeProject } from "./__fixtures__/project.js";
import { createLspFamily, type LspFamilyOptions } from "./index.js";
import { findTsgo, findTypescriptLanguageServer } from "./servers.js";

// The lsp family's afterWrite hook: what a write through the session learns about the problems it
// introduced, with real servers (a push fixture, tsgo, typescript-language-server, the fallback).

const PUSH_SERVER = fileURLToPath(new URL("./__fixtures__/push-server.mjs", import.meta.url));
/** The failure bound of a wait for a real server on a loaded machine, not a guess at its speed. */
const SLOW_MACHINE_MS = 60_000;

const open: Array<{ session: Session; cleanup: () => void }> = [];
afterEach(async () => {
  for (const { session, cleanup } of open.splice(0)) {
    await session.close();
    cleanup();
  }
});

async function start(
  files: Record<string, string>,
  config: Record<string, unknown>,
  options: LspFamilyOptions = {},
): Promise<{
  session: Session;
  root: string;
  write: (rel: string, text: string) => Promise<WriteDiagnostics | undefined>;
}> {
  const { root, cleanup } = makeProject(files);
  const session = await createSession({ root, config, plugins: [createLspFamily(options)] });
  open.push({ session, cleanup });
  const write = async (rel: string, text: string) =>
    (await session.writeFile(path.join(root, rel), text)).diagnostics;
  return { session, root, write };
}

function fixture(mode: "staged" | "silent", edit?: Record<string, unknown>) {
  return {
    lsp: {
      fixture: {
        command: process.execPath,
        args: [PUSH_SERVER],
        extensions: [".txt"],
        env: { PUSH_FIXTURE_MODE: mode, PUSH_FIXTURE_PLAIN: "1" },
      },
    },
    ...(edit ? { tools: { edit } } : {}),
  };
}

describe("new diagnostics after a write, from a push server", () => {
  it("uses a server already running: reports what the write introduced, not what it moved or kept", async () => {
    const { session, write } = await start({ "notes.txt": "fine\n" }, fixture("staged"));
    // Unset, the setting starts nothing: no server runs for the file yet.
    expect(await write("notes.txt", "still fine\n")).toMatchObject({ status: "no_server", new: [] });
    await session.call("lsp_diagnostics", { path: "notes.txt" });
    // A file no server serves is not checked, and its result does not pretend it was.
    expect(await write("README.md", "ERROR\n")).toBeUndefined();

    const broke = await write("notes.txt", "still fine\nan ERROR here\n");
    expect(broke).toMatchObject({ status: "ok", server: "fixture (push-fixture 1)", new_count: 1, total: 1 });
    expect(broke?.new).toEqual([
      {
        line: 2,
        column: 4,
        end_line: 2,
        end_column: 9,
        severity: "error",
        code: "E1",
        source: "push-fixture",
        message: "found ERROR",
        text: "an ERROR here",
      },
    ]);
    // Lines added above move the error: it is not new.
    const moved = await write("notes.txt", "one\ntwo\nstill fine\nan ERROR here\n");
    expect(moved).toMatchObject({ status: "ok", new: [], new_count: 0, total: 1 });
    const another = await write("notes.txt", "one\nERROR two\nstill fine\nan ERROR here\n");
    expect(another?.new.map((d) => [d.line, d.text])).toEqual([[2, "ERROR two"]]);
    expect(another).toMatchObject({ new_count: 1, total: 2 });
    const fixed = await write("notes.txt", "one\ntwo\nstill fine\n");
    expect(fixed).toMatchObject({ status: "ok", new: [], total: 0 });
  });

  it('set explicitly, a write starts the file\'s server; "errors" leaves warnings out, "all" keeps them', async () => {
    const errors = await start({ "a.txt": "fine\n" }, fixture("staged", { diagnostics: "errors" }));
    const onlyErrors = await errors.write("a.txt", "WARN\nERROR\n");
    expect(onlyErrors).toMatchObject({ status: "ok", severity: "errors", new_count: 1 });
    expect(onlyErrors?.new.map((d) => d.severity)).toEqual(["error"]);

    const all = await start({ "a.txt": "fine\n" }, fixture("staged", { diagnostics: "all" }));
    const everything = await all.write("a.txt", "WARN\nERROR\n");
    expect(everything?.new.map((d) => [d.line, d.severity])).toEqual([
      [1, "warning"],
      [2, "error"],
    ]);
  });

  it("a created file's problems are all new", async () => {
    const { write } = await start({}, fixture("staged", { diagnostics: "errors" }));
    expect(await write("new.txt", "ERROR\nok\nERROR\n")).toMatchObject({
      status: "ok",
      new_count: 2,
      baseline: true,
    });
  });

  it('says "timed out" when the server does not answer in time, never "no new errors"', async () => {
    const { write } = await start(
      { "a.txt": "fine\n" },
      fixture("silent", { diagnostics: "errors", diagnostics_timeout_ms: 300 }),
    );
    const result = await write("a.txt", "ERROR\n");
    expect(result).toMatchObject({ status: "timed_out", timeout_ms: 300, new: [], new_count: 0 });
  });

  it('"off" checks nothing and starts nothing', async () => {
    const { session, write } = await start({ "a.txt": "fine\n" }, fixture("staged", { diagnostics: "off" }));
    await session.call("lsp_diagnostics", { path: "a.txt" });
    expect(await write("a.txt", "ERROR\n")).toBeUndefined();
  });
});

const TYPE_ERROR = `export function broken(): number {
  const label: number = "not a number";
  return label;
}
`;
const CLEAN = `export function fine(): number {
  const label: number = 1;
  return label;
}
`;

/** Introduces a type error, then fixes it, through one backend. */
async function introduceAndFix(options: LspFamilyOptions): Promise<void> {
  const { write } = await start(
    { ...FILES, "src/edited.ts": CLEAN },
    { tools: { edit: { diagnostics: "errors", diagnostics_timeout_ms: SLOW_MACHINE_MS } } },
    options,
  );
  const broke = await write("src/edited.ts", TYPE_ERROR);
  expect(broke?.status).toBe("ok");
  expect(broke?.new.map((d) => [d.line, d.code, d.text])).toEqual([
    [2, 2322, 'const label: number = "not a number";'],
  ]);
  expect(broke?.new[0]?.message).toBe("Type 'string' is not assignable to type 'number'.");
  // A comment above moves the error down a line: not new.
  const moved = await write("src/edited.ts", `// moved\n${TYPE_ERROR}`);
  expect(moved).toMatchObject({ status: "ok", new: [], total: 1 });
  expect(await write("src/edited.ts", CLEAN)).toMatchObject({ status: "ok", new: [], total: 0 });
}

const tsgo = findTsgo();
const tsls = findTypescriptLanguageServer();

describe("new diagnostics after a write, from real TypeScript servers", { timeout: 180_000 }, () => {
  it.skipIf(lacks("typescript-language-server", !tsls && "typescript-language-server is not installed"))(
    "typescript-language-server (TypeScript 5.9)",
    () => introduceAndFix({ typescriptServer: "typescript-language-server", fallback: "off" }),
  );

  it.skipIf(lacks("tsgo", !tsgo && "TypeScript 7 (tsgo from @typescript/native-preview) is not installed"))(
    "TypeScript 7 (tsgo --lsp, pull diagnostics)",
    () => introduceAndFix({ typescriptServer: "tsgo", fallback: "off" }),
  );

  it("the in-process ts-morph fallback", () => introduceAndFix({ fallback: "force" }));
});
