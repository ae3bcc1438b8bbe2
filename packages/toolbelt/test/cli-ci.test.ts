import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { need } from "../../../test-support/capability.js";
import { assertBuilt, BIN, cli, jsonLines, tempRoot } from "./cli-harness.js";

// The CLI as a CI job and a person meet it: exit codes a pipeline can branch on, usage errors that
// say what was wrong, output that streams, help that shows a tool's input.

let root: string;
let userDir: string;
const env = () => ({ TOOLBELT_CONFIG_DIR: userDir, TOOLBELT_TRUST: "0" });

beforeAll(() => {
  assertBuilt();
  root = tempRoot("tb-ci-");
  userDir = tempRoot("tb-ci-user-");
  writeFileSync(path.join(root, "a.txt"), "alpha\n");
});
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
  rmSync(userDir, { recursive: true, force: true });
});

const run = (args: string[], input?: string) =>
  cli(args, { cwd: root, env: env(), ...(input !== undefined ? { input } : {}) });

/** Runs a shell pipeline (real pipes, so stdin is a FIFO) with the built CLI as `$TB`. */
function sh(script: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("sh", ["-c", script], {
      cwd: root,
      env: { ...process.env, ...env(), TB: `${process.execPath} ${BIN}` },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => {
      stdout += d;
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("a CI job can fail on a failed command", { timeout: 60_000 }, () => {
  it("run shell: a non-zero exit is CLI exit 1 with the payload printed; --no-fail-on-command-error opts out", async () => {
    const failed = await run([
      "run",
      "shell",
      "--allow",
      "shell",
      "--input",
      '{"command":"echo out; exit 3"}',
    ]);
    expect(failed.code).toBe(1);
    expect(JSON.parse(failed.stdout)).toMatchObject({ kind: "shell_result", exit_code: 3, stdout: "out\n" });
    expect(failed.stderr).toContain("the command failed (exit code 3)");
    const optOut = await run([
      "run",
      "shell",
      "--allow",
      "shell",
      "--no-fail-on-command-error",
      "--input",
      '{"command":"exit 3"}',
    ]);
    expect(optOut.code).toBe(0);
    const ok = await run(["run", "shell", "--allow", "shell", "--input", '{"command":"true"}']);
    expect(ok.code).toBe(0);
  });

  it("run shell: a timeout is exit 1, and the text names the limit", async () => {
    const r = await run([
      "run",
      "shell",
      "--allow",
      "shell",
      "--format",
      "text",
      "--input",
      '{"command":"sleep 30","timeout":0.5}',
    ]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain("# Timed-Out: yes, after the 0.5 s limit");
    expect(r.stderr).toContain("timed out after 0.5 s");
  });

  it("exec: an error payload or a failed command is exit 1 with a summary on stderr", async () => {
    const input = [
      '{"id":"a","tool":"shell","input":{"command":"exit 4"}}',
      '{"id":"b","tool":"nope"}',
      '{"id":"c","tool":"read_file","input":{"path":"a.txt"}}',
      "",
    ].join("\n");
    const r = await run(["exec", "--allow", "shell"], input);
    expect(jsonLines(r.stdout)).toHaveLength(3);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      'toolbelt exec: 3 calls: 1 error (id "b": EUNKNOWN_TOOL), 1 failed command (id "a": exit code 4)',
    );
    const onlyCommand = await run(
      ["exec", "--allow", "shell", "--no-fail-on-command-error"],
      '{"id":"a","tool":"shell","input":{"command":"exit 4"}}\n',
    );
    expect(onlyCommand.code, onlyCommand.stderr + onlyCommand.stdout).toBe(0);
    const noFail = await run(["exec", "--allow", "shell", "--no-fail-on-error"], input);
    expect(noFail.code, noFail.stderr).toBe(0);
    expect(noFail.stderr).toContain("toolbelt exec: 3 calls: 1 error");
    const clean = await run(["exec"], '{"id":"c","tool":"read_file","input":{"path":"a.txt"}}\n');
    expect(clean.code, clean.stderr + clean.stdout).toBe(0);
    expect(clean.stderr).not.toContain("toolbelt exec:");
  });
});

describe("usage errors are usage errors", { timeout: 60_000 }, () => {
  it("an unknown --profile is exit 2 and names the profiles", async () => {
    for (const command of [
      ["run", "read_file", "--input", '{"path":"a.txt"}'],
      ["tools"],
      ["serve", "--mcp"],
    ]) {
      const r = await run([...command, "--profile", "mewbow"]);
      expect(r.code, command.join(" ")).toBe(2);
      expect(r.stderr).toContain("unknown --profile mewbow: expected one of default, mewbo, mouaif");
      expect(r.stdout).toBe("");
    }
  });

  it("an unknown TOOLBELT_SEARCH_ENGINE is exit 2", async () => {
    const r = await cli(["run", "search_files", "--input", '{"query":"alpha"}'], {
      cwd: root,
      env: { ...env(), TOOLBELT_SEARCH_ENGINE: "ripgrepp" },
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('TOOLBELT_SEARCH_ENGINE="ripgrepp": expected ripgrep, rg, js');
  });

  it("a config error goes to stderr, exit 2, nothing on stdout", async () => {
    const dir = tempRoot("tb-ci-config-");
    mkdirSync(path.join(dir, "configs"));
    writeFileSync(path.join(dir, "configs", "app.json"), JSON.stringify({ agent: { edit_tool: "vim" } }));
    const r = await cli(["tools", "--root", dir], { env: env() });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toMatch(/toolbelt: EINVAL_CONFIG: .*agent\.edit_tool/);
    rmSync(dir, { recursive: true, force: true });
  });

  it("a reader that closes the pipe early (head) ends the CLI quietly", async () => {
    const lines = Array.from({ length: 300 }, () => '{"tool":"read_file","input":{"path":"a.txt"}}').join(
      "\n",
    );
    writeFileSync(path.join(root, "many.jsonl"), `${lines}\n`);
    const r = await sh(
      "{ $TB exec < many.jsonl 2>err.txt; echo $? > rc.txt; } | head -c 10 > /dev/null; cat err.txt; cat rc.txt",
    );
    expect(r.stdout).not.toMatch(/EPIPE|Error|at /);
    expect(r.stdout.trim()).toBe("0");
  });

  it("serve --http on a busy port says so and suggests --port 0", async () => {
    const blocker: Server = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const r = await run(["serve", "--http", "--port", String(port)]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`port ${port} on 127.0.0.1 is already in use`);
      expect(r.stderr).toContain("--port 0");
    } finally {
      blocker.close();
    }
  });
});

describe("denials say what can allow them", { timeout: 60_000 }, () => {
  it("a shell call without --allow names --allow, a user --config and --trust, not the untrusted project's config", async () => {
    const r = await run(["run", "shell", "--input", '{"command":"true"}']);
    expect(r.code).toBe(1);
    const payload = JSON.parse(r.stdout) as { code: string; message: string };
    expect(payload.code).toBe("EDENIED");
    expect(payload.message).toContain("--allow shell");
    expect(payload.message).toContain("--config FILE");
    expect(payload.message).toContain("configs/app.json of a trusted project (--trust");
  });
});

describe("input and help for people", { timeout: 60_000 }, () => {
  it("piped stdin is the input when --input is absent", async () => {
    const r = await sh(`printf '%s' '{"path":"a.txt"}' | $TB run read_file`);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ kind: "file_content", content: "     1\talpha" });
  });

  it("no input at all: the error names --input -", async () => {
    const r = await run(["run", "read_file"]);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ code: "EINVAL_INPUT" });
    expect(r.stderr).toContain("--input - to read it from stdin");
  });

  it("tools --format names and text", async () => {
    const names = await run(["tools", "--format", "names"]);
    expect(names.code).toBe(0);
    expect(names.stdout.split("\n")).toEqual(expect.arrayContaining(["read_file", "shell", "edit_file"]));
    const text = await run(["tools", "--format", "text"]);
    expect(text.stdout).toMatch(/^read_file +Read a text file/m);
    expect(text.stdout).toContain("toolbelt run TOOL --help");
  });

  it("run TOOL --help prints the tool's description and input schema; run --help stays the flags", async () => {
    const r = await run(["run", "read_file", "--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("Read a text file as numbered lines");
    expect(r.stdout).toContain("  path (string, required): file path, relative to the project root");
    expect(r.stdout).toContain('"properties"');
    const mewbo = await run(["run", "aider_shell_tool", "--profile", "mewbo", "-h"]);
    expect(mewbo.stdout).toContain("command (string, required)");
    const flags = await run(["run", "--help"]);
    expect(flags.stdout).toContain("--fail-on-command-error");
    expect(flags.stdout).toMatch(/--allow\s+protected/);
  });

  it("a foreground command streams shell_output events (shell_id: the call id) before its result", async () => {
    const r = await run(
      ["exec", "--allow", "shell", "--events"],
      '{"id":"s1","tool":"shell","input":{"command":"echo one; echo two"}}\n',
    );
    const lines = jsonLines(r.stdout);
    const outputs = lines.filter((l) => (l.event as { type?: string } | undefined)?.type === "shell_output");
    expect(outputs.map((l) => (l.event as { data: string }).data).join("")).toBe("one\ntwo\n");
    expect(outputs.every((l) => (l.event as { shell_id: string }).shell_id === "s1")).toBe(true);
    const answer = lines.findIndex((l) => l.id === "s1");
    expect(lines.indexOf(outputs.at(-1) as Record<string, unknown>)).toBeLessThan(answer);
  });

  it("the streamed output reaches stderr when stderr is a terminal", async (ctx) => {
    // `script` gives the CLI a pseudo-terminal; without it there is no TTY to test with.
    const which = await sh("command -v script");
    need(
      ctx,
      "script",
      which.code !== 0 && "`script` (util-linux) is not installed: no pseudo-terminal for stderr",
    );
    const r = await sh(
      `script -qec "$TB run shell --allow shell --input '{\\"command\\":\\"echo streamed-line\\"}' >out.json" /dev/null`,
    );
    expect(r.stdout).toContain("streamed-line");
    expect(JSON.parse(readFileSync(path.join(root, "out.json"), "utf8"))).toMatchObject({
      stdout: "streamed-line\n",
    });
  });
});
