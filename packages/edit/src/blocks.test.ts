import { describe, expect, it } from "vitest";
import { parseBlocks, splitElisions } from "./blocks.js";

const block = (file: string, search: string, replace: string, lang = "ts") =>
  `${file}\n\`\`\`${lang}\n<<<<<<< SEARCH\n${search}\n=======\n${replace}\n>>>>>>> REPLACE\n\`\`\`\n`;

describe("parseBlocks", () => {
  it("takes the filename from the line right before the opening fence, for several files and blocks", () => {
    const content = `Some prose first.\n\n${block("src/a.ts", "a", "A")}\nThen:\n\n${block("src/b.ts", "b", "B")}`;
    const parsed = parseBlocks(content);
    expect(parsed.ok && parsed.blocks.map((b) => [b.file, b.search, b.replace])).toEqual([
      ["src/a.ts", "a", "A"],
      ["src/b.ts", "b", "B"],
    ]);
  });

  it("gives later blocks in one fence the fence's file", () => {
    const content =
      "`lib/x.py`\n```python\n<<<<<<< SEARCH\none\n=======\n1\n>>>>>>> REPLACE\n\n<<<<<<< SEARCH\ntwo\n=======\n2\n>>>>>>> REPLACE\n```\n";
    const parsed = parseBlocks(content);
    expect(parsed.ok && parsed.blocks.map((b) => b.file)).toEqual(["lib/x.py", "lib/x.py"]);
  });

  it("refuses a block without a filename, and prose is not a filename", () => {
    const parsed = parseBlocks(
      "Here is the change:\n```ts\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n```",
    );
    expect(parsed.ok).toBe(false);
    expect(!parsed.ok && parsed.message).toMatch(/no filename/);
  });

  it("does not take a one-word heading like `Update:` for a filename, but takes Makefile", () => {
    const body = "```\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n```\n";
    expect(parseBlocks(`Update:\n${body}`).ok).toBe(false);
    const make = parseBlocks(`Makefile\n${body}`);
    expect(make.ok && make.blocks[0]?.file).toBe("Makefile");
    const colon = parseBlocks(`**src/x.ts**:\n${body}`);
    expect(colon.ok && colon.blocks[0]?.file).toBe("src/x.ts");
  });

  it("rejects shell code blocks clearly", () => {
    const parsed = parseBlocks(`${block("a.ts", "a", "b")}\nNow run:\n\`\`\`bash\nnpm test\n\`\`\`\n`);
    expect(parsed.ok).toBe(false);
    expect(!parsed.ok && parsed.message).toMatch(/bash code block at line \d+ \("npm test"\).*shell tool/s);
  });

  it("still edits a shell script whose fence is marked bash", () => {
    const parsed = parseBlocks(block("deploy.sh", "echo hi", "echo bye", "bash"));
    expect(parsed.ok && parsed.blocks[0]?.file).toBe("deploy.sh");
  });

  it("reports an unterminated block", () => {
    const parsed = parseBlocks("a.ts\n```\n<<<<<<< SEARCH\nx\n=======\ny\n```");
    expect(!parsed.ok && parsed.message).toMatch(/REPLACE/);
  });

  it("reports content without blocks", () => {
    expect(parseBlocks("just words").ok).toBe(false);
  });

  it("splits sections on `...` lines", () => {
    expect(splitElisions("a\n...\nb\n  ...  \nc")).toEqual(["a", "b", "c"]);
  });
});
