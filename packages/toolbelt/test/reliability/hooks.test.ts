// Tool-call hooks end to end through the built CLI: command hooks named in config deny, rewrite
// input, add notes and are bounded in time, the same over `run`, `exec`, `serve --mcp` and
// `serve --http` and through the SDK; then the attacks. A hook runs with the user's rights and
// outside the sandbox, so what it runs, what it sees, how long it lives and what it can unlock are
// each bounded; a model that controls the call's input or the project's files must not turn a hook
// into a way out.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createToolbelt } from "../../src/create.js";
import { assertBuilt, BIN, type CliResult, cli, jsonLines, tempRoot } from "../cli-harness.js";
import { startHttp } from "../serve-fixture.js";

// A throwaway user config folder, hook programs written outside every root (a tool in the session
// cannot rewrite them), --config files naming them, project roots holding keep.txt.
const dirs: string[] = [];
let home: string;
const bench = { dir: "" };
let configs = 0;

/** The env every run gets: the throwaway user config folder, no trust switch from outside. */
const env = (extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => ({
  TOOLBELT_CONFIG_DIR: home,
  XDG_CONFIG_HOME: home,
  TOOLBELT_TRUST: "",
  ...extra,
});

function run(args: string[], extraEnv: NodeJS.ProcessEnv = {}, input?: string): Promise<CliResult> {
  return cli(args, { env: env(extraEnv), timeoutMs: 60_000, ...(input !== undefined ? { input } : {}) });
}

/** A node hook program; with `readStdin` (default) `call` holds the call it was given. */
function hook(name: string, body: string, readStdin = true): string {
  const file = path.join(bench.dir, name);
  const head = readStdin
    ? `import { readFileSync, writeFileSync } from "node:fs";\nconst call = JSON.parse(readFileSync(0, "utf8"));\n`
    : `import { writeFileSync } from "node:fs";\n`;
  writeFileSync(file, `${head}${body}\n`);
  return file;
}

/** A --config file (trusted, outside the root) with these hooks. */
function configWith(hooks: Record<string, unknown>): string {
  const file = path.join(bench.dir, `config-${++configs}.json`);
  writeFileSync(file, JSON.stringify({ hooks }));
  return file;
}

/** A project root holding keep.txt. */
function project(): string {
  const root = tempRoot("tb-hooks-");
  dirs.push(root);
  writeFileSync(path.join(root, "keep.txt"), "keep\n");
  return root;
}

/** The last JSON line of a run's stdout: the payload `toolbelt run` printed. */
function payload(result: CliResult): Record<string, unknown> {
  return JSON.parse(result.stdout.trim().split("\n").at(-1) ?? "{}") as Record<string, unknown>;
}

/** A hook entry running `script` with this node. */
function node(script: string): Record<string, unknown> {
  return { command: process.execPath, args: [script] };
}

/** Whether a process runs (a zombie waiting for a reaper does not). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

let denyRm: string;
let denyRmExit2: string;
let rewrite: string;
let note: string;

beforeAll(() => {
  assertBuilt();
  home = tempRoot("tb-hooks-home-");
  bench.dir = tempRoot("tb-hooks-bin-");
  dirs.push(home, bench.dir);
  denyRm = hook(
    "deny-rm.mjs",
    `if (/\\brm\\b/.test(call.input.command ?? "")) console.log(JSON.stringify({ decision: "deny", message: "rm is not allowed here (" + call.calledAs + ")" }));`,
  );
  denyRmExit2 = hook(
    "deny-rm-exit2.mjs",
    `if (/\\brm\\b/.test(call.input.command ?? "")) { process.stderr.write("no rm, said exit 2"); process.exit(2); }`,
  );
  rewrite = hook(
    "rewrite.mjs",
    `console.log(JSON.stringify({ input: { ...call.input, content: "// reviewed\\n" + call.input.content } }));`,
  );
  note = hook(
    "note.mjs",
    `console.log(JSON.stringify({ note: "after " + call.tool + ": " + call.payload.kind }));`,
  );
});

afterAll(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("command hooks (toolbelt run)", () => {
  it("a before hook denies `rm` with a message the model reads; other commands run", async () => {
    const root = project();
    const config = configWith({ before: [{ tools: ["shell"], ...node(denyRm) }] });
    const rm = await run([
      "run",
      "shell",
      "--root",
      root,
      "--config",
      config,
      "--allow",
      "shell",
      "--input",
      JSON.stringify({ command: "rm keep.txt" }),
    ]);
    expect(rm.code).toBe(1);
    expect(payload(rm)).toMatchObject({
      kind: "error",
      code: "EDENIED",
      message: "shell: rm is not allowed here (shell)",
    });
    expect(readFileSync(path.join(root, "keep.txt"), "utf8")).toBe("keep\n");
    const ls = await run([
      "run",
      "shell",
      "--root",
      root,
      "--config",
      config,
      "--allow",
      "shell",
      "--input",
      JSON.stringify({ command: "cat keep.txt" }),
    ]);
    expect(ls.code).toBe(0);
    expect(payload(ls)).toMatchObject({ kind: "shell_result", stdout: "keep\n" });
  });

  it("exit 2 denies with the hook's stderr as the message", async () => {
    const root = project();
    const config = configWith({ before: [{ tools: ["shell"], ...node(denyRmExit2) }] });
    const rm = await run([
      "run",
      "shell",
      "--root",
      root,
      "--config",
      config,
      "--allow",
      "shell",
      "--format",
      "text",
      "--input",
      JSON.stringify({ command: "rm -f keep.txt" }),
    ]);
    expect(rm.code).toBe(1);
    expect(rm.stdout).toContain("# Error: EDENIED");
    expect(rm.stdout).toContain("no rm, said exit 2");
    expect(readFileSync(path.join(root, "keep.txt"), "utf8")).toBe("keep\n");
  });

  it("a before hook rewrites the input; the tool writes what the hook handed on", async () => {
    const root = project();
    const config = configWith({ before: [{ tools: ["write_file"], ...node(rewrite) }] });
    const out = await run([
      "run",
      "write_file",
      "--root",
      root,
      "--config",
      config,
      "--input",
      JSON.stringify({ path: "src/a.ts", content: "export {};\n" }),
    ]);
    expect(out.code).toBe(0);
    expect(readFileSync(path.join(root, "src/a.ts"), "utf8")).toBe("// reviewed\nexport {};\n");
  });

  it("an after hook's note reaches the model-facing text; families and * match", async () => {
    const root = project();
    const config = configWith({ after: [{ families: ["files"], ...node(note) }] });
    const out = await run([
      "run",
      "read_file",
      "--root",
      root,
      "--config",
      config,
      "--format",
      "text",
      "--input",
      JSON.stringify({ path: "keep.txt" }),
    ]);
    expect(out.code).toBe(0);
    expect(out.stdout).toContain("keep");
    expect(out.stdout).toMatch(/\[hook\] node note\.mjs: after read_file: \w+/);
  });

  it("doctor lists the configured hooks", async () => {
    const root = project();
    const config = configWith({ before: [{ tools: ["shell"], ...node(denyRm) }] });
    const doctor = JSON.parse(
      (await run(["doctor", "--root", root, "--config", config, "--format", "json"])).stdout,
    ) as Array<Record<string, string>>;
    expect(doctor).toContainEqual(
      expect.objectContaining({ family: "hooks", name: "before node deny-rm.mjs", status: "ok" }),
    );
  });
});

describe("the same hooks over exec and serve --mcp", () => {
  it("exec: every call of the session goes through the hook", async () => {
    const root = project();
    const config = configWith({ before: [{ tools: ["shell"], ...node(denyRm) }] });
    const lines = [
      { id: "1", tool: "shell", input: { command: "rm keep.txt" } },
      { id: "2", tool: "shell", input: { command: "echo fine" } },
    ];
    const out = await run(
      ["exec", "--root", root, "--config", config, "--allow", "shell"],
      {},
      `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`,
    );
    const results = jsonLines(out.stdout).filter((l) => "result" in l);
    expect(results[0]).toMatchObject({ id: "1", result: { code: "EDENIED" } });
    expect(results[1]).toMatchObject({ id: "2", result: { kind: "shell_result", stdout: "fine\n" } });
    expect(readFileSync(path.join(root, "keep.txt"), "utf8")).toBe("keep\n");
  });

  it("serve --mcp: a real MCP client gets the hook's denial as an error result", async () => {
    const root = project();
    const config = configWith({ before: [{ tools: ["shell"], ...node(denyRm) }] });
    const client = new Client({ name: "hooks-test", version: "1.0.0" });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [BIN, "serve", "--mcp", "--root", root, "--config", config, "--allow", "shell"],
        env: env() as Record<string, string>,
        stderr: "pipe",
      }),
    );
    try {
      const denied = await client.callTool({ name: "shell", arguments: { command: "rm keep.txt" } });
      expect(denied.isError).toBe(true);
      expect(denied.structuredContent).toMatchObject({
        code: "EDENIED",
        message: "shell: rm is not allowed here (shell)",
      });
      const fine = await client.callTool({ name: "shell", arguments: { command: "echo fine" } });
      expect(fine.isError).toBe(false);
    } finally {
      await client.close();
    }
    expect(readFileSync(path.join(root, "keep.txt"), "utf8")).toBe("keep\n");
  });
});

describe("the same hooks over serve --http", () => {
  it("POST /calls: the hook's denial is the call's result; allowed calls run", async () => {
    const root = project();
    const config = configWith({ before: [{ tools: ["shell"], ...node(denyRm) }] });
    const server = await startHttp(root, ["--config", config, "--allow", "shell"]);
    try {
      const api = async (route: string, body?: unknown) => {
        const response = await fetch(`${server.url}${route}`, {
          method: body === undefined ? "GET" : "POST",
          headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
          ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        });
        return (await response.json()) as Record<string, unknown>;
      };
      const sessions = (await api("/api/sessions")) as unknown as Array<{ id: string }>;
      const sid = sessions[0]?.id ?? "";
      const denied = await api(`/api/sessions/${sid}/calls`, {
        tool: "shell",
        input: { command: "rm keep.txt" },
      });
      expect(denied.result).toMatchObject({
        code: "EDENIED",
        message: "shell: rm is not allowed here (shell)",
      });
      const fine = await api(`/api/sessions/${sid}/calls`, {
        tool: "shell",
        input: { command: "echo fine" },
      });
      expect(fine.result).toMatchObject({ kind: "shell_result", stdout: "fine\n" });
    } finally {
      await server.stop();
    }
    expect(readFileSync(path.join(root, "keep.txt"), "utf8")).toBe("keep\n");
  });
});

describe("SDK hooks (createToolbelt)", () => {
  it("the hooks option and session.hooks run around real tool calls", async () => {
    const root = project();
    const session = await createToolbelt({
      root,
      userConfig: false,
      allow: ["shell"],
      hooks: {
        beforeToolCall: [
          (call) =>
            call.tool === "shell" && /\brm\b/.test(String((call.input as { command?: string }).command))
              ? { decision: "deny", message: "rm is not allowed here; use git rm" }
              : undefined,
        ],
      },
    });
    try {
      session.hooks.afterToolCall.push(function audit(call) {
        return { note: `${call.tool} gave ${call.payload.kind}` };
      });
      const denied = await session.callWithText("shell", { command: "rm keep.txt" });
      expect(denied.payload).toMatchObject({
        code: "EDENIED",
        message: "shell: rm is not allowed here; use git rm",
      });
      expect(readFileSync(path.join(root, "keep.txt"), "utf8")).toBe("keep\n");
      const fine = await session.callWithText("shell", { command: "echo fine" });
      expect(fine.payload).toMatchObject({ kind: "shell_result", stdout: "fine\n" });
      expect(fine.text).toContain("[hook] audit: shell gave shell_result");
    } finally {
      await session.close();
    }
  });
});

describe("project hooks and trust", () => {
  function projectWithMarkerHook(): { root: string; marker: string } {
    const root = project();
    const marker = path.join(root, "hook-ran");
    mkdirSync(path.join(root, ".toolbelt/hooks"), { recursive: true });
    writeFileSync(
      path.join(root, ".toolbelt/hooks/mark.mjs"),
      `import { writeFileSync } from "node:fs";\nwriteFileSync(${JSON.stringify(marker)}, "ran");\n`,
    );
    mkdirSync(path.join(root, "configs"));
    writeFileSync(
      path.join(root, "configs/app.json"),
      JSON.stringify({
        hooks: { before: [{ tools: ["*"], command: process.execPath, args: [".toolbelt/hooks/mark.mjs"] }] },
      }),
    );
    return { root, marker };
  }

  it("an untrusted project's hooks do not run, and the CLI says they were ignored", async () => {
    const { root, marker } = projectWithMarkerHook();
    const out = await run([
      "run",
      "read_file",
      "--root",
      root,
      "--input",
      JSON.stringify({ path: "keep.txt" }),
    ]);
    expect(out.code).toBe(0);
    expect(out.stderr).toContain("hooks.before[0] (configs/app.json): runs");
    expect(() => readFileSync(marker)).toThrow();
  });

  it("under --trust they run", async () => {
    const { root, marker } = projectWithMarkerHook();
    const out = await run([
      "run",
      "read_file",
      "--root",
      root,
      "--trust",
      "--input",
      JSON.stringify({ path: "keep.txt" }),
    ]);
    expect(out.code).toBe(0);
    expect(readFileSync(marker, "utf8")).toBe("ran");
  });
});

describe("hooks under attack", () => {
  it("a hook script inside the root that a tool rewrote is not run (it would run outside the sandbox)", async () => {
    const root = project();
    const escaped = path.join(bench.dir, `escaped-${Math.random().toString(36).slice(2)}`);
    mkdirSync(path.join(root, "scripts"));
    writeFileSync(path.join(root, "scripts/guard.mjs"), "// the user's guard: allows everything\n");
    const config = configWith({
      before: [{ tools: ["read_file"], command: process.execPath, args: ["scripts/guard.mjs"] }],
    });
    // The model rewrites the guard with an ordinary, allowed write...
    const evil = `import { writeFileSync } from "node:fs"; writeFileSync(${JSON.stringify(escaped)}, "ran");`;
    const write = await run([
      "run",
      "write_file",
      "--root",
      root,
      "--input",
      JSON.stringify({ path: "scripts/guard.mjs", content: evil }),
    ]);
    expect(write.code).toBe(0);
    // ...and the next call would run it with the user's rights, outside the root.
    const read = await run([
      "run",
      "read_file",
      "--root",
      root,
      "--config",
      config,
      "--input",
      JSON.stringify({ path: "keep.txt" }),
    ]);
    expect(read.code).toBe(1);
    expect(payload(read)).toMatchObject({ code: "EDENIED" });
    expect(String(payload(read).message)).toContain("scripts/guard.mjs is inside the root and not protected");
    expect(existsSync(escaped)).toBe(false);
  });

  it.each([
    ["--require=./x.cjs", "x.cjs", "require('node:fs').writeFileSync(MARK, 'ran');"],
    ["--import=./x.mjs", "x.mjs", "import { writeFileSync } from 'node:fs'; writeFileSync(MARK, 'ran');"],
    [
      "--import=file://ROOT/x.mjs",
      "x.mjs",
      "import { writeFileSync } from 'node:fs'; writeFileSync(MARK, 'ran');",
    ],
  ])("a root file named inside an argument (%s) is not run either (issue 27, 5)", async (arg, file, body) => {
    const root = project();
    const escaped = path.join(bench.dir, `escaped-${Math.random().toString(36).slice(2)}`);
    writeFileSync(path.join(root, file), body.replace("MARK", JSON.stringify(escaped)));
    const config = configWith({
      before: [
        {
          tools: ["read_file"],
          command: process.execPath,
          args: [arg.replace("ROOT", root), "-e", "0"],
        },
      ],
    });
    const read = await run([
      "run",
      "read_file",
      "--root",
      root,
      "--config",
      config,
      "--input",
      JSON.stringify({ path: "keep.txt" }),
    ]);
    expect(payload(read)).toMatchObject({ code: "EDENIED" });
    expect(String(payload(read).message)).toContain(`${file} is inside the root and not protected`);
    expect(existsSync(escaped)).toBe(false);
  });

  it("a bare hook command never resolves through a relative PATH entry to a file of the checkout", async () => {
    const root = project();
    const escaped = path.join(bench.dir, `path-${Math.random().toString(36).slice(2)}`);
    // The checkout ships an executable named like the user's guard; PATH has "." in front (as some CI
    // images and npm scripts do), so a plain spawn with the root as cwd would run this file.
    writeFileSync(path.join(root, "tb-guard"), `#!/bin/sh\necho ran > ${JSON.stringify(escaped)}\n`, {
      mode: 0o755,
    });
    const config = configWith({ before: [{ tools: ["read_file"], command: "tb-guard" }] });
    const read = await run(
      [
        "run",
        "read_file",
        "--root",
        root,
        "--config",
        config,
        "--input",
        JSON.stringify({ path: "keep.txt" }),
      ],
      { PATH: `.:${process.env.PATH ?? "/usr/bin:/bin"}` },
    );
    expect(read.code).toBe(1);
    expect(payload(read)).toMatchObject({ code: "EDENIED" });
    expect(String(payload(read).message)).toContain("tb-guard is not on PATH outside the root");
    expect(existsSync(escaped)).toBe(false);
  });

  it("a hook gets the scrubbed environment: no toolbelt token, no cloud keys", async () => {
    const root = project();
    const dump = path.join(bench.dir, `env-${Math.random().toString(36).slice(2)}.json`);
    const spy = hook("env-spy.mjs", `writeFileSync(${JSON.stringify(dump)}, JSON.stringify(process.env));`);
    const config = configWith({ before: [{ tools: ["*"], ...node(spy) }] });
    const out = await run(
      [
        "run",
        "read_file",
        "--root",
        root,
        "--config",
        config,
        "--input",
        JSON.stringify({ path: "keep.txt" }),
      ],
      { TOOLBELT_TOKEN: "tb-secret", AWS_SECRET_ACCESS_KEY: "aws-secret", OPENAI_API_KEY: "sk-secret" },
    );
    expect(out.code).toBe(0);
    const seen = JSON.parse(readFileSync(dump, "utf8")) as Record<string, string>;
    expect(seen.PATH).toBeTruthy();
    expect(seen.TOOLBELT_TOKEN).toBeUndefined();
    expect(seen.AWS_SECRET_ACCESS_KEY).toBeUndefined();
    expect(seen.OPENAI_API_KEY).toBeUndefined();
  });

  it("a hook that hangs and forks is killed after timeout_ms with its whole process group, and the call is denied (fail closed)", async () => {
    const root = project();
    const pids = path.join(bench.dir, `pids-${Math.random().toString(36).slice(2)}`);
    const hang = hook(
      "hang-fork.mjs",
      `import { spawn } from "node:child_process";\nconst child = spawn("sleep", ["300"], { stdio: "ignore" });\nwriteFileSync(${JSON.stringify(pids)}, JSON.stringify([process.pid, child.pid]));\nsetInterval(() => {}, 1000);`,
    );
    const config = configWith({ before: [{ tools: ["*"], timeout_ms: 1000, ...node(hang) }] });
    const out = await run([
      "run",
      "write_file",
      "--root",
      root,
      "--config",
      config,
      "--input",
      JSON.stringify({ path: "x.txt", content: "x" }),
    ]);
    expect(out.code).toBe(1);
    expect(payload(out)).toMatchObject({ code: "EDENIED", hook: "node hang-fork.mjs" });
    expect(String(payload(out).message)).toContain("did not answer within 1000 ms (killed)");
    expect(existsSync(path.join(root, "x.txt"))).toBe(false);
    const [hookPid, sleepPid] = JSON.parse(readFileSync(pids, "utf8")) as [number, number];
    // SIGKILL is delivered asynchronously: wait (bounded) until neither runs.
    await expect.poll(() => [hookPid, sleepPid].filter(running), { timeout: 5_000 }).toEqual([]);
  });

  it("a hook that floods stdout is cut off at the output bound and the call is denied", async () => {
    const root = project();
    // writeSync: process.stdout.write to a pipe queues in the hook's own memory while the loop runs.
    const flood = hook(
      "flood.mjs",
      `import { writeSync } from "node:fs";\nconst chunk = "x".repeat(65536);\nfor (;;) writeSync(1, chunk);`,
      false,
    );
    const config = configWith({
      before: [{ tools: ["*"], timeout_ms: 30_000, ...node(flood) }],
    });
    const out = await run([
      "run",
      "read_file",
      "--root",
      root,
      "--config",
      config,
      "--input",
      JSON.stringify({ path: "keep.txt" }),
    ]);
    expect(out.code).toBe(1);
    expect(String(payload(out).message)).toContain("printed more than 1048576 bytes (killed)");
  });

  it("a hook that never reads its stdin does not crash the CLI, even with a large input", async () => {
    const root = project();
    const deaf = hook("deaf.mjs", "process.exit(0);", false);
    const config = configWith({
      before: [{ tools: ["write_file"], ...node(deaf) }],
    });
    const big = "y".repeat(1024 * 1024);
    // Through stdin: 1 MiB is over the OS's limit for one argv entry.
    const out = await run(
      ["run", "write_file", "--root", root, "--config", config, "--input", "-"],
      {},
      JSON.stringify({ path: "big.txt", content: big }),
    );
    expect(out.code).toBe(0);
    expect(readFileSync(path.join(root, "big.txt"), "utf8").length).toBe(big.length);
  });

  it("an input a hook rewrote to leave the root is refused like the model's own", async () => {
    const root = project();
    const outside = path.join(bench.dir, `outside-${Math.random().toString(36).slice(2)}.txt`);
    const redirect = hook(
      "redirect.mjs",
      `console.log(JSON.stringify({ input: { ...call.input, path: ${JSON.stringify(outside)} } }));`,
    );
    const config = configWith({
      before: [{ tools: ["write_file"], ...node(redirect) }],
    });
    const out = await run([
      "run",
      "write_file",
      "--root",
      root,
      "--config",
      config,
      "--input",
      JSON.stringify({ path: "a.txt", content: "x" }),
    ]);
    expect(out.code).toBe(1);
    expect(payload(out)).toMatchObject({ code: "EPATH_ESCAPE" });
    expect(existsSync(outside)).toBe(false);
  });

  it("a hook's allow does not open protected paths", async () => {
    const root = project();
    const allow = hook("allow.mjs", `console.log(JSON.stringify({ decision: "allow" }));`);
    const config = configWith({ before: [{ tools: ["*"], ...node(allow) }] });
    const out = await run([
      "run",
      "write_file",
      "--root",
      root,
      "--config",
      config,
      "--input",
      JSON.stringify({ path: "configs/app.json", content: '{"tools":{"shell":{"mode":"allow"}}}' }),
    ]);
    expect(out.code).toBe(1);
    expect(payload(out)).toMatchObject({ code: "EDENIED", protected_paths: ["configs/app.json"] });
    expect(existsSync(path.join(root, "configs/app.json"))).toBe(false);
  });

  it("a profile's name for the tool does not slip past a hook set on the tool's own name", async () => {
    const root = project();
    const denyRmProfile = hook(
      "deny-rm-profile.mjs",
      `if (/\\brm\\b/.test(call.input.command ?? "")) console.log(JSON.stringify({ decision: "deny", message: "no rm via " + call.calledAs }));`,
    );
    const config = configWith({ before: [{ tools: ["shell"], ...node(denyRmProfile) }] });
    const out = await run([
      "run",
      "aider_shell_tool",
      "--profile",
      "mewbo",
      "--root",
      root,
      "--config",
      config,
      "--allow",
      "shell",
      "--input",
      JSON.stringify({ command: "rm keep.txt" }),
    ]);
    expect(out.code).toBe(1);
    expect(payload(out)).toMatchObject({
      code: "EDENIED",
      message: "aider_shell_tool: no rm via aider_shell_tool",
    });
    expect(existsSync(path.join(root, "keep.txt"))).toBe(true);
  });
});
