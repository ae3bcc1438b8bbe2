import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createSession, type Session } from "@toolbelt/core";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lacks } from "../../../../test-support/capability.js";
import { family } from "../index.js";
import { locateRipgrep } from "./engine.js";
import { capResults } from "./results.js";
import { searchWithRipgrep } from "./ripgrep.js";
import { readLines, verifyShown } from "./verify.js";

// The check that stands in for the sandbox where ripgrep runs unconfined: every line an answer shows
// is read again through core's checked open and kept only if it is that line of that file now. It
// must never drop a legitimate match of an unchanged tree (whatever the encoding, BOM, line end,
// invalid UTF-8 or line length), and must drop what a swap or a change made ripgrep report.

const rg = await locateRipgrep();
const noRg = lacks("ripgrep", !rg && "no ripgrep binary found (@vscode/ripgrep, or rg on PATH)");

const dirs: string[] = [];
const sessions: Session[] = [];
afterAll(async () => {
  await Promise.all(sessions.map((s) => s.close()));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDir(prefix: string): string {
  const d = realpathSync(mkdtempSync(path.join(tmpdir(), prefix)));
  dirs.push(d);
  return d;
}

async function opener(root: string) {
  const s = await createSession({ root, plugins: [family] });
  sessions.push(s);
  return (abs: string) => s.openFileSync(abs);
}

/** ripgrep's collect-all answer as the tool shows it (long lines cut), its plain and JSON readings both. */
async function shown(root: string, query: string, jsonOnly: boolean) {
  const result = await searchWithRipgrep({
    rg: rg?.path as string,
    cwd: root,
    target: ".",
    query,
    maxMatches: 1_000_000,
    jsonOnly,
  });
  return capResults(result, 1_000_000, 1 << 30).files;
}

const utf16 = (text: string, be: boolean) => {
  const le = Buffer.from(text, "utf16le");
  if (!be) return Buffer.concat([Buffer.from([0xff, 0xfe]), le]);
  const swapped = Buffer.from(le);
  swapped.swap16();
  return Buffer.concat([Buffer.from([0xfe, 0xff]), swapped]);
};

// Pieces of hostile text: what each engine must decode the same way ripgrep does.
const PIECES = [
  "hit",
  "hit ",
  " a",
  "\r",
  "\r\n",
  "\n",
  "\n\n",
  "é",
  "日本",
  "\u2028",
  "\ufeff",
  "\t",
  "\u0001",
  "\ud83d\ude00",
  "x".repeat(600),
];
const RAW_BYTES = [
  Buffer.from([0xff]),
  Buffer.from([0xe2, 0x82]),
  Buffer.from([0xc3]),
  Buffer.from([0xed, 0xa0, 0x80]),
  Buffer.from([0xef, 0xbb, 0xbf]),
];

const piece = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...PIECES).map((t) => Buffer.from(t, "utf8")) },
  { weight: 1, arbitrary: fc.constantFrom(...RAW_BYTES) },
);

/** A file: UTF-8 pieces (invalid bytes included) behind an optional BOM, or UTF-16 text of pieces. */
const fileContent = fc.oneof(
  {
    weight: 3,
    arbitrary: fc
      .tuple(fc.constantFrom("", "\ufeff"), fc.array(piece, { maxLength: 30 }))
      .map(([bom, parts]) => Buffer.concat([Buffer.from(bom, "utf8"), ...parts])),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(
        fc.boolean(),
        fc.array(fc.constantFrom(...PIECES, "\ud800", "\udc00x"), { maxLength: 20 }),
        fc.boolean(),
      )
      .map(([be, parts, odd]) => {
        const bytes = utf16(parts.join(""), be);
        return odd ? Buffer.concat([bytes, Buffer.from([0x68])]) : bytes;
      }),
  },
);

describe.skipIf(noRg)("the verifier keeps every line ripgrep shows of an unchanged tree", () => {
  it("on random trees of hostile encodings, line ends and long lines (plain and JSON readings)", async () => {
    const base = tempDir("tb-verify-prop-");
    let n = 0;
    let lines = 0;
    let cut = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fileContent, { minLength: 1, maxLength: 6 }),
        fc.constantFrom("hit", "a", "\\r", "^", "x+", "é|\\x{FFFD}"),
        async (contents, query) => {
          const root = path.join(base, String(n++));
          mkdirSync(path.join(root, "sub"), { recursive: true });
          contents.forEach((content, i) => {
            writeFileSync(path.join(root, i % 2 ? "sub" : "", `f${i}.txt`), content);
          });
          const open = await opener(root);
          for (const jsonOnly of [false, true]) {
            const files = await shown(root, query, jsonOnly);
            const checked = verifyShown(files, root, open);
            for (const f of files) {
              lines += f.matches.length;
              cut += f.matches.filter((m) => m.text.includes("[line cut:")).length;
            }
            expect(checked.changed, `${query} ${JSON.stringify(files)}`).toBe(0);
            expect(checked.files).toEqual(files);
          }
        },
      ),
      { numRuns: 100 },
    );
    // The property was about something: many lines shown, long ones cut among them.
    expect(lines).toBeGreaterThan(300);
    expect(cut).toBeGreaterThan(10);
  }, 120_000);

  it("on the awkward tree of the ripgrep tests: names, CR at the end, 200 KiB lines, lines across reads", async () => {
    const root = tempDir("tb-verify-awkward-");
    const put = (rel: string, content: string | Buffer) => {
      mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
      writeFileSync(path.join(root, rel), content);
    };
    for (const name of [
      'x: binary file matches (found "\\0" byte)',
      'quote"d',
      "back\\slash",
      "cr\rname",
      "tab\tname",
    ])
      put(`odd/${name}`, "hit one\nmiss\nhit two\n");
    put("odd/bare-cr.txt", "hit one\r\nhit last\r");
    put("odd/long.txt", `hit ${"y".repeat(200 * 1024)}\nhit short\n`);
    // Lines that straddle the verifier's 256 KiB reads, a CR just before a read boundary.
    put("odd/straddle.txt", `${"z".repeat(256 * 1024 - 5)}hit\r\n${"hit ".repeat(70_000)}\nhit end`);
    // A short line across the first read's end, its CR the read's last byte and its LF the next's first.
    put("odd/cr-at-boundary.txt", `${"z".repeat(256 * 1024 - 11)}\nhit fives\r\nhit after\r\n`);
    put("odd/cut-at-boundary.txt", `${"z".repeat(256 * 1024 - 11)}\nhit ${"q".repeat(600)}\r\nhit after\r\n`);
    put("odd/many.txt", Array.from({ length: 50_000 }, (_, i) => `hit ${i}`).join("\n"));
    put("odd/utf16-long.txt", utf16(`${"w".repeat(300_000)}hit\r\nhit\r`, false));
    const open = await opener(root);
    for (const jsonOnly of [false, true]) {
      const files = await shown(root, "hit", jsonOnly);
      expect(files.length).toBeGreaterThan(8);
      const checked = verifyShown(files, root, open);
      expect(checked.changed).toBe(0);
      expect(checked.files).toEqual(files);
    }
  });
});

describe.skipIf(noRg)("the verifier drops what is not that line of that root file now", () => {
  let root: string;
  let outside: string;
  beforeAll(() => {
    const base = tempDir("tb-verify-drop-");
    root = path.join(base, "root");
    outside = path.join(base, "outside");
    mkdirSync(path.join(root, "d"), { recursive: true });
    mkdirSync(outside, { recursive: true });
    writeFileSync(path.join(outside, "f.txt"), "hit OUTSIDE SECRET\n");
  });

  it("a file swapped for a symlink to outside, and a directory swapped for one", async () => {
    writeFileSync(path.join(root, "d", "f.txt"), "hit inside\n");
    writeFileSync(path.join(root, "top.txt"), "hit top\n");
    const open = await opener(root);
    // What ripgrep reported while d/f.txt pointed outside.
    symlinkSync(path.join(outside, "f.txt"), path.join(root, "d", "evil"));
    renameSync(path.join(root, "d", "f.txt"), path.join(root, "d", "real"));
    renameSync(path.join(root, "d", "evil"), path.join(root, "d", "f.txt"));
    const leaked = [
      { path: "d/f.txt", matches: [{ line: 1, text: "hit OUTSIDE SECRET" }] },
      { path: "top.txt", matches: [{ line: 1, text: "hit top" }] },
    ];
    expect(verifyShown(leaked, root, open)).toEqual({ files: [leaked[1]], changed: 1 });
    // Swapped back: the report is not the file's line, still dropped.
    renameSync(path.join(root, "d", "f.txt"), path.join(root, "d", "evil"));
    renameSync(path.join(root, "d", "real"), path.join(root, "d", "f.txt"));
    expect(verifyShown(leaked, root, open).changed).toBe(1);
    // The directory swapped for a symlink to outside: refused at the open, whatever the text.
    renameSync(path.join(root, "d"), path.join(root, "dhold"));
    symlinkSync(outside, path.join(root, "d"));
    const viaDir = [{ path: "d/f.txt", matches: [{ line: 1, text: "hit OUTSIDE SECRET" }] }];
    expect(verifyShown(viaDir, root, open)).toEqual({ files: [], changed: 1 });
    rmSync(path.join(root, "d"));
    renameSync(path.join(root, "dhold"), path.join(root, "d"));
  });

  it("a line changed after ripgrep read it, a file gone, a symlink to another root file, a FIFO", async () => {
    writeFileSync(path.join(root, "e.txt"), "hit 1\nhit 2\nhit 3\n");
    writeFileSync(path.join(root, "alias-target.txt"), "hit alias\n");
    symlinkSync(path.join(root, "alias-target.txt"), path.join(root, "alias.txt"));
    const open = await opener(root);
    const files = [
      { path: "alias.txt", matches: [{ line: 1, text: "hit alias" }] },
      {
        path: "e.txt",
        matches: [
          { line: 1, text: "hit 1" },
          { line: 2, text: "hit two" },
          { line: 3, text: "hit 3" },
          { line: 9, text: "hit 9" },
        ],
      },
      { path: "gone.txt", matches: [{ line: 1, text: "hit" }] },
      { path: "../outside/f.txt", matches: [{ line: 1, text: "hit OUTSIDE SECRET" }] },
    ];
    expect(verifyShown(files, root, open)).toEqual({
      files: [{ path: "e.txt", matches: [files[1]?.matches[0], files[1]?.matches[2]] }],
      changed: 5,
    });
    if (process.platform === "linux") {
      const { execFileSync } = await import("node:child_process");
      execFileSync("mkfifo", [path.join(root, "pipe")]);
      const fifo = [{ path: "pipe", matches: [{ line: 1, text: "hit" }] }];
      // Opened without blocking and refused as not a regular file: never read, never hangs.
      expect(verifyShown(fifo, root, open)).toEqual({ files: [], changed: 1 });
    }
  });
});

describe("readLines", () => {
  const lines = (content: Buffer | string, wanted: number[]) => {
    const dir = tempDir("tb-verify-lines-");
    const file = path.join(dir, "f");
    writeFileSync(file, content);
    const fd = openSync(file, "r");
    try {
      return Object.fromEntries(readLines(fd, wanted));
    } finally {
      closeSync(fd);
    }
  };

  it("reads lines as ripgrep prints them", () => {
    expect(lines("a\r\nb\r\r\nc\r", [1, 2, 3])).toEqual({ 1: "a", 2: "b\r", 3: "c\r" });
    expect(lines("\ufeffa\n\ufeffb\n", [1, 2])).toEqual({ 1: "a", 2: "\ufeffb" });
    expect(lines(Buffer.from([0x61, 0xff, 0x0a, 0xe2, 0x82]), [1, 2])).toEqual({ 1: "a\ufffd", 2: "\ufffd" });
    expect(lines(utf16("a\r\nb\ud800c\r", true), [1, 2])).toEqual({ 1: "a", 2: "b\ufffdc\r" });
    expect(lines(utf16("a\n", false), [1, 2])).toEqual({ 1: "a" });
    expect(lines("a\n\nb", [2, 3, 4])).toEqual({ 2: "", 3: "b" });
    expect(lines("", [1])).toEqual({});
  });
});
