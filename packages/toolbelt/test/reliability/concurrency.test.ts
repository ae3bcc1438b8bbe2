import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Payload, Session } from "@toolbelt/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createToolbelt } from "../../src/create.js";

// Many parallel edits and writes through one session lose nothing.

const N = 100;
let root: string;
let session: Session;

beforeAll(async () => {
  root = realpathSync(mkdtempSync(path.join(os.tmpdir(), "tb-conc-")));
  session = await createToolbelt({ root, config: { agent: { edit_tool: "edit_file" } } });
});
afterAll(async () => {
  await session.close();
  rmSync(root, { recursive: true, force: true });
});

describe("concurrency through one session", () => {
  it(`${N} parallel edits of one file all land`, async () => {
    const file = path.join(root, "slots.txt");
    writeFileSync(file, `${Array.from({ length: N }, (_, i) => `slot ${i} pending`).join("\n")}\n`);
    const results = await Promise.all(
      Array.from({ length: N }, (_, i) =>
        session.call("edit_file", {
          path: "slots.txt",
          old_text: `slot ${i} pending`,
          new_text: `slot ${i} done`,
        }),
      ),
    );
    expect(results.filter((r) => r.kind === "error")).toEqual([]);
    const lines = readFileSync(file, "utf8").trimEnd().split("\n");
    expect(lines).toEqual(Array.from({ length: N }, (_, i) => `slot ${i} done`));
  }, 120_000);

  it(`${N} parallel writes of distinct files and of one file`, async () => {
    const distinct = await Promise.all(
      Array.from({ length: N }, (_, i) =>
        session.call("write_file", { path: `w/${i}.txt`, content: `file ${i}\n` }),
      ),
    );
    expect(distinct.filter((r) => r.kind === "error")).toEqual([]);
    for (let i = 0; i < N; i++)
      expect(readFileSync(path.join(root, `w/${i}.txt`), "utf8")).toBe(`file ${i}\n`);
    const same = await Promise.all(
      Array.from({ length: N }, (_, i) =>
        session.call("write_file", { path: "same.txt", content: `version ${i}\n`.repeat(1000) }),
      ),
    );
    expect(same.filter((r) => r.kind === "error")).toEqual([]);
    const content = readFileSync(path.join(root, "same.txt"), "utf8");
    // Whole versions only: the last writer wins, and no write is interleaved with another.
    expect(content).toMatch(/^(version \d+\n)\1*$/);
    expect(content.length).toBe(`version ${content.match(/\d+/)?.[0]}\n`.length * 1000);
  }, 120_000);

  it("reads interleaved with edits never see a torn file", async () => {
    const file = path.join(root, "rw.txt");
    writeFileSync(file, "x\n".repeat(5000));
    const work: Array<Promise<unknown>> = [];
    for (let i = 0; i < 40; i++) {
      work.push(
        session.call("write_file", { path: "rw.txt", content: `${i % 2 ? "y" : "x"}\n`.repeat(5000) }),
      );
      work.push(
        (async () => {
          const r: Payload = await (await session.fork()).call("read_file", { path: "rw.txt", limit: 10000 });
          const text = String(r.content ?? "");
          expect(/x/.test(text) && /y/.test(text)).toBe(false);
        })(),
      );
    }
    await Promise.all(work);
  }, 120_000);
});
