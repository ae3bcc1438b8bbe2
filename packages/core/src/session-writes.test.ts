import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { definePlugin } from "./plugin.js";
import { type ApprovalPrompt, createSession, type SessionOptions } from "./session.js";
import { defineTool } from "./tool.js";

// Core's write path decides every write, whichever tool asks: root, size, allowlist, protected paths.

const roots: string[] = [];
function tempRoot(): string {
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), "tb-writes-")));
  roots.push(dir);
  return dir;
}
afterEach(() => {
  for (const d of roots.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A plugin tool that declares one path and writes several (like a multi-file rename). */
const multi = defineTool({
  name: "multi_write",
  family: "plug",
  access: "write",
  description: "Writes each file given.",
  input: z.object({ files: z.array(z.object({ path: z.string(), content: z.string() })) }),
  paths: (i) => i.files.slice(0, 1).map((f) => f.path),
  async execute(input, ctx) {
    for (const f of input.files) await ctx.writeFile(ctx.resolve(f.path).abs, f.content);
    return { kind: "ok", n: input.files.length };
  },
});

const confirm = defineTool({
  name: "confirm",
  family: "plug",
  access: "read",
  description: "Asks for a confirmation.",
  input: z.object({}),
  execute: async (_i, ctx) => ({ kind: "answer", yes: await ctx.approve({ summary: "go?" }) }),
});

const plugin = definePlugin({ name: "plug", tools: [multi, confirm] });

function session(root: string, options: Partial<SessionOptions> = {}) {
  return createSession({ root, plugins: [plugin], ...options });
}

describe("the write path", () => {
  it("applies the allowlist to every file a tool writes, not only the declared one", async () => {
    const root = tempRoot();
    const s = await session(root, { config: { tools: { plug: { allowlist: ["^src/"] } } } });
    const out = await s.call("multi_write", {
      files: [
        { path: "src/a.ts", content: "a" },
        { path: "secret.env", content: "b" },
      ],
    });
    expect(out).toMatchObject({ kind: "error", code: "EDENIED", path: "secret.env" });
    expect(String(out.message)).toContain("tools.plug.allowlist");
    expect(existsSync(path.join(root, "secret.env"))).toBe(false);
  });

  it("applies fileWriteMaxBytes to every write", async () => {
    const root = tempRoot();
    const s = await session(root, { config: { limits: { fileWriteMaxBytes: 10 } } });
    const out = await s.call("multi_write", {
      files: [
        { path: "a.txt", content: "small" },
        { path: "b.txt", content: "x".repeat(11) },
      ],
    });
    expect(out).toMatchObject({ kind: "error", code: "ETOO_LARGE", path: "b.txt", limit: 10 });
    expect(existsSync(path.join(root, "b.txt"))).toBe(false);
  });

  it("asks before a protected path is written; headless it is EDENIED naming --allow protected", async () => {
    const root = tempRoot();
    const s = await session(root);
    const out = await s.call("multi_write", { files: [{ path: "configs/app.json", content: "{}" }] });
    expect(out).toMatchObject({ kind: "error", code: "EDENIED" });
    expect(String(out.message)).toContain("--allow protected");
    expect(existsSync(path.join(root, "configs/app.json"))).toBe(false);
    // An undeclared protected write inside the call is caught by the write path itself.
    const second = await s.call("multi_write", {
      files: [
        { path: "ok.txt", content: "fine" },
        { path: ".git/hooks/pre-commit", content: "#!/bin/sh\n" },
      ],
    });
    expect(second).toMatchObject({ code: "EDENIED", path: ".git/hooks/pre-commit" });
    expect(existsSync(path.join(root, ".git"))).toBe(false);
  });

  it("judges protection on the real path: a symlink alias does not dodge it", async () => {
    const root = tempRoot();
    mkdirSync(path.join(root, "configs"));
    writeFileSync(path.join(root, "configs/app.json"), "{}");
    symlinkSync("configs/app.json", path.join(root, "cfg"));
    const s = await session(root);
    const out = await s.call("multi_write", { files: [{ path: "cfg", content: '{"plugins":["x"]}' }] });
    expect(out).toMatchObject({ code: "EDENIED", protected_paths: ["configs/app.json"] });
    expect(readFileSync(path.join(root, "configs/app.json"), "utf8")).toBe("{}");
  });

  it("writes a protected path with allow: ['protected']", async () => {
    const root = tempRoot();
    const s = await session(root, { allow: ["protected"] });
    const out = await s.call("multi_write", { files: [{ path: ".mcp.json", content: "{}" }] });
    expect(out).toMatchObject({ kind: "ok" });
    expect(readFileSync(path.join(root, ".mcp.json"), "utf8")).toBe("{}");
  });

  it("shows the approver a clear summary, and its no stands", async () => {
    const root = tempRoot();
    const prompts: ApprovalPrompt[] = [];
    const s = await session(root, {
      client: {
        approve: async (p) => {
          prompts.push(p);
          return false;
        },
      },
    });
    const out = await s.call("multi_write", { files: [{ path: ".toolbelt/x.json", content: "{}" }] });
    expect(out).toMatchObject({ code: "EDENIED" });
    expect(prompts).toHaveLength(1);
    expect(prompts[0]?.summary).toContain("protected: .toolbelt/x.json");
    expect(existsSync(path.join(root, ".toolbelt"))).toBe(false);
  });

  it("ctx.approve: a person's no stands even where the policy allows", async () => {
    const root = tempRoot();
    const no = await session(root, { client: { approve: async () => false } });
    expect(await no.call("confirm", {})).toEqual({ kind: "answer", yes: false });
    const yes = await session(root, { client: { approve: async () => true } });
    expect(await yes.call("confirm", {})).toEqual({ kind: "answer", yes: true });
    // Nobody to ask: the policy (read access allows) decides.
    const headless = await session(root);
    expect(await headless.call("confirm", {})).toEqual({ kind: "answer", yes: true });
    const denied = await session(root, { config: { tools: { plug: { mode: "deny" } } } });
    expect(await denied.call("confirm", {})).toMatchObject({ code: "EDENIED" });
  });

  it("refuses a direct session.writeFile outside the root or over the limit", async () => {
    const root = tempRoot();
    const s = await session(root, { config: { limits: { fileWriteMaxBytes: 4 } } });
    await expect(s.writeFile(path.join(root, "..", "x.txt"), "a")).rejects.toMatchObject({
      code: "EPATH_ESCAPE",
    });
    await expect(s.writeFile(path.join(root, "x.txt"), "abcdef")).rejects.toMatchObject({
      code: "ETOO_LARGE",
    });
    await s.writeFile(path.join(root, "x.txt"), "abcd");
    expect(readFileSync(path.join(root, "x.txt"), "utf8")).toBe("abcd");
  });
});
