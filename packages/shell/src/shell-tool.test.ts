import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Payload, Session } from "@toolbelt/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ShellResult } from "./payloads.js";
import { openSession, processesWithArgs, removeDir, tempDir } from "./test-harness.js";

let root: string;
let session: Session;

beforeAll(async () => {
  root = tempDir();
  mkdirSync(path.join(root, "sub"));
  session = await openSession(root);
});

afterAll(async () => {
  await session.close();
  removeDir(root);
});

async function run(input: Record<string, unknown>): Promise<ShellResult> {
  const payload = await session.call("shell", input);
  if (payload.kind !== "shell_result") throw new Error(`unexpected payload ${JSON.stringify(payload)}`);
  return payload as unknown as ShellResult;
}

describe("shell", () => {
  it("merges stdout and stderr in the order they were written and reports the exit code", async () => {
    const r = await run({ command: "echo one; echo two >&2; echo three; exit 3" });
    expect(r.stdout).toBe("one\ntwo\nthree\n");
    expect(r.exit_code).toBe(3);
    expect(r.duration_ms).toBeGreaterThanOrEqual(0);
    expect(r.cwd).toBe(".");
  });

  it("reports a syntax error instead of swallowing it", async () => {
    const r = await run({ command: "echo (" });
    expect(r.exit_code).not.toBe(0);
    expect(r.stdout).toMatch(/syntax error/);
  });

  it("runs in cwd inside the root and refuses one outside it", async () => {
    const r = await run({ command: "pwd", cwd: "sub" });
    expect(r.stdout.trim()).toBe(path.join(root, "sub"));
    expect(r.cwd).toBe("sub");
    const outside = await session.call("shell", { command: "pwd", cwd: "../" });
    expect(outside).toMatchObject({ kind: "error", code: "EPATH_ESCAPE" });
    const missing = await session.call("shell", { command: "pwd", cwd: "nope" });
    expect(missing).toMatchObject({ kind: "error", code: "ENOENT" });
  });

  it("returns at once from commands that would wait for a human", async () => {
    writeFileSync(path.join(root, "notes.txt"), "some notes\n");
    const started = Date.now();
    const cases = [
      { command: 'read answer; echo "read returned [$answer]"', expect: /read returned \[\]/ },
      { command: "less notes.txt", expect: /some notes/ },
      {
        command: "printf 'protocol=https\\nhost=example.invalid\\n\\n' | git credential fill",
        expect: /terminal prompts disabled|could not read Username/,
      },
      {
        command:
          "git init -q repo && cd repo && git -c user.name=t -c user.email=t@t commit -q --allow-empty -m first && git log --oneline | cat && git -c user.name=t -c user.email=t@t commit --allow-empty",
        expect: /first[\s\S]*(empty commit message|Aborting)/,
      },
      { command: "python3 -c 'input(\"name? \")' || echo python-eof", expect: /EOFError|python-eof/ },
    ];
    for (const c of cases) {
      const r = await run({ command: c.command, timeout: 20 });
      expect(r.timed_out, c.command).toBeUndefined();
      expect(r.stdout, c.command).toMatch(c.expect);
    }
    // All five together well under one timeout: nothing waited for input.
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it("runs non-interactively: pagers, editors, prompts, TERM and a per-session TMPDIR", async () => {
    const r = await run({
      command:
        'echo "$PAGER $GIT_PAGER $GIT_EDITOR $GIT_TERMINAL_PROMPT $TERM $NO_COLOR"; echo "$TMPDIR"; test -t 0 || echo no-tty-stdin',
    });
    const [vars, tmpdir, stdin] = r.stdout.trim().split("\n");
    expect(vars).toBe("cat cat true 0 dumb 1");
    expect(tmpdir).toMatch(/toolbelt-shell-/);
    expect(existsSync(tmpdir as string)).toBe(true);
    expect(stdin).toBe("no-tty-stdin");
  });

  it("strips ANSI escapes and progress redraws outside tty mode", async () => {
    const r = await run({
      command: "printf '\\033[1;32mgreen\\033[0m \\033]0;title\\007plain\\n 10%%\\r 55%%\\r100%%\\n'",
    });
    expect(r.stdout).toBe("green plain\n100%\n");
  });

  it("ends the whole process group at the timeout, grandchildren and TERM-ignorers included", async () => {
    const r = await run({
      command:
        "sleep 3101 & (trap '' TERM; sleep 3102) & setsid sleep 3103 & bash -c 'sleep 3104' & echo started; wait",
      timeout: 1,
    });
    expect(r.timed_out).toBe(true);
    expect(r.exit_code).toBeNull();
    expect(r.stdout).toContain("started");
    for (const n of ["3101", "3102", "3103", "3104"])
      expect(processesWithArgs("sleep", n), `sleep ${n}`).toEqual([]);
  });

  it("ends what a finished command left running and says so", async () => {
    const r = await run({ command: "sleep 3111 & setsid sleep 3112 >/dev/null 2>&1 & echo done" });
    expect(r.exit_code).toBe(0);
    expect(r.stdout).toBe("done\n");
    expect(r.leftover_processes).toBeGreaterThanOrEqual(1);
    expect(processesWithArgs("sleep", "3111")).toEqual([]);
    expect(processesWithArgs("sleep", "3112")).toEqual([]);
  });

  it("keeps memory bounded through a 1 GB output flood and states the elided middle", async () => {
    const before = process.memoryUsage.rss();
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage.rss());
    }, 20);
    try {
      // One process writing straight into the pipe: pipes through a second process are slow on small VMs.
      const r = await run({
        command: "echo head-marker; head -c 1000000000 /dev/zero; echo; echo tail-marker",
      });
      expect(r.exit_code).toBe(0);
      expect(r.output_bytes).toBe(12 + 1_000_000_000 + 1 + 12);
      expect(r.elided_bytes).toBeGreaterThan(999_000_000);
      expect(r.stdout.length).toBeLessThanOrEqual(session.limits.shellOutputMaxChars + 200);
      expect(r.stdout.startsWith("head-marker\n")).toBe(true);
      expect(r.stdout.endsWith("\ntail-marker\n")).toBe(true);
      expect(r.stdout).toMatch(/\[… \d+ bytes of output elided \(1000000025 bytes in all/);
    } finally {
      clearInterval(sampler);
    }
    const grownMb = (peak - before) / 1024 / 1024;
    console.log(`1 GB flood: peak RSS growth ${grownMb.toFixed(1)} MB`);
    expect(grownMb).toBeLessThan(150);
  });

  it("runs under a pseudo-terminal with tty: true", async () => {
    const r = await run({
      command: "tty; test -t 0 && test -t 1 && echo both-tty; echo $TERM; printf '\\033[31mred\\033[0m\\n'",
      tty: true,
    });
    expect(r.tty).toBe(true);
    expect(r.exit_code).toBe(0);
    expect(r.stdout).toMatch(/^\/dev\/pts\/\d+\nboth-tty\nxterm-256color\n/);
    // Escapes are the program's output under a terminal: kept.
    expect(r.stdout).toContain("\x1b[31mred");
  });

  it("ends the process group when the call is cancelled", async () => {
    const controller = new AbortController();
    const call = session.call("shell", { command: "sleep 3121; echo never" }, { signal: controller.signal });
    // Cancelled once the command runs, so there is a process group to end.
    await expect.poll(() => processesWithArgs("sleep", "3121").length, { timeout: 10_000 }).toBe(1);
    controller.abort();
    expect(await call).toMatchObject({ kind: "error", code: "ECANCELLED" });
    expect(processesWithArgs("sleep", "3121")).toEqual([]);
  });

  it("renders the model-facing text with headers", async () => {
    const { text } = await session.callWithText("shell", { command: "echo hi; exit 2" });
    expect(text).toMatch(
      /^# Exit-Code: 2\n# Duration-Ms: \d+\n# Cwd: \.\n# Sandbox: (landlock|unavailable \(.*\))\n\nhi\n$/,
    );
  });

  it("exports input schemas for providers and rejects bad input with EINVAL_INPUT", async () => {
    const { toOpenAIStrictSchema } = await import("@toolbelt/core");
    const tools = session.bind().tools;
    const shell = tools.find((t) => t.name === "shell");
    const sessionTool = tools.find((t) => t.name === "shell_session");
    expect(Object.keys((shell?.inputSchema.properties ?? {}) as object)).toEqual([
      "command",
      "cwd",
      "timeout",
      "run_in_background",
      "tty",
    ]);
    expect(Object.keys((sessionTool?.inputSchema.properties ?? {}) as object)).toEqual(
      expect.arrayContaining(["operation", "shell_id", "input", "newline", "cursor", "filter", "wait_ms"]),
    );
    expect(() => toOpenAIStrictSchema(shell?.inputSchema ?? {})).not.toThrow();
    expect(await session.call("shell", { command: "echo a\0b" })).toMatchObject({ code: "EINVAL_INPUT" });
    expect(await session.call("shell", { command: "" })).toMatchObject({ code: "EINVAL_INPUT" });
    expect(await session.call("shell", { command: "true", timeout: -1 })).toMatchObject({
      code: "EINVAL_INPUT",
    });
  });

  it("is bound as aider_shell_tool in the mewbo profile", async () => {
    const mewbo = await openSession(root, {}, "mewbo");
    try {
      const names = mewbo.bind().tools.map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(["aider_shell_tool", "shell_session_tool"]));
      const r = await mewbo.call("aider_shell_tool", { command: "echo via-mewbo" });
      expect(r).toMatchObject({ kind: "shell_result", stdout: "via-mewbo\n", exit_code: 0 });
    } finally {
      await mewbo.close();
    }
  });

  it("runs aider_shell_tool in its root, and a relative cwd is taken from the root", async () => {
    mkdirSync(path.join(root, "pkg", "sub"), { recursive: true });
    const mewbo = await openSession(root, {}, "mewbo");
    try {
      const inRoot = await mewbo.call("aider_shell_tool", { command: "pwd", root: "pkg" });
      expect(inRoot).toMatchObject({ kind: "shell_result", cwd: "pkg" });
      const sub = await mewbo.call("aider_shell_tool", { command: "pwd", root: "pkg", cwd: "sub" });
      expect(sub).toMatchObject({ kind: "shell_result", cwd: path.join("pkg", "sub") });
      const out = await mewbo.call("aider_shell_tool", { command: "pwd", root: ".." });
      expect(out).toMatchObject({ kind: "error", code: "EPATH_ESCAPE" });
    } finally {
      await mewbo.close();
    }
  });

  it("asks for approval by default and is denied without an approver", async () => {
    const { createSession } = await import("@toolbelt/core");
    const { family } = await import("./index.js");
    const strict = await createSession({ root, plugins: [family] });
    try {
      const r: Payload = await strict.call("shell", { command: "echo should-not-run" });
      expect(r).toMatchObject({ kind: "error", code: "EDENIED" });
      expect(String(r.message)).toContain("--allow shell");
    } finally {
      await strict.close();
    }
  });
});

describe("session close", () => {
  it("removes the per-session TMPDIR", async () => {
    const own = await openSession(root);
    const r = (await own.call("shell", { command: 'echo "$TMPDIR"' })) as unknown as ShellResult;
    const tmpdir = r.stdout.trim();
    expect(existsSync(tmpdir)).toBe(true);
    await own.close();
    expect(existsSync(tmpdir)).toBe(false);
  });
});
