import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createSession, parseConfig, type Session } from "@toolbelt/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lacks } from "../../../test-support/capability.js";
import { filesConfig } from "./contrib.js";
import { family } from "./index.js";
import { locateRipgrep } from "./search/engine.js";
import type { SearchResultsPayload } from "./search-files.js";
import { comparePaths } from "./tree-order.js";

const rg = await locateRipgrep();
const noRg = lacks("ripgrep", !rg && "no ripgrep binary found (@vscode/ripgrep, or rg on PATH)");

let root: string;
const sessions: Session[] = [];

async function search(engine: "ripgrep" | "js", maxMatches: number, query = "common", extra = {}) {
  const s = await createSession({
    root,
    plugins: [family],
    config: parseConfig(
      { tools: { search: { engine } }, limits: { fileSearchMaxMatches: maxMatches } },
      "config",
      [filesConfig],
    ),
  });
  sessions.push(s);
  const p = (await s.call("search_files", { query, ...extra })) as SearchResultsPayload;
  expect(p.kind).toBe("search_results");
  return { entries: p.entries, matches: p.matches, capped: p.capped };
}

beforeAll(async () => {
  root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "tb-search-order-")));
  // Enough files across directories that ripgrep's threads finish them in varying order, with
  // names that sort differently as paths than as strings (`a.txt` vs `a/`, `b-x` vs `b/`).
  for (let d = 0; d < 12; d++) {
    for (let f = 0; f < 40; f++) {
      const rel = `${d % 3 === 0 ? "a" : `d${d}`}/${f % 5 === 0 ? "sub/" : ""}f${f}.txt`;
      const abs = path.join(root, `${d}`, rel);
      await fs.mkdir(path.dirname(abs), { recursive: true });
      await fs.writeFile(abs, Array.from({ length: 1 + (f % 4) }, (_, i) => `common line ${i}\n`).join(""));
    }
  }
  await fs.writeFile(path.join(root, "a.txt"), "common top\n");
  await fs.writeFile(path.join(root, "b-x"), "common top\n");
});
afterAll(async () => {
  for (const s of sessions) await s.close();
  await fs.rm(root, { recursive: true, force: true });
});

describe("capped search results", () => {
  it("are the prefix of the full answer in tree order, the same on every run, with the js engine", async () => {
    const full = await search("js", 100_000);
    expect(full.capped).toBe(false);
    const paths = full.entries.map((e) => e.path);
    expect([...paths].sort(comparePaths)).toEqual(paths);
    const runs = [];
    for (let i = 0; i < 5; i++) runs.push(await search("js", 37));
    for (const run of runs) expect(run).toEqual(runs[0]);
    const first = runs[0] as Awaited<ReturnType<typeof search>>;
    expect(first.capped).toBe(true);
    expect(first.matches).toBe(37);
    const flat = (r: typeof full) => r.entries.flatMap((e) => e.matches.map((m) => `${e.path}:${m.line}`));
    expect(flat(first)).toEqual(flat(full).slice(0, 37));
  });

  it.skipIf(noRg)("are the same for ripgrep on every run as for the js engine", async () => {
    const js = await search("js", 37);
    for (let i = 0; i < 5; i++) expect(await search("ripgrep", 37)).toEqual(js);
    // And uncapped, and with an include glob.
    expect(await search("ripgrep", 100_000)).toEqual(await search("js", 100_000));
    const include = { include: "**/sub/*.txt" };
    expect(await search("ripgrep", 9, "common", include)).toEqual(await search("js", 9, "common", include));
  });

  it.skipIf(noRg)("say capped only when more matched, the same for both engines", async () => {
    const all = await search("js", 100_000);
    for (const engine of ["ripgrep", "js"] as const) {
      const exact = await search(engine, all.matches);
      expect(exact.capped).toBe(false);
      expect(exact.matches).toBe(all.matches);
      expect((await search(engine, all.matches - 1)).capped).toBe(true);
    }
  });
});
