import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createSession, parseToolText, type Session } from "@toolbelt/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { family } from "./index.js";
import type { FileContentPayload } from "./read-file.js";

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

beforeEach(async () => {
  root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "tb-readcap-")));
});
afterEach(async () => {
  for (const s of sessions) await s.close();
  sessions = [];
  await fs.rm(root, { recursive: true, force: true });
});

/** `count` lines of `width` characters, each starting with its own number. */
function wideLines(count: number, width: number): string {
  return `${Array.from({ length: count }, (_, i) => `${i + 1}:`.padEnd(width, "x")).join("\n")}\n`;
}

describe("read_file byte cap (limits.fileReadMaxBytes)", () => {
  it("returns at most 256 KiB by default from 10,000 lines of 2,000 chars, and says where to go on", async () => {
    await fs.writeFile(path.join(root, "wide.txt"), wideLines(10_000, 2_000));
    const s = await open();
    const { payload, text } = await s.callWithText("read_file", { path: "wide.txt" });
    const p = payload as FileContentPayload;
    expect(Buffer.byteLength(p.content)).toBeLessThanOrEqual(256 * 1024 + 100);
    expect(p.byte_capped).toBe(256 * 1024);
    expect(p.truncated).toBe(true);
    expect(p.end_line).toBeGreaterThan(100);
    expect(p.end_line).toBeLessThan(200);
    const headers = parseToolText(text).headers;
    expect(headers.Truncated).toBe(`yes (next offset ${p.end_line + 1})`);
    expect(headers["Byte-Cap"]).toContain("262144 bytes reached (limits.fileReadMaxBytes)");
    // The next offset continues exactly after the last line shown.
    const next = (await s.call("read_file", {
      path: "wide.txt",
      offset: p.end_line + 1,
    })) as FileContentPayload;
    expect(next.start_line).toBe(p.end_line + 1);
    expect(next.content.split("\n")[0]).toContain(`\t${p.end_line + 1}:`);
  });

  it("a configured cap is honoured, and a single line larger than it still comes back", async () => {
    await fs.writeFile(path.join(root, "a.txt"), wideLines(50, 100));
    const s = await open({ limits: { fileReadMaxBytes: 1_000 } });
    const p = (await s.call("read_file", { path: "a.txt" })) as FileContentPayload;
    expect(p.end_line).toBe(9);
    expect(p.byte_capped).toBe(1_000);
    const lines = p.content.split("\n");
    expect(Buffer.byteLength(lines.slice(0, -1).join("\n"))).toBeLessThanOrEqual(1_000);
    const tiny = await open({ limits: { fileReadMaxBytes: 10 } });
    const one = (await tiny.call("read_file", { path: "a.txt", offset: 7 })) as FileContentPayload;
    expect([one.start_line, one.end_line]).toEqual([7, 7]);
  });

  it("a file under the cap is not marked", async () => {
    await fs.writeFile(path.join(root, "small.txt"), wideLines(20, 80));
    const s = await open();
    const { payload, text } = await s.callWithText("read_file", { path: "small.txt" });
    expect((payload as FileContentPayload).byte_capped).toBeUndefined();
    expect(text).not.toContain("Byte-Cap");
  });

  it("mouaif: a capped startLine/endLine window continues from endLine + 1", async () => {
    await fs.writeFile(path.join(root, "wide.txt"), wideLines(3_000, 2_000));
    const s = await open({ profile: "mouaif" });
    const p = (await s.call("read_file", {
      path: "wide.txt",
      startLine: 1,
      endLine: 3_000,
    })) as FileContentPayload;
    expect(p.byte_capped).toBe(256 * 1024);
    const next = (await s.call("read_file", {
      path: "wide.txt",
      startLine: p.end_line + 1,
      endLine: p.end_line + 2,
    })) as FileContentPayload;
    expect(next.content.split("\n")[0]).toContain(`\t${p.end_line + 1}:`);
  });
});
