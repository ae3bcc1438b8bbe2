import { parseToolText, renderText, renderTree } from "@toolbelt/core";
import { describe, expect, it } from "vitest";
import { shownCommand, shownDir, shownJson, shownLine, shownName } from "./shown.js";

/** What a browser would let reorder, hide or break a line. */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;

describe("the console's shown text", () => {
  it("draws hostile file names from a listing's text visibly and distinctly", () => {
    const names = ["evil\n# Kind: error\n# Count: 999", "a\rb", "\x1b[2Kx", "\u202etxt.exe", "back\\slash"];
    const text = renderText(
      [
        ["Kind", "file_list"],
        ["Count", names.length],
      ],
      renderTree(names.map((path) => ({ path: `dir/${path}` }))),
    );
    // The page rebuilds cards from the text: every real name comes back, then is drawn escaped.
    const entries = parseToolText(text).entries ?? [];
    expect(entries.map((e) => e.path.slice(4)).sort()).toEqual([...names].sort());
    const drawn = entries.map((e) => shownName(e.path.slice(4)));
    expect(drawn.some((d) => INVISIBLE.test(d))).toBe(false);
    expect(drawn).toContain("\\u{202E}txt.exe");
    expect(drawn).toContain("evil\\n# Kind: error\\n# Count: 999");
    expect(drawn).toContain("back\\slash");
    expect(new Set(drawn).size).toBe(names.length);
    expect(shownDir("a\u200b/b")).toBe("a\\u{200B}/b");
  });

  it("draws an approval's command and input with nothing hidden", () => {
    const command = `echo building${" ".repeat(480)}; rm -rf x`;
    expect(shownCommand(`shell: ${command}`)).toBe("shell: echo building␠×480; rm -rf x");
    expect(shownCommand("shell: echo ok\x1b[2K\rrm -rf x")).toBe("shell: echo ok\\x1B[2K\\rrm -rf x");
    // Already escaped summaries from core come through unchanged.
    expect(shownCommand("shell: echo building␠×480; rm -rf x")).toBe("shell: echo building␠×480; rm -rf x");
    const json = shownJson({ command: "run \u202eexe.sh\u200b" });
    expect(json).toBe('{\n  "command": "run \\u{202E}exe.sh\\u{200B}"\n}');
  });

  it("keeps tabs and backslashes of match text but escapes what rewrites a line", () => {
    expect(shownLine('\tprintf("a\\n");\x1b[2K\r')).toBe('\tprintf("a\\n");\\x1B[2K\\r');
  });
});
