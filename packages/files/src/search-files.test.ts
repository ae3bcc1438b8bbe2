import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import {
  createSession,
  definePlugin,
  type Payload,
  parseConfig,
  parseToolText,
  type Session,
} from "@toolbelt/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lacks } from "../../../test-support/capability.js";
import { filesConfig } from "./contrib.js";
import { family } from "./index.js";
import { locateRipgrep } from "./search/engine.js";
import { type SearchResultsPayload, searchFilesTool } from "./search-files.js";

const rg = await locateRipgrep();
const noRg = lacks("ripgrep", !rg && "no ripgrep binary found (@vscode/ripgrep, or rg on PATH)");

type Tree = Record<string, string | Buffer>;

async function writeTree(dir: string, tree: Tree): Promise<void> {
  for (const [rel, content] of Object.entries(tree)) {
    const abs = path.join(dir, rel);
    await fs.mkdir(path.dirname(abs), { recursive: true });
    await fs.writeFile(abs, content);
  }
}

async function session(root: string, engine: "ripgrep" | "js", limits: Record<string, number> = {}) {
  return createSession({
    root,
    plugins: [family],
    // parseConfig: the config input type rejects `tools.search` next to the catch-all entries.
    config: parseConfig({ tools: { search: { engine } }, limits }, "config", [filesConfig]),
  });
}

function shape(payload: Payload) {
  const p = payload as SearchResultsPayload;
  return {
    entries: p.entries,
    matches: p.matches,
    capped: p.capped,
    path: p.path,
    note: p.note,
  };
}

const engines = noRg ? (["js"] as const) : (["ripgrep", "js"] as const);

let base: string;
let root: string;

// One tree with every ignore rule the walker must agree with ripgrep on.
const fixture: Tree = {
  // A .gitignore above the root applies too (ripgrep reads every ancestor's ignore files).
  "../.gitignore": "from-parent.txt\n",
  "from-parent.txt": "needle parent-ignored\n",
  ".gitignore": "*.log\nbuild/\n!keep.log\n/anchored.txt\nsub/deep/*.tmp\n",
  ".ignore": "ignored-by-dot-ignore.txt\n",
  ".git/info/exclude": "excluded.txt\n",
  ".git/config": "needle inside .git\n",
  "excluded.txt": "needle excluded\n",
  "ignored-by-dot-ignore.txt": "needle dot-ignore\n",
  "app.log": "needle log\n",
  "keep.log": "needle kept by negation\n",
  "anchored.txt": "needle anchored\n",
  "sub/anchored.txt": "needle not anchored here\n",
  "build/out.js": "needle built\n",
  "sub/deep/x.tmp": "needle tmp\n",
  "sub/deep/x.txt": "needle deep txt\n",
  "sub/.gitignore": "secret.txt\n!app2.log\n",
  "sub/secret.txt": "needle secret\n",
  "sub/app2.log": "needle re-included by nested negation\n",
  "sub/nested/.gitignore": "*.md\n",
  "sub/nested/readme.md": "needle md\n",
  "sub/nested/code.ts": "const needle = 1;\nconst other = 2;\n  needle();\n",
  Dockerfile: "FROM node\nRUN echo needle\n",
  ".hidden/config.yml": "needle: hidden\n",
  ".env.example": "NEEDLE=needle\n",
  "bin.dat": Buffer.from([0x6e, 0x65, 0x65, 0x64, 0x6c, 0x65, 0x00, 0x01, 0x02]),
  "crlf.txt": "first needle\r\nsecond\r\nthird needle\r\n",
  "utf16.txt": Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from("alpha\nneedle utf16\n", "utf16le")]),
  "bom.txt": Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from("needle bom\n")]),
  "src/Main.TS": "export function needleSync() {}\nfunction  otherSync () {}\n",
  "src/util.js": "function fooSync(a) { return a }\n// needle\n",
  "long.txt": `${"x".repeat(3000)} needle\n`,
  "unicode.txt": "café au lait\nnaïve needle\n١٢٣ digits\nplain cafe\n",
};

beforeAll(async () => {
  base = await fs.mkdtemp(path.join(os.tmpdir(), "tb-search-"));
  root = path.join(base, "root");
  await fs.mkdir(root);
  await writeTree(root, fixture);
  // A symlink out of the root and a symlink loop: neither may be followed.
  const outside = path.join(base, "outside");
  await fs.mkdir(outside);
  await fs.writeFile(path.join(outside, "leak.txt"), "needle outside the root\n");
  await fs.symlink(outside, path.join(root, "link-out"));
  await fs.symlink(path.join(outside, "leak.txt"), path.join(root, "leak-link.txt"));
  await fs.symlink(root, path.join(root, "sub", "loop"));
});

afterAll(async () => {
  await fs.rm(base, { recursive: true, force: true });
});

async function searchBoth(input: Record<string, unknown>, limits: Record<string, number> = {}) {
  const out: Record<string, Payload> = {};
  for (const engine of engines) {
    const s: Session = await session(root, engine, limits);
    out[engine] = await s.call("search_files", input);
    await s.close();
  }
  return out;
}

describe("search_files: ripgrep and the JS walker agree", () => {
  it("honours the ignore files, hidden files, binary and encodings identically", async () => {
    const results = await searchBoth({ query: "needle" });
    const js = results.js as SearchResultsPayload;
    expect(js.kind).toBe("search_results");
    const files = js.entries.map((e) => e.path);
    expect(files).toEqual(
      expect.arrayContaining([
        "keep.log",
        "sub/anchored.txt",
        "sub/deep/x.txt",
        "sub/app2.log",
        "sub/nested/code.ts",
        "Dockerfile",
        ".hidden/config.yml",
        ".env.example",
        "crlf.txt",
        "utf16.txt",
        "bom.txt",
        "src/Main.TS",
        "src/util.js",
        "long.txt",
      ]),
    );
    for (const hidden of [
      "from-parent.txt",
      "excluded.txt",
      "ignored-by-dot-ignore.txt",
      "app.log",
      "anchored.txt",
      "build/out.js",
      "sub/deep/x.tmp",
      "sub/secret.txt",
      "sub/nested/readme.md",
      ".git/config",
      "bin.dat",
      "link-out/leak.txt",
      "leak-link.txt",
    ]) {
      expect(files).not.toContain(hidden);
    }
    expect(files.some((f) => f.includes("loop"))).toBe(false);
    const crlf = js.entries.find((e) => e.path === "crlf.txt");
    expect(crlf?.matches).toEqual([
      { line: 1, text: "first needle" },
      { line: 3, text: "third needle" },
    ]);
    expect(js.entries.find((e) => e.path === "utf16.txt")?.matches).toEqual([
      { line: 2, text: "needle utf16" },
    ]);
    expect(js.entries.find((e) => e.path === "bom.txt")?.matches).toEqual([{ line: 1, text: "needle bom" }]);
    const long = js.entries.find((e) => e.path === "long.txt")?.matches[0]?.text ?? "";
    expect(long).toContain("[line cut: 3007 chars]");
    if (results.ripgrep) expect(shape(results.ripgrep)).toEqual(shape(js));
  });

  it.each([
    ["a regex with classes", { query: "function\\s+\\w+Sync" }],
    ["an anchored regex", { query: "^\\s+needle" }],
    ["an end anchor", { query: "needle$" }],
    ["an alternation", { query: "other|fooSync" }],
    ["a case-insensitive flag", { query: "(?i)NEEDLESYNC" }],
    ["an include glob without a slash", { query: "needle", include: "*.ts" }],
    ["an include glob with braces", { query: "needle|Sync", include: "src/*.{ts,js}" }],
    ["an include glob that re-includes an ignored file", { query: "needle", include: "*.log" }],
    ["a subdirectory", { query: "needle", path: "sub" }],
    ["a single file", { query: "needle", path: "sub/nested/code.ts" }],
    ["an explicitly named ignored file", { query: "needle", path: "sub/secret.txt" }],
    ["a missing directory", { query: "needle", path: "sub/nope/deeper" }],
    ["no matches", { query: "zzzz-not-there" }],
    ["Unicode \\w", { query: "caf\\w\\b" }],
    ["Unicode \\b and \\w+", { query: "\\bna\\w+ve\\b" }],
    ["Unicode \\d", { query: "^\\d+ digits" }],
    ["\\W and \\B", { query: "caf\\W|\\Bfe\\b" }],
  ])("%s", async (_label, input) => {
    const results = await searchBoth(input);
    const js = results.js as SearchResultsPayload;
    expect(js.kind).toBe("search_results");
    if (results.ripgrep) expect(shape(results.ripgrep)).toEqual(shape(js));
  });

  it("searches the nearest existing ancestor of a missing path and says so", async () => {
    const { js } = await searchBoth({ query: "needle", path: "sub/nope/deeper" });
    const p = js as SearchResultsPayload;
    expect(p.path).toBe("sub");
    expect(p.note).toContain("sub/nope/deeper does not exist");
    const s = await session(root, "js");
    const { text } = await s.callWithText("search_files", { query: "needle", path: "sub/nope" });
    expect(parseToolText(text).headers.Note).toContain("nearest existing ancestor sub");
    await s.close();
  });

  it("finds matches in a file named explicitly even when it is ignored", async () => {
    const { js } = await searchBoth({ query: "needle", path: "sub/secret.txt" });
    expect((js as SearchResultsPayload).entries).toEqual([
      { path: "sub/secret.txt", matches: [{ line: 1, text: "needle secret" }] },
    ]);
  });

  it("caps matches and characters and states the cap in the header", async () => {
    const results = await searchBoth({ query: "needle" }, { fileSearchMaxMatches: 3 });
    for (const engine of engines) {
      const p = results[engine] as SearchResultsPayload;
      expect(p.matches).toBe(3);
      expect(p.capped).toBe(true);
    }
    if (results.ripgrep) expect(shape(results.ripgrep)).toEqual(shape(results.js as Payload));
    const s = await session(root, "js", { fileSearchMaxMatches: 200 });
    const { text } = await s.callWithText("search_files", { query: "needle" });
    expect(text).toMatch(/^# Matches: \d+$/m);
    await s.close();
    const small = await session(root, "js", { fileSearchMaxMatches: 2 });
    const capped = await small.callWithText("search_files", { query: "needle" });
    expect(capped.text).toContain("# Matches: 2 (capped at 2 matches / 1048576 chars)");
    await small.close();
    const bytes = await session(root, "js", { fileSearchMaxBytes: 30 });
    const byChars = (await bytes.call("search_files", { query: "needle" })) as SearchResultsPayload;
    expect(byChars.capped).toBe(true);
    const chars = byChars.entries.flatMap((e) => e.matches).reduce((n, m) => n + m.text.length, 0);
    expect(chars).toBeLessThanOrEqual(30);
    await bytes.close();
  });

  it("answers EINVAL_INPUT for an invalid regex with either engine", async () => {
    const results = await searchBoth({ query: "foo(" });
    for (const engine of engines) {
      expect(results[engine]).toMatchObject({ kind: "error", code: "EINVAL_INPUT" });
    }
  });

  it("refuses a search path outside the root, including through a symlink", async () => {
    const results = await searchBoth({ query: "needle", path: "link-out" });
    for (const engine of engines)
      expect(results[engine]).toMatchObject({ kind: "error", code: "EPATH_ESCAPE" });
    const up = await searchBoth({ query: "needle", path: "../" });
    for (const engine of engines) expect(up[engine]).toMatchObject({ kind: "error", code: "EPATH_ESCAPE" });
  });
});

describe("search_files: precedence between ignore files", () => {
  let tree: string;
  beforeAll(async () => {
    tree = await fs.mkdtemp(path.join(os.tmpdir(), "tb-search-prec-"));
    await writeTree(tree, {
      ".gitignore": "gen/\n*.snap\n",
      // .ignore outranks .gitignore: it re-includes a directory and a file pattern .gitignore drops.
      ".ignore": "!gen/\n",
      ".rgignore": "!keep.snap\nrg-only.txt\n",
      "gen/out.ts": "needle in gen\n",
      "a.snap": "needle snap\n",
      "keep.snap": "needle kept snap\n",
      "rg-only.txt": "needle rgignored\n",
      "lib/.gitignore": "!*.snap\n",
      "lib/b.snap": "needle nested re-include\n",
      "lib/deeper/c.txt": "needle deeper\n",
      "lib/deeper/.ignore": "c.txt\n",
    });
  });
  afterAll(async () => {
    await fs.rm(tree, { recursive: true, force: true });
  });

  it.each([
    ["the whole tree", { query: "needle" }],
    ["an exclusion glob", { query: "needle", include: "!*.snap" }],
    ["a root-anchored glob", { query: "needle", include: "/lib/**" }],
  ])("%s", async (_label, input) => {
    const out: Record<string, Payload> = {};
    for (const engine of engines) {
      const s = await session(tree, engine);
      out[engine] = await s.call("search_files", input);
      await s.close();
    }
    expect(out.js?.kind).toBe("search_results");
    if (out.ripgrep) expect(shape(out.ripgrep)).toEqual(shape(out.js as Payload));
  });

  it("re-includes what a higher-ranked or deeper ignore file whitelists", async () => {
    const s = await session(tree, "js");
    const p = (await s.call("search_files", { query: "needle" })) as SearchResultsPayload;
    await s.close();
    expect(p.entries.map((e) => e.path).sort()).toEqual(["gen/out.ts", "keep.snap", "lib/b.snap"]);
  });
});

describe("search_files text", () => {
  it("round-trips through parseToolText: entries with matches, counts with caps", async () => {
    const s = await session(root, "js", { fileSearchMaxMatches: 4 });
    const { payload, text } = await s.callWithText("search_files", { query: "needle", path: "sub" });
    await s.close();
    const p = payload as SearchResultsPayload;
    const parsed = parseToolText(text);
    expect(parsed.kind).toBe("search_results");
    expect(parsed.entries).toEqual(p.entries);
    expect(parsed.totals).toEqual({ files: p.files, matches: p.matches });
    expect(parsed.counts.Matches).toEqual({
      count: 4,
      capped: true,
      cap: 4,
      capDetail: "matches / 1048576 chars",
    });
    expect(text).toMatch(/^sub\/$/m);
  });

  it("states the lines dropped as changed during the search, in both profiles, and reads them back", () => {
    const payload: SearchResultsPayload = {
      kind: "search_results",
      query: "secret",
      path: ".",
      engine: "ripgrep",
      entries: [{ path: "d/f.txt", matches: [{ line: 1, text: "inside" }] }],
      files: 1,
      matches: 1,
      capped: false,
      max_matches: 100,
      max_chars: 1048576,
      changed: 3,
    };
    const render = (p: SearchResultsPayload) => searchFilesTool.render?.(p) ?? "";
    for (const p of [payload, { ...payload, profile: "mouaif" as const }]) {
      const text = render(p);
      expect(text).toContain("# Changed: 3 lines (changed during the search; not shown)");
      expect(parseToolText(text)).toMatchObject({ changed: 3, entries: payload.entries });
    }
    expect(render({ ...payload, changed: 1 })).toContain("# Changed: 1 line (");
    const { changed: _changed, ...unchanged } = payload;
    expect(render(unchanged)).not.toContain("# Changed");
  });

  it("writes no body when nothing matches", async () => {
    const s = await session(root, "js");
    const { text } = await s.callWithText("search_files", { query: "zzzz-none" });
    await s.close();
    const parsed = parseToolText(text);
    expect(parsed.entries).toEqual([]);
    expect(parsed.counts.Matches).toEqual({ count: 0, capped: false });
  });
});

describe("search_files cancellation", () => {
  it("answers ECANCELLED when the call is aborted mid-search, with either engine", async () => {
    const tree = await fs.mkdtemp(path.join(os.tmpdir(), "tb-search-abort-"));
    const many: Tree = {};
    for (let i = 0; i < 400; i++)
      many[`d${i % 20}/f${i}.txt`] = `line\n${"filler text\n".repeat(200)}needle\n`;
    await writeTree(tree, many);
    for (const engine of engines) {
      const s = await session(tree, engine);
      const controller = new AbortController();
      const pending = s.call("search_files", { query: "needle" }, { signal: controller.signal });
      controller.abort();
      expect(await pending).toMatchObject({ kind: "error", code: "ECANCELLED" });
      // The session still answers afterwards.
      expect(await s.call("search_files", { query: "needle", path: "d1" })).toMatchObject({
        kind: "search_results",
      });
      await s.close();
    }
    await fs.rm(tree, { recursive: true, force: true });
  });
});

describe("search engine selection", () => {
  it("TOOLBELT_SEARCH_ENGINE forces the JS engine over config", async () => {
    const previous = process.env.TOOLBELT_SEARCH_ENGINE;
    process.env.TOOLBELT_SEARCH_ENGINE = "js";
    try {
      const s = await session(root, "ripgrep");
      const p = (await s.call("search_files", { query: "needle" })) as SearchResultsPayload;
      expect(p.engine).toBe("js");
      await s.close();
    } finally {
      if (previous === undefined) delete process.env.TOOLBELT_SEARCH_ENGINE;
      else process.env.TOOLBELT_SEARCH_ENGINE = previous;
    }
  });

  it.skipIf(noRg)("uses ripgrep by default and doctor names it", async () => {
    const s = await createSession({ root, plugins: [family] });
    const p = (await s.call("search_files", { query: "needle" })) as SearchResultsPayload;
    expect(p.engine).toBe("ripgrep");
    await s.close();
    const checks = await family.doctor?.({ root, config: s.config });
    expect(checks?.[0]).toMatchObject({ name: "search", status: "ok" });
    expect(checks?.[0]?.detail).toContain(rg?.path ?? "");
  });
});

describe("search_files under an allowlist", () => {
  // Without ripgrep only the JS engine runs (the warning at the top of this file says so).
  const engines = noRg ? (["js"] as const) : (["ripgrep", "js"] as const);
  it.each(engines)("searches . and keeps only the allowed files (%s)", async (engine) => {
    const dir = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "tb-search-allow-")));
    try {
      await writeTree(dir, { "src/a.ts": "needle\n", "src/b.md": "needle\n", "top.txt": "needle\n" });
      const s = await createSession({
        root: dir,
        plugins: [family],
        config: parseConfig(
          { tools: { search: { engine }, file: { allowlist: ["^src/.*\\.ts$"] } } },
          "config",
          [filesConfig],
        ),
      });
      const { payload, text } = await s.callWithText("search_files", { query: "needle" });
      expect((payload as SearchResultsPayload).entries.map((e) => e.path)).toEqual(["src/a.ts"]);
      expect(payload).toMatchObject({ skipped: 2 });
      expect(text).toContain("# Skipped: 2 files (not in the allowlist)");
      expect(await s.call("search_files", { query: "needle", path: "top.txt" })).toMatchObject({
        code: "EDENIED",
      });
      await s.close();
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});

describe("search_files when the search sandbox does not start", () => {
  it.skipIf(noRg)("runs ripgrep again unconfined and answers, its lines checked", async () => {
    const tree = await fs.mkdtemp(path.join(os.tmpdir(), "tb-search-nosandbox-"));
    await writeTree(tree, { "a.txt": "needle one\nhay\nneedle two\n" });
    const helper = path.join(os.tmpdir(), `${path.basename(tree)}-helper.sh`);
    await fs.writeFile(
      helper,
      "#!/bin/sh\necho 'toolbelt-sandbox: cannot enforce the Landlock ruleset' >&2\nexit 125\n",
      {
        mode: 0o755,
      },
    );
    // A wrapper that claims to confine every search but whose helper fails to set up.
    const failing = definePlugin({
      name: "failing-sandbox",
      tools: [],
      setup(session) {
        session.hooks.wrapCommand.add((spec, purpose) =>
          purpose === "search" ? { ...spec, file: helper, args: spec.args, confined: true } : spec,
        );
      },
    });
    const s = await createSession({
      root: tree,
      plugins: [family, failing],
      config: parseConfig({ tools: { search: { engine: "ripgrep" } } }, "config", [filesConfig]),
    });
    const out = (await s.call("search_files", { query: "needle" })) as SearchResultsPayload;
    await s.close();
    expect(out.entries).toEqual([
      {
        path: "a.txt",
        matches: [
          { line: 1, text: "needle one" },
          { line: 3, text: "needle two" },
        ],
      },
    ]);
    expect(out.changed).toBeUndefined();
  });
});

describe("search_files progress", () => {
  it.each(engines)(
    "emits search_progress with the call's id and the allowed totals so far (%s)",
    async (engine) => {
      const dir = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "tb-search-progress-")));
      try {
        // Allowed files match twice, refused ones five times: a total that counted a refused file
        // would break matches = 2 × files.
        const tree: Tree = {};
        for (let i = 0; i < 300; i++) {
          tree[`src/f${i}.txt`] = "needle a\nhay\nneedle b\n";
          tree[`other/g${i}.txt`] = "needle\n".repeat(5);
        }
        await writeTree(dir, tree);
        const s = await createSession({
          root: dir,
          plugins: [family],
          config: parseConfig({ tools: { search: { engine }, file: { allowlist: ["^src/"] } } }, "config", [
            filesConfig,
          ]),
        });
        const calls: string[] = [];
        const seen: Array<{ call_id: string; files: number; matches: number }> = [];
        s.on("tool_call", (e) => calls.push(e.call_id));
        s.on("search_progress", (e) => seen.push(e));
        const out = (await s.call("search_files", { query: "needle" })) as SearchResultsPayload;
        await s.close();
        expect(out.entries.every((e) => e.path.startsWith("src/"))).toBe(true);
        expect(seen.length).toBeGreaterThan(0);
        let before = { files: 0, matches: 0 };
        for (const event of seen) {
          expect(event.call_id).toBe(calls[0]);
          expect(event.matches).toBe(2 * event.files);
          expect(event.files).toBeGreaterThanOrEqual(before.files);
          expect(event.files).toBeLessThanOrEqual(300);
          before = event;
        }
      } finally {
        await fs.rm(dir, { recursive: true, force: true });
      }
    },
  );
});

describe("search_files progress in a session that does not know the event", () => {
  it.each(engines)("answers as before, without progress (%s)", async (engine) => {
    const dir = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "tb-search-bare-")));
    try {
      await writeTree(dir, { "a.txt": "needle\n", "b.txt": "needle\nneedle\n" });
      // The tool alone, without its family's contributions: search_progress is no event of this session.
      const bare = definePlugin({ name: "bare", tools: [searchFilesTool] });
      const s = await createSession({
        root: dir,
        plugins: [bare],
        config: parseConfig({ tools: { search: { engine } } }, "config", [filesConfig]),
      });
      const out = (await s.call("search_files", { query: "needle" })) as SearchResultsPayload;
      await s.close();
      expect(out).toMatchObject({ kind: "search_results", files: 2, matches: 3 });
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});
