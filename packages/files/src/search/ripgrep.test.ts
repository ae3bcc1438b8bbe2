import { mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { locateRipgrep } from "./engine.js";
import { searchWithJs } from "./js-search.js";
import { compileQuery } from "./regex.js";
import { searchWithRipgrep } from "./ripgrep.js";

const rg = await locateRipgrep();
if (!rg) console.warn("ripgrep match decoding: no ripgrep found; skipped");

describe("ripgrep match lines read without a full JSON parse", () => {
  it.skipIf(!rg)(
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
