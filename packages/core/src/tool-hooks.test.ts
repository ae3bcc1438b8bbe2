import {
  chmodSync,
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
import { parseConfig } from "./config.js";
import { untrustedPart } from "./config-sources.js";
import { definePlugin } from "./plugin.js";
import { createSession, type SessionOptions } from "./session.js";
import { defineTool } from "./tool.js";
import type { BeforeToolCallHook, ToolCallInfo } from "./tool-hooks.js";
import { describeHooks, hookCommandProblem } from "./tool-hooks.js";

const roots: string[] = [];
function tempRoot(): string {
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), "tb-hooks-")));
  roots.push(dir);
  return dir;
}
afterEach(() => {
  for (const d of roots.splice(0)) rmSync(d, { recursive: true, force: true });
});

const save = defineTool({
  name: "save",
  family: "plug",
  access: "write",
  description: "Writes a file.",
  input: z.strictObject({ path: z.string(), content: z.string() }),
  paths: (i) => [i.path],
  async execute(input, ctx) {
    await ctx.writeFile(ctx.resolve(input.path).abs, input.content);
    return { kind: "saved", path: input.path };
  },
});

const run = defineTool({
  name: "run",
  family: "exec",
  access: "execute",
  description: "Pretends to run a command (the default policy asks).",
  input: z.strictObject({ command: z.string() }),
  execute: async (input) => ({ kind: "ran", command: input.command }),
});

const fail = defineTool({
  name: "fail",
  family: "plug",
  access: "read",
  description: "Throws.",
  input: z.strictObject({}),
  execute: async () => {
    throw new Error("boom");
  },
});

const plugin = definePlugin({ name: "plug", tools: [save, run, fail] });

function session(root: string, options: Partial<SessionOptions> = {}) {
  return createSession({ root, plugins: [plugin], ...options });
}

describe("before hooks (SDK functions)", () => {
  it("deny: the tool does not run and the model reads the hook's message as EDENIED", async () => {
    const root = tempRoot();
    const seen: ToolCallInfo[] = [];
    const s = await session(root, {
      hooks: {
        beforeToolCall: [
          (call) => {
            seen.push(call);
            return call.tool === "save" ? { decision: "deny", message: "no saving on Fridays" } : undefined;
          },
        ],
      },
    });
    const out = await s.callWithText("save", { path: "a.txt", content: "x" }, { callId: "c1" });
    expect(out.payload).toMatchObject({ kind: "error", code: "EDENIED", tool: "save" });
    expect(out.text).toContain("no saving on Fridays");
    expect(existsSync(path.join(root, "a.txt"))).toBe(false);
    expect(seen[0]).toMatchObject({
      tool: "save",
      calledAs: "save",
      family: "plug",
      access: "write",
      input: { path: "a.txt", content: "x" },
      callId: "c1",
      root,
      session: s.id,
    });
  });

  it("the first deny wins and later hooks do not run", async () => {
    const root = tempRoot();
    const order: string[] = [];
    const s = await session(root, {
      hooks: {
        beforeToolCall: [
          () => {
            order.push("a");
            return { decision: "allow" };
          },
          () => {
            order.push("b");
            return { decision: "deny", message: "b says no" };
          },
          () => {
            order.push("c");
          },
        ],
      },
    });
    const out = await s.call("run", { command: "ls" });
    expect(out).toMatchObject({ code: "EDENIED", message: "run: b says no", hook: "function" });
    expect(order).toEqual(["a", "b"]);
  });

  it("allow answers the policy's ask, but never a policy deny", async () => {
    const root = tempRoot();
    const allow: BeforeToolCallHook = () => ({ decision: "allow" });
    // Without the hook, execute asks and nobody can answer here.
    const plain = await session(root);
    expect(await plain.call("run", { command: "ls" })).toMatchObject({ code: "EDENIED" });
    const s = await session(root, { hooks: { beforeToolCall: [allow] } });
    expect(await s.call("run", { command: "ls" })).toEqual({ kind: "ran", command: "ls" });
    const denied = await session(root, {
      hooks: { beforeToolCall: [allow] },
      config: { tools: { exec: { mode: "deny" } } },
    });
    expect(await denied.call("run", { command: "ls" })).toMatchObject({ kind: "error", code: "EDENIED" });
  });

  it("allow does not answer a firm ask (an opaque command line while deny rules apply)", async () => {
    const root = tempRoot();
    const opaque = defineTool({
      name: "opaque",
      family: "exec",
      access: "execute",
      description: "Reports its command line as one part nobody can see through.",
      input: z.strictObject({ command: z.string() }),
      ruleSubjects: async (i) => ({ commands: [{ words: [i.command], text: i.command, opaque: "eval" }] }),
      execute: async (input) => ({ kind: "ran", command: input.command }),
    });
    const s = await createSession({
      root,
      plugins: [definePlugin({ name: "opaque", tools: [opaque] })],
      config: { tools: { exec: { rules: { deny: ["shell(curl:*)"] } } } },
      hooks: { beforeToolCall: [() => ({ decision: "allow" })] },
    });
    const out = await s.call("opaque", { command: 'eval "$x"' });
    expect(out).toMatchObject({ kind: "error", code: "EDENIED" });
  });

  it("allow does not open protected paths", async () => {
    const root = tempRoot();
    const s = await session(root, { hooks: { beforeToolCall: [() => ({ decision: "allow" })] } });
    const out = await s.call("save", { path: "configs/app.json", content: "{}" });
    expect(out).toMatchObject({ kind: "error", code: "EDENIED", protected_paths: ["configs/app.json"] });
    expect(existsSync(path.join(root, "configs/app.json"))).toBe(false);
  });

  it("input change: the tool runs with the new input", async () => {
    const root = tempRoot();
    const s = await session(root, {
      hooks: {
        beforeToolCall: [
          (call) => ({ input: { ...(call.input as object), content: "rewritten" } }),
          // A later hook sees the earlier change.
          (call) => {
            expect((call.input as { content: string }).content).toBe("rewritten");
          },
        ],
      },
    });
    expect(await s.call("save", { path: "a.txt", content: "original" })).toMatchObject({ kind: "saved" });
    expect(readFileSync(path.join(root, "a.txt"), "utf8")).toBe("rewritten");
  });

  it("an input change that leaves the root is refused like the model's own (EPATH_ESCAPE)", async () => {
    const root = tempRoot();
    const outside = tempRoot();
    const target = path.join(outside, "pwned.txt");
    const s = await session(root, {
      hooks: { beforeToolCall: [() => ({ input: { path: target, content: "x" } })] },
    });
    const out = await s.call("save", { path: "a.txt", content: "x" });
    expect(out).toMatchObject({ kind: "error", code: "EPATH_ESCAPE" });
    expect(existsSync(target)).toBe(false);
    expect(existsSync(path.join(root, "a.txt"))).toBe(false);
  });

  it("an input change into a path the allowlist refuses is refused", async () => {
    const root = tempRoot();
    const s = await session(root, {
      config: { tools: { plug: { allowlist: ["^src/"] } } },
      hooks: { beforeToolCall: [() => ({ input: { path: "secret.env", content: "x" } })] },
    });
    expect(await s.call("save", { path: "src/a.ts", content: "x" })).toMatchObject({ code: "EDENIED" });
    expect(existsSync(path.join(root, "secret.env"))).toBe(false);
  });

  it("an input change the schema refuses is EINVAL_INPUT naming the hook", async () => {
    const root = tempRoot();
    const s = await session(root, {
      hooks: {
        beforeToolCall: [
          function widen() {
            return { input: { path: "a.txt", content: 5 } };
          },
        ],
      },
    });
    const out = await s.call("save", { path: "a.txt", content: "x" });
    expect(out).toMatchObject({ kind: "error", code: "EINVAL_INPUT", hook: "widen" });
    expect(String(out.message)).toContain("before hook widen");
  });

  it("editing the input in place changes nothing (hooks get a copy)", async () => {
    const root = tempRoot();
    const s = await session(root, {
      hooks: {
        beforeToolCall: [
          (call) => {
            (call.input as Record<string, unknown>).path = "../escape.txt";
          },
        ],
      },
    });
    expect(await s.call("save", { path: "a.txt", content: "x" })).toMatchObject({
      kind: "saved",
      path: "a.txt",
    });
  });

  it("a hook that throws denies the call (fail closed)", async () => {
    const root = tempRoot();
    const s = await session(root, {
      hooks: {
        beforeToolCall: [
          () => {
            throw new Error("policy server down");
          },
        ],
      },
    });
    const out = await s.call("save", { path: "a.txt", content: "x" });
    expect(out).toMatchObject({ kind: "error", code: "EDENIED" });
    expect(String(out.message)).toContain("policy server down");
    expect(existsSync(path.join(root, "a.txt"))).toBe(false);
  });

  it("an answer that is not a hook answer denies the call, a misspelt key included", async () => {
    const root = tempRoot();
    const s = await session(root, {
      hooks: { beforeToolCall: [() => ({ decision: "maybe" }) as never] },
    });
    expect(await s.call("save", { path: "a.txt", content: "x" })).toMatchObject({ code: "EDENIED" });
    const typo = await session(root, {
      hooks: { beforeToolCall: [() => ({ decison: "deny" }) as never] },
    });
    const out = await typo.call("save", { path: "a.txt", content: "x" });
    expect(out).toMatchObject({ code: "EDENIED" });
    expect(String(out.message)).toContain("unknown key decison");
    expect(existsSync(path.join(root, "a.txt"))).toBe(false);
  });

  it("forks run their parent's hooks", async () => {
    const root = tempRoot();
    const s = await session(root, {
      hooks: { beforeToolCall: [() => ({ decision: "deny", message: "parent says no" })] },
    });
    const child = await s.fork();
    expect(await child.call("save", { path: "a.txt", content: "x" })).toMatchObject({
      code: "EDENIED",
      message: "save: parent says no",
    });
    await s.close();
  });
});

describe("after hooks (SDK functions)", () => {
  it("replace the payload, add notes the model reads, and see thrown errors as payloads", async () => {
    const root = tempRoot();
    const seen: unknown[] = [];
    const s = await session(root, {
      hooks: {
        afterToolCall: [
          (call) => {
            seen.push(call.payload);
            if (call.tool === "save") return { payload: { ...call.payload, audited: true } };
            return undefined;
          },
          function audit() {
            return { note: "logged to audit" };
          },
        ],
      },
    });
    const out = await s.callWithText("save", { path: "a.txt", content: "x" });
    expect(out.payload).toMatchObject({
      kind: "saved",
      audited: true,
      hook_notes: ["audit: logged to audit"],
    });
    expect(out.text).toContain("[hook] audit: logged to audit");
    const failed = await s.call("fail", {});
    expect(failed).toMatchObject({ kind: "error", code: "EINTERNAL" });
    expect(seen[1]).toMatchObject({ kind: "error" });
  });

  it("a hook that throws keeps the payload and says so in a note", async () => {
    const root = tempRoot();
    const s = await session(root, {
      hooks: {
        afterToolCall: [
          function broken() {
            throw new Error("disk full");
          },
        ],
      },
    });
    const out = await s.callWithText("save", { path: "a.txt", content: "x" });
    expect(out.payload).toMatchObject({ kind: "saved", path: "a.txt" });
    expect(out.text).toContain("after hook broken failed (result kept): disk full");
    expect(readFileSync(path.join(root, "a.txt"), "utf8")).toBe("x");
  });

  it("do not run when the call never reached the tool", async () => {
    const root = tempRoot();
    let calls = 0;
    const s = await session(root, {
      hooks: {
        beforeToolCall: [() => ({ decision: "deny", message: "no" })],
        afterToolCall: [
          () => {
            calls++;
          },
        ],
      },
    });
    await s.call("save", { path: "a.txt", content: "x" });
    expect(calls).toBe(0);
  });
});

describe("command hooks from config", () => {
  function script(root: string, rel: string, body: string): string {
    const file = path.join(root, rel);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, `#!/bin/sh\n${body}\n`);
    chmodSync(file, 0o755);
    return file;
  }

  it("a command inside the root but outside the protected paths is refused (the model could rewrite it)", async () => {
    const root = tempRoot();
    script(root, "scripts/ok.sh", "exit 0");
    const s = await session(root, {
      config: { hooks: { before: [{ tools: ["*"], command: "./scripts/ok.sh" }] } },
    });
    const out = await s.call("save", { path: "a.txt", content: "x" });
    expect(out).toMatchObject({ kind: "error", code: "EDENIED" });
    expect(String(out.message)).toContain("scripts/ok.sh is inside the root and not protected");
    expect(describeHooks(s.config, root)[0]).toMatchObject({ status: "unavailable" });
  });

  it("so is an interpreter's script argument there, and a protected symlink to an unprotected file", async () => {
    const root = tempRoot();
    script(root, "scripts/guard.mjs", "");
    const viaArg = await session(root, {
      config: {
        hooks: { before: [{ tools: ["*"], command: process.execPath, args: ["scripts/guard.mjs"] }] },
      },
    });
    expect(await viaArg.call("save", { path: "a.txt", content: "x" })).toMatchObject({ code: "EDENIED" });
    mkdirSync(path.join(root, ".toolbelt"));
    symlinkSync(path.join(root, "scripts/guard.mjs"), path.join(root, ".toolbelt/guard.mjs"));
    const viaLink = await session(root, {
      config: { hooks: { before: [{ tools: ["*"], command: ".toolbelt/guard.mjs" }] } },
    });
    const out = await viaLink.call("save", { path: "a.txt", content: "x" });
    expect(String(out.message)).toContain("scripts/guard.mjs is inside the root and not protected");
    expect(existsSync(path.join(root, "a.txt"))).toBe(false);
  });

  it("a command under .toolbelt/ runs, and matches by family", async () => {
    const root = tempRoot();
    script(root, ".toolbelt/hooks/deny.sh", 'echo \'{"decision":"deny","message":"family exec is off"}\'');
    const s = await session(root, {
      config: { hooks: { before: [{ families: ["exec"], command: ".toolbelt/hooks/deny.sh" }] } },
    });
    expect(await s.call("run", { command: "ls" })).toMatchObject({
      code: "EDENIED",
      message: "run: family exec is off",
      hook: "deny.sh",
    });
    // Another family is not matched.
    expect(await s.call("save", { path: "a.txt", content: "x" })).toMatchObject({ kind: "saved" });
  });

  it("config needs tools or families", () => {
    expect(() => parseConfig({ hooks: { before: [{ command: "x" }] } })).toThrow(/tools.*families/);
  });

  it("an untrusted layer's hooks are dropped and listed", () => {
    const { allowed, ignored } = untrustedPart(
      { hooks: { before: [{ tools: ["*"], command: "./evil.sh" }] } },
      parseConfig({}),
      "configs/app.json",
    );
    expect(allowed).toEqual({});
    expect(ignored).toEqual([
      { key: "hooks.before[0]", source: "configs/app.json", why: "runs ./evil.sh before tool calls" },
    ]);
  });
});

describe("hookCommandProblem: files of the root named inside arguments", () => {
  it("finds them after =, in file: URLs, in lists and in -c text; leaves code and options alone", () => {
    const root = tempRoot();
    mkdirSync(path.join(root, "scripts"));
    writeFileSync(path.join(root, "x.cjs"), "");
    writeFileSync(path.join(root, "scripts/guard.sh"), "");
    const refused = (args: string[]) => hookCommandProblem("/usr/bin/node", args, root);
    expect(refused(["--require=./x.cjs", "-e", "0"])).toContain("x.cjs is inside the root");
    expect(refused([`--import=file://${root}/x.cjs`])).toContain("x.cjs is inside the root");
    expect(refused(["--loader", "a.mjs,./x.cjs"])).toContain("x.cjs is inside the root");
    expect(refused(["-c", "exec ./scripts/guard.sh"])).toContain("scripts/guard.sh is inside the root");
    expect(refused(["-e", "console.log(1/2, 'x.js')", "--max-old-space-size=64"])).toBeUndefined();
    mkdirSync(path.join(root, ".toolbelt"));
    writeFileSync(path.join(root, ".toolbelt/guard.cjs"), "");
    expect(refused(["--require=./.toolbelt/guard.cjs"])).toBeUndefined();
  });
});
