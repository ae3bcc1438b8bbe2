import { mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { lacks } from "../../../../test-support/capability.js";
import { locateRipgrep } from "./engine.js";
import { searchWithJs } from "./js-search.js";
import { compileQuery } from "./regex.js";
import { ripgrepArgs, SearchSandboxError, searchWithRipgrep } from "./ripgrep.js";

const rg = await locateRipgrep();
const noRg = lacks("ripgrep", !rg && "no ripgrep binary found (@vscode/ripgrep, or rg on PATH)");

describe("ripgrep match lines read without a full JSON parse", () => {
  it.skipIf(noRg)(
    "decode quotes, backslashes, escapes and non-ASCII text as the JS engine reads them",
    async () => {
      const root = realpathSync(mkdtempSync(path.join(tmpdir(), "tb-rg-fields-")));
      const lines = [
        'say "hi" to \\"them\\" \\\\ end',
        '"lines":{"text":"x"} inside the text',
        "tab\there, é, 日本, \u0001 control",
        "trailing backslash \\",
        "crlf line\r",
      ];
      writeFileSync(path.join(root, 'a "quoted" name.txt'), `${lines.map((l) => `hit ${l}`).join("\n")}\n`);
      const viaRg = await searchWithRipgrep({
        rg: rg?.path as string,
        cwd: root,
        target: ".",
        query: "hit",
        maxMatches: 100,
      });
      const viaJs = await searchWithJs({
        root,
        start: root,
        isFile: false,
        query: compileQuery("hit"),
        maxMatches: 100,
      });
      expect(viaRg.files).toEqual(viaJs.files);
      expect(viaRg.files[0]?.matches.map((m) => m.line)).toEqual([1, 2, 3, 4, 5]);
      expect(viaRg.files[0]?.matches[0]?.text).toBe(`hit ${lines[0]}`);
    },
  );
});

describe("ripgrep plain output read the same as --json", () => {
  const tree = (root: string) => {
    const put = (rel: string | Buffer, content: string | Buffer) => {
      const abs = Buffer.isBuffer(rel) ? Buffer.concat([Buffer.from(`${root}/`), rel]) : path.join(root, rel);
      mkdirSync(path.dirname(abs.toString()), { recursive: true });
      writeFileSync(abs, content);
    };
    // Names plain output could be misread on: one that forges ripgrep's binary notice, quotes,
    // a backslash, CR, a tab, an escape sequence, a leading dash.
    for (const name of [
      'x: binary file matches (found "\\0" byte around offset 1)',
      "x",
      'quote"d.txt',
      "back\\slash",
      "cr\rname",
      "tab\tname",
      "\x1b[2Kesc",
      "-dash",
      "sp ace/é.txt",
    ])
      put(`both/${name}`, "hit one\nmiss\nhit two\n");
    put("both/crlf.txt", "hit a\r\nmiss\r\nhit b\r\n");
    put("both/nolf.txt", "miss\nhit at the end");
    put("both/bad-utf8.txt", Buffer.from([0x68, 0x69, 0x74, 0x20, 0xff, 0xfe, 0x0a]));
    // Hits close together: the JS engine decodes such a file once instead of line by line.
    put(
      "both/bad-utf8-many.txt",
      Buffer.from("hit \xff one\r\nhit \xe2\x82 two\nmiss\nhit three \xc3", "latin1"),
    );
    put("both/cr-inside.txt", "hit \r in the middle\nhit\r\r\n");
    put(
      "both/utf16.txt",
      Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from("hit utf16\r\nmiss\n", "utf16le")]),
    );
    put("both/long.txt", `hit ${"y".repeat(200 * 1024)}\nhit short\n`);
    put("both/many.txt", Array.from({ length: 3000 }, (_, i) => `hit ${i}`).join("\n"));
    put("both/bin.dat", Buffer.from("hit\0hit\n"));
    // Where the engines differ on purpose, ripgrep's plain reading must still equal its JSON:
    // a CR ending the file without LF (JSON keeps it), a line whose JSON passes 8 MiB (dropped).
    put("rg/bare-cr.txt", "hit one\r\nhit last\r");
    put("rg/utf16-cr.txt", Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from("hit last\r", "utf16le")]));
    put("rg/huge-json.txt", `${"hit ".repeat(200_000)}\nhit after\n`);
    put("rg/plain.txt", "hit\n");
    // A name with LF (read as JSON) and one that is not UTF-8 (one JSON walk).
    put("nl/new\nline.txt", "hit\n");
    put("nl/ok.txt", "hit\n");
    put(Buffer.from([0x6e, 0x75, 0x2f, 0x62, 0xff, 0x2e, 0x74]), "hit\n");
    put("nu/ok.txt", "hit\n");
  };

  it.skipIf(noRg)(
    "for awkward names, encodings, line ends, long lines and binary files",
    async () => {
      const root = realpathSync(mkdtempSync(path.join(tmpdir(), "tb-rg-plain-")));
      tree(root);
      const run = (target: string, query: string, maxMatches: number, jsonOnly: boolean) =>
        searchWithRipgrep({ rg: rg?.path as string, cwd: root, target, query, maxMatches, jsonOnly });
      for (const target of [
        "both",
        "rg",
        "nl",
        "nu",
        ".",
        "both/bin.dat",
        "rg/bare-cr.txt",
        "both/crlf.txt",
      ]) {
        for (const query of ["hit", "^hit$", "x*", "\\r"]) {
          for (const max of [1_000_000, 7, 1]) {
            const plain = await run(target, query, max, false);
            expect(plain, `${target} ${query} ${max}`).toEqual(await run(target, query, max, true));
          }
        }
      }
      const all = await run(".", "hit", 1_000_000, false);
      const names = all.files.map((f) => f.path);
      expect(names).toContain('both/x: binary file matches (found "\\0" byte around offset 1)');
      expect(names).not.toContain("both/bin.dat");
      // Its first line's JSON message passes 8 MiB (a submatch per `hit`): dropped, as before.
      expect(all.files.find((f) => f.path === "rg/huge-json.txt")?.matches).toEqual([
        { line: 2, text: "hit after" },
      ]);
      expect(all.files.find((f) => f.path === "rg/bare-cr.txt")?.matches).toEqual([
        { line: 1, text: "hit one" },
        { line: 2, text: "hit last\r" },
      ]);
      expect(all.files.find((f) => f.path === "both/long.txt")?.matches[0]?.text.length).toBe(4 + 200 * 1024);
      expect(all.files.find((f) => f.path === "both/many.txt")?.matches).toHaveLength(3000);
      // 192 pairs of ripgrep runs: under a loaded machine that is more than the default 30 s.
    },
    120_000,
  );

  it.skipIf(noRg)("reads as JSON only the files plain output cannot carry, not the whole batch", async () => {
    const root = realpathSync(mkdtempSync(path.join(tmpdir(), "tb-rg-plain-log-")));
    tree(root);
    // A wrapper that notes how many names each --json run was handed, then runs ripgrep.
    const log = path.join(root, "..", `${path.basename(root)}.log`);
    const wrapper = path.join(root, "..", `${path.basename(root)}-rg.sh`);
    writeFileSync(
      wrapper,
      `#!/bin/sh\nfor a in "$@"; do [ "$a" = --json ] && echo "json $#" >> '${log}'; done\nexec '${rg?.path}' "$@"\n`,
      { mode: 0o755 },
    );
    const out = await searchWithRipgrep({
      rg: wrapper,
      cwd: root,
      target: "both",
      query: "hit",
      maxMatches: 1_000_000,
    });
    expect(out.files.find((f) => f.path === "both/long.txt")?.matches).toHaveLength(2);
    // One JSON run over two files (the flags, `--`, two names): long.txt's 200 KiB line, and
    // utf16.txt, whose last match ends in CR and whose last byte is not LF (UTF-16 puts NUL after it).
    const flags = ripgrepArgs({ target: ".", query: "hit" }).length;
    expect(readFileSync(log, "utf8").trim().split("\n")).toEqual([`json ${flags + 1}`]);
  });

  it.skipIf(noRg)("collects every match of a tree with awkward names as the JS engine does", async () => {
    const root = realpathSync(mkdtempSync(path.join(tmpdir(), "tb-rg-plain-js-")));
    tree(root);
    for (const query of ["hit", "hit \\w+", "^hit \\w+$"]) {
      const viaRg = await searchWithRipgrep({
        rg: rg?.path as string,
        cwd: root,
        target: "both",
        query,
        maxMatches: 1_000_000,
      });
      const viaJs = await searchWithJs({
        root,
        start: path.join(root, "both"),
        isFile: false,
        query: compileQuery(query),
        maxMatches: 1_000_000,
      });
      expect(viaRg.files.length).toBeGreaterThan(10);
      expect(viaRg).toEqual(viaJs);
    }
  });
});

describe("ripgrep's exit 2", () => {
  it.skipIf(noRg)(
    "a file it could not read is skipped, whatever its name says; a refused query is EINVAL_INPUT",
    async () => {
      const root = realpathSync(mkdtempSync(path.join(tmpdir(), "tb-rg-exit2-")));
      writeFileSync(path.join(root, "a.txt"), "hit one\nhit two\n");
      writeFileSync(path.join(root, "b.txt"), "hit three\n");
      // Every run also reports an unreadable file (as a file the sandbox refuses is reported) whose
      // name reads like ripgrep's own regex and glob errors, and exits 2.
      const wrapper = path.join(root, "..", `${path.basename(root)}-rg.sh`);
      writeFileSync(
        wrapper,
        `#!/bin/sh\n'${rg?.path}' "$@"\necho "rg: ./regex parse error: error parsing glob: Permission denied (os error 13)" >&2\nexit 2\n`,
        { mode: 0o755 },
      );
      const search = (query: string, include?: string) =>
        searchWithRipgrep({
          rg: rg?.path as string,
          launch: (args) => ({ file: wrapper, args }),
          cwd: root,
          target: ".",
          query,
          ...(include ? { include } : {}),
          maxMatches: 100,
        });
      expect((await search("hit")).files).toEqual([
        {
          path: "a.txt",
          matches: [
            { line: 1, text: "hit one" },
            { line: 2, text: "hit two" },
          ],
        },
        { path: "b.txt", matches: [{ line: 1, text: "hit three" }] },
      ]);
      expect((await search("hit", "a.*")).files.map((f) => f.path)).toEqual(["a.txt"]);
      // Refused by ripgrep itself: a parse error, a pattern past its size limit, a bad glob.
      await expect(search("(")).rejects.toMatchObject({ code: "EINVAL_INPUT", details: { field: "query" } });
      await expect(search("a{99999}{99999}")).rejects.toMatchObject({
        code: "EINVAL_INPUT",
        message: expect.stringMatching(/size limit/),
      });
      await expect(search("hit", "a{")).rejects.toMatchObject({
        code: "EINVAL_INPUT",
        details: { field: "include" },
      });
    },
  );
});

describe("a sandbox that does not start", () => {
  it.skipIf(noRg)(
    "is told apart from ripgrep's own exits (the caller then runs ripgrep unconfined and checks)",
    async () => {
      const root = realpathSync(mkdtempSync(path.join(tmpdir(), "tb-rg-nosandbox-")));
      writeFileSync(path.join(root, "a.txt"), "hit\n");
      const helper = path.join(root, "..", `${path.basename(root)}-helper.sh`);
      writeFileSync(
        helper,
        "#!/bin/sh\necho 'toolbelt-sandbox: cannot enforce the Landlock ruleset' >&2\nexit 125\n",
        {
          mode: 0o755,
        },
      );
      const search = (confined: boolean) =>
        searchWithRipgrep({
          rg: rg?.path as string,
          launch: (args) => ({ file: helper, args, ...(confined ? { confined: true as const } : {}) }),
          cwd: root,
          target: ".",
          query: "hit",
          maxMatches: 100,
        });
      await expect(search(true)).rejects.toBeInstanceOf(SearchSandboxError);
      // Not a confined launch: an exit 125 is just an exit ripgrep does not give, an internal error.
      await expect(search(false)).rejects.toMatchObject({ code: "EINTERNAL" });
    },
  );
});
