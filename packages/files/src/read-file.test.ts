import { spawnSync } from "node:child_process";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createSession, type Payload, parseToolText, type Session } from "@toolbelt/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { need } from "../../../test-support/capability.js";
import { family } from "./index.js";
import type { FileContentPayload, FileUnchangedPayload, ImagePayload } from "./read-file.js";

let root: string;
let sessions: Session[] = [];

async function open(options: { profile?: string; limits?: Record<string, number> } = {}) {
  const s = await createSession({
    root,
    plugins: [family],
    ...(options.profile ? { profile: options.profile } : {}),
    ...(options.limits ? { config: { limits: options.limits } } : {}),
  });
  sessions.push(s);
  return s;
}

const lines = (n: number, prefix = "line") =>
  `${Array.from({ length: n }, (_, i) => `${prefix} ${i + 1}`).join("\n")}\n`;

beforeEach(async () => {
  root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "tb-read-")));
});
afterEach(async () => {
  for (const s of sessions) await s.close();
  sessions = [];
  await fs.rm(root, { recursive: true, force: true });
});

describe("read_file windows", () => {
  it("numbers lines like cat -n and states the window", async () => {
    await fs.writeFile(path.join(root, "a.txt"), "alpha\nbeta\n\tgamma\n");
    const s = await open();
    const { payload, text } = await s.callWithText("read_file", { path: "a.txt" });
    expect(payload).toMatchObject({
      kind: "file_content",
      start_line: 1,
      end_line: 3,
      total_lines: 3,
      truncated: false,
    });
    expect((payload as FileContentPayload).content).toBe("     1\talpha\n     2\tbeta\n     3\t\tgamma");
    const parsed = parseToolText(text);
    expect(parsed.kind).toBe("file_content");
    expect(parsed.headers.Lines).toBe("1-3 of 3");
    expect(parsed.body).toBe((payload as FileContentPayload).content);
  });

  it("reads a window with offset/limit and says how to read more", async () => {
    await fs.writeFile(path.join(root, "big.txt"), lines(50));
    const s = await open();
    const p = (await s.call("read_file", { path: "big.txt", offset: 10, limit: 5 })) as FileContentPayload;
    expect(p.content.split("\n")).toEqual([
      "    10\tline 10",
      "    11\tline 11",
      "    12\tline 12",
      "    13\tline 13",
      "    14\tline 14",
      "... (truncated - use offset/limit to read more)",
    ]);
    expect(p.truncated).toBe(true);
    const { text } = await s.callWithText("read_file", { path: "big.txt", offset: 45 });
    expect(text).toContain("# Lines: 45-50 of 50");
    expect(text).not.toContain("truncated");
  });

  it("bounds a read by fileReadMaxLines", async () => {
    await fs.writeFile(path.join(root, "big.txt"), lines(30));
    const s = await open({ limits: { fileReadMaxLines: 10 } });
    const { payload, text } = await s.callWithText("read_file", { path: "big.txt", limit: 1000 });
    expect(payload).toMatchObject({ start_line: 1, end_line: 10, truncated: true });
    expect(text).toContain("# Truncated: yes (next offset 11)");
  });

  it("cuts very long lines and says so", async () => {
    await fs.writeFile(path.join(root, "min.js"), `short\n${"x".repeat(5000)}\n`);
    const s = await open({ limits: { fileReadMaxLineChars: 100 } });
    const { payload, text } = await s.callWithText("read_file", { path: "min.js" });
    const p = payload as FileContentPayload;
    expect(p.cut_lines).toEqual([2]);
    expect(p.content).toContain(`${"x".repeat(100)} ... [line cut: 5000 chars, showing 100]`);
    expect(text).toContain("# Cut-Lines: 2");
  });

  it("rejects an offset past the end", async () => {
    await fs.writeFile(path.join(root, "a.txt"), "one\n");
    const s = await open();
    expect(await s.call("read_file", { path: "a.txt", offset: 5 })).toMatchObject({
      kind: "error",
      code: "EINVAL_INPUT",
    });
  });

  it("reads an empty file", async () => {
    await fs.writeFile(path.join(root, "empty.txt"), "");
    const s = await open();
    const { payload, text } = await s.callWithText("read_file", { path: "empty.txt" });
    expect(payload).toMatchObject({ kind: "file_content", total_lines: 0, content: "" });
    expect(text).toContain("# Lines: 0 (empty file)");
  });
});

describe("read_file de-duplication", () => {
  it("answers file_unchanged for a repeated read, in words that cannot pass for content", async () => {
    await fs.writeFile(path.join(root, "a.txt"), lines(20));
    const s = await open();
    await s.call("read_file", { path: "a.txt" });
    const { payload, text } = await s.callWithText("read_file", { path: "a.txt" });
    expect(payload).toStrictEqual({
      kind: "file_unchanged",
      start_line: 1,
      end_line: 20,
    } satisfies FileUnchangedPayload);
    expect(text).toBe("# Kind: file_unchanged\n# Already-Shown: 1-20 (unchanged; not repeated)");
    // Headers only: no body, so no line of it can pass for (or be pasted back as) the file's content.
    expect(parseToolText(text)).toMatchObject({
      kind: "file_unchanged",
      headers: { "Already-Shown": "1-20 (unchanged; not repeated)" },
      body: "",
    });
  });

  it("counts a window inside a larger earlier window as read, but not one that extends past it", async () => {
    await fs.writeFile(path.join(root, "a.txt"), lines(100));
    const s = await open();
    await s.call("read_file", { path: "a.txt", offset: 10, limit: 40 });
    expect(await s.call("read_file", { path: "a.txt", offset: 20, limit: 10 })).toMatchObject({
      kind: "file_unchanged",
      start_line: 20,
      end_line: 29,
    });
    expect(await s.call("read_file", { path: "a.txt", offset: 40, limit: 20 })).toMatchObject({
      kind: "file_content",
    });
    // A whole-file read covers every later window, including one to the end.
    await s.call("read_file", { path: "a.txt" });
    expect(await s.call("read_file", { path: "a.txt", offset: 90 })).toMatchObject({
      kind: "file_unchanged",
    });
  });

  it("keeps the notice short, as text and as JSON: less than a 10-line window's worth", async () => {
    await fs.writeFile(path.join(root, "a.txt"), lines(20));
    const s = await open();
    await s.call("read_file", { path: "a.txt", offset: 5, limit: 10 });
    const { payload, text } = await s.callWithText("read_file", { path: "a.txt", offset: 5, limit: 10 });
    expect(text).toBe("# Kind: file_unchanged\n# Already-Shown: 5-14 (unchanged; not repeated)");
    // Half of the notice it replaced (128 bytes of text, 154 of JSON for this window).
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(70);
    expect(JSON.stringify(payload)).toBe('{"kind":"file_unchanged","start_line":5,"end_line":14}');
  });

  it("answers an empty file with its (empty) content every time: a notice would cost more", async () => {
    await fs.writeFile(path.join(root, "empty.txt"), "");
    const s = await open();
    await s.call("read_file", { path: "empty.txt" });
    expect(await s.call("read_file", { path: "empty.txt" })).toMatchObject({
      kind: "file_content",
      total_lines: 0,
    });
  });

  it("answers a partly seen window with only the lines not yet returned, naming the ranges left out", async () => {
    await fs.writeFile(path.join(root, "a.txt"), lines(100));
    const s = await open();
    await s.call("read_file", { path: "a.txt", offset: 10, limit: 20 });
    await s.call("read_file", { path: "a.txt", offset: 50, limit: 10 });
    const { payload, text } = await s.callWithText("read_file", { path: "a.txt", offset: 1, limit: 70 });
    const p = payload as FileContentPayload;
    expect(p.kind).toBe("file_content");
    expect(p.already_shown).toEqual([
      { start: 10, end: 29 },
      { start: 50, end: 59 },
    ]);
    expect(text).toContain("# Already-Shown: 10-29,50-59 (unchanged; not repeated)");
    const numbers = p.content
      .split("\n")
      .filter((l) => /^\s*\d+\t/.test(l))
      .map((l) => Number.parseInt(l, 10));
    const expected = [
      ...Array.from({ length: 9 }, (_, i) => i + 1),
      ...Array.from({ length: 20 }, (_, i) => i + 30),
      ...Array.from({ length: 11 }, (_, i) => i + 60),
    ];
    expect(numbers).toEqual(expected);
    // Now every line of 1-70 was shown: the same window is file_unchanged.
    expect(await s.call("read_file", { path: "a.txt", offset: 1, limit: 70 })).toMatchObject({
      kind: "file_unchanged",
    });
  });

  it("sends a changed file whole, even where the windows overlap", async () => {
    const file = path.join(root, "a.txt");
    await fs.writeFile(file, lines(100));
    const s = await open();
    await s.call("read_file", { path: "a.txt", offset: 1, limit: 50 });
    await fs.appendFile(file, "more\n");
    const p = (await s.call("read_file", { path: "a.txt", offset: 1, limit: 80 })) as FileContentPayload;
    expect(p.kind).toBe("file_content");
    expect(p.already_shown).toBeUndefined();
    expect(p.content.split("\n")).toHaveLength(81);
  });

  it("sends a window whole when the part already seen is too small to be worth naming", async () => {
    await fs.writeFile(path.join(root, "a.txt"), lines(100));
    const s = await open();
    await s.call("read_file", { path: "a.txt", offset: 10, limit: 1 });
    const p = (await s.call("read_file", { path: "a.txt", offset: 1, limit: 20 })) as FileContentPayload;
    expect(p.already_shown).toBeUndefined();
    expect(p.content.split("\n").filter((l) => /^\s*\d+\t/.test(l))).toHaveLength(20);
  });

  it("returns full content after a write through toolbelt", async () => {
    await fs.writeFile(path.join(root, "a.txt"), "one\n");
    const s = await open();
    await s.call("read_file", { path: "a.txt" });
    await s.call("write_file", { path: "a.txt", content: "two\n" });
    expect(await s.call("read_file", { path: "a.txt" })).toMatchObject({
      kind: "file_content",
      content: "     1\ttwo",
    });
  });

  it("detects an external change even with the same size and mtime (content hash)", async () => {
    const file = path.join(root, "a.txt");
    await fs.writeFile(file, "aaaa\n");
    const stamp = new Date("2024-01-01T00:00:00Z");
    await fs.utimes(file, stamp, stamp);
    const s = await open();
    await s.call("read_file", { path: "a.txt" });
    await fs.writeFile(file, "bbbb\n");
    await fs.utimes(file, stamp, stamp);
    expect(await s.call("read_file", { path: "a.txt" })).toMatchObject({
      kind: "file_content",
      content: "     1\tbbbb",
    });
  });

  it("detects an external change that keeps the content but touches the file", async () => {
    const file = path.join(root, "a.txt");
    await fs.writeFile(file, "same\n");
    const s = await open();
    await s.call("read_file", { path: "a.txt" });
    await fs.utimes(file, new Date(), new Date(Date.now() + 5000));
    expect(await s.call("read_file", { path: "a.txt" })).toMatchObject({ kind: "file_content" });
  });

  it("gives a sub-agent its own ledger", async () => {
    await fs.writeFile(path.join(root, "a.txt"), "one\n");
    const s = await open();
    await s.call("read_file", { path: "a.txt" });
    const child = await s.fork();
    expect(await child.call("read_file", { path: "a.txt" })).toMatchObject({ kind: "file_content" });
    expect(await child.call("read_file", { path: "a.txt" })).toMatchObject({ kind: "file_unchanged" });
    expect(await s.call("read_file", { path: "a.txt" })).toMatchObject({ kind: "file_unchanged" });
  });
});

describe("read_file encodings, images and binary files", () => {
  it("drops a UTF-8 BOM and decodes UTF-16 LE and BE with BOMs", async () => {
    await fs.writeFile(
      path.join(root, "u8.txt"),
      Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from("héllo\n")]),
    );
    const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from("one\r\ntwo\r\n", "utf16le")]);
    const be = Buffer.from(le);
    be.swap16();
    be[0] = 0xfe;
    be[1] = 0xff;
    await fs.writeFile(path.join(root, "le.txt"), le);
    await fs.writeFile(
      path.join(root, "be.txt"),
      Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from("one\r\ntwo\r\n", "utf16le").swap16()]),
    );
    const s = await open();
    expect(await s.call("read_file", { path: "u8.txt" })).toMatchObject({
      content: "     1\théllo",
      encoding: "utf-8-bom",
    });
    for (const name of ["le.txt", "be.txt"]) {
      const { payload, text } = await s.callWithText("read_file", { path: name });
      expect(payload).toMatchObject({ content: "     1\tone\n     2\ttwo", line_endings: "crlf" });
      expect(text).toContain("# Line-Endings: crlf");
    }
  });

  it("returns images as base64 with their mime type, up to fileReadMaxImageBytes", async () => {
    const png = Buffer.from("89504e470d0a1a0a0000000d4948445200000001000000010806000000", "hex");
    await fs.writeFile(path.join(root, "pic.PNG"), png);
    const s = await open();
    const p = (await s.call("read_file", { path: "pic.PNG" })) as ImagePayload;
    expect(p).toMatchObject({ kind: "image", mime_type: "image/png", size: png.length });
    expect(Buffer.from(p.base64, "base64").equals(png)).toBe(true);
    const small = await open({ limits: { fileReadMaxImageBytes: 10 } });
    expect(await small.call("read_file", { path: "pic.PNG" })).toMatchObject({
      kind: "error",
      code: "ETOO_LARGE",
    });
  });

  it("refuses other binary files with EBINARY", async () => {
    await fs.writeFile(path.join(root, "a.out"), Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0x00, 0x01]));
    const s = await open();
    const p = (await s.call("read_file", { path: "a.out" })) as Payload;
    expect(p).toMatchObject({ kind: "error", code: "EBINARY" });
    expect(String(p.message)).toContain("binary");
  });

  it("refuses a named pipe instead of blocking on it", async (ctx) => {
    const made = spawnSync("mkfifo", [path.join(root, "pipe")], { encoding: "utf8" });
    need(ctx, "linux", made.status !== 0 && `mkfifo failed: ${made.error?.message ?? made.stderr}`);
    const s = await open();
    expect(await s.call("read_file", { path: "pipe" })).toMatchObject({ code: "EINVAL_INPUT" });
    expect(await s.call("search_files", { query: "x", path: "pipe" })).toMatchObject({
      code: "EINVAL_INPUT",
    });
  });

  it("answers ENOENT, EISDIR and EPATH_ESCAPE (also through a symlink)", async () => {
    await fs.mkdir(path.join(root, "dir"));
    const outside = await fs.mkdtemp(path.join(os.tmpdir(), "tb-outside-"));
    await fs.writeFile(path.join(outside, "secret.txt"), "secret\n");
    await fs.symlink(path.join(outside, "secret.txt"), path.join(root, "link.txt"));
    const s = await open();
    expect(await s.call("read_file", { path: "nope.txt" })).toMatchObject({ code: "ENOENT" });
    expect(await s.call("read_file", { path: "dir" })).toMatchObject({ code: "EISDIR" });
    expect(await s.call("read_file", { path: "../x" })).toMatchObject({ code: "EPATH_ESCAPE" });
    expect(await s.call("read_file", { path: "link.txt" })).toMatchObject({ code: "EPATH_ESCAPE" });
    expect(await s.call("read_file", { path: path.join(outside, "secret.txt") })).toMatchObject({
      code: "EPATH_ESCAPE",
    });
    await fs.rm(outside, { recursive: true, force: true });
  });
});

describe("read_file profiles", () => {
  it("mouaif takes startLine/endLine, 1-indexed and inclusive", async () => {
    await fs.writeFile(path.join(root, "a.txt"), lines(10));
    const s = await open({ profile: "mouaif" });
    const schema = s.bind().tools.find((t) => t.name === "read_file")?.inputSchema as { properties: object };
    expect(Object.keys(schema.properties).sort()).toEqual(["endLine", "path", "startLine"]);
    const p = (await s.call("read_file", { path: "a.txt", startLine: 3, endLine: 4 })) as FileContentPayload;
    expect(p.content.split("\n").slice(0, 2)).toEqual(["     3\tline 3", "     4\tline 4"]);
    expect(p).toMatchObject({ start_line: 3, end_line: 4 });
    expect(await s.call("read_file", { path: "a.txt", startLine: 5, endLine: 2 })).toMatchObject({
      code: "EINVAL_INPUT",
    });
  });

  it("mewbo takes a 0-based offset and a limit", async () => {
    await fs.writeFile(path.join(root, "a.txt"), lines(10));
    const s = await open({ profile: "mewbo" });
    const p = (await s.call("read_file", { path: "a.txt", offset: 0, limit: 2 })) as FileContentPayload;
    expect(p).toMatchObject({ start_line: 1, end_line: 2 });
  });

  it("mewbo's next offset is 0-based too, so following it skips no line", async () => {
    await fs.writeFile(path.join(root, "a.txt"), lines(10));
    const s = await open({ profile: "mewbo" });
    const first = await s.callWithText("read_file", { path: "a.txt", offset: 2, limit: 3 });
    expect(first.payload).toMatchObject({ start_line: 3, end_line: 5, next_offset: 5 });
    expect(first.text).toContain("# Truncated: yes (next offset 5)");
    const next = (await s.call("read_file", { path: "a.txt", offset: 5, limit: 1 })) as FileContentPayload;
    expect(next.content).toBe("     6\tline 6\n... (truncated - use offset/limit to read more)");
  });
});
