import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, cli, jsonLines, REPO, tempRoot } from "./cli-harness.js";

let root: string;

beforeAll(() => {
  assertBuilt();
  root = tempRoot();
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A project with its own configs/app.json; runs on it pass --trust where the config loads plugins. */
function withConfig(config: unknown): string {
  const dir = tempRoot();
  mkdirSync(path.join(dir, "configs"));
  writeFileSync(path.join(dir, "configs", "app.json"), JSON.stringify(config));
  return dir;
}

describe("toolbelt CLI", () => {
  it("prints its version", async () => {
    const pkg = JSON.parse(readFileSync(path.join(REPO, "packages/toolbelt/package.json"), "utf8")) as {
      version: string;
    };
    const result = await cli(["--version"]);
    expect(result).toMatchObject({ code: 0, stdout: `${pkg.version}\n` });
  });

  it("prints help naming every command", async () => {
    const result = await cli(["--help"]);
    expect(result.code).toBe(0);
    for (const command of ["run <tool>", "exec", "tools", "doctor"]) expect(result.stdout).toContain(command);
  });

  it("answers an unknown tool with EUNKNOWN_TOOL and exit 1", async () => {
    const result = await cli(["run", "no_such_tool", "--root", root, "--input", "{}"]);
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout)).toMatchObject({ kind: "error", code: "EUNKNOWN_TOOL" });
  });

  it.each([
    [["bogus-command"], "unknown command"],
    [["run"], "missing tool"],
    [
      ["run", "read_file", "--root", "."],
      "missing --root value is fine, bad input is not",
      "--input",
      "{not json",
    ],
    [["tools", "--format", "yaml"], "bad choice"],
    [["run", "x", "--no-such-flag"], "unknown flag"],
  ])("exits 2 on a usage error: %j (%s)", async (args, _why, ...rest) => {
    const result = await cli([...(args as string[]), ...(rest as string[])]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/toolbelt: /);
  });

  it("exits 2 and names the key on an invalid config", async () => {
    const dir = withConfig({ agent: { edit_tool: "vim" } });
    const result = await cli(["run", "read_file", "--root", dir, "--input", "{}"]);
    expect(result.code).toBe(2);
    // Like a bad flag: on stderr, stdout stays empty.
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(/toolbelt: EINVAL_CONFIG: .*agent\.edit_tool/);
    rmSync(dir, { recursive: true, force: true });
  });

  it("reads the input from a file and from stdin", async () => {
    const dir = withConfig({
      plugins: [path.join(REPO, "packages/toolbelt/test/__fixtures__/greet-plugin.mjs")],
    });
    const file = path.join(dir, "input.json");
    writeFileSync(file, JSON.stringify({ name: "file" }));
    const fromFile = await cli(["run", "greet", "--trust", "--root", dir, "--input-file", file]);
    expect(JSON.parse(fromFile.stdout)).toEqual({ kind: "greeting", text: "hello file" });
    const fromStdin = await cli(["run", "greet", "--trust", "--root", dir, "--input", "-"], {
      input: '{"name":"stdin"}',
    });
    expect(JSON.parse(fromStdin.stdout)).toEqual({ kind: "greeting", text: "hello stdin" });
    const text = await cli([
      "run",
      "greet",
      "--trust",
      "--root",
      dir,
      "--input",
      '{"name":"t"}',
      "--format",
      "text",
    ]);
    expect(text.stdout).toContain("hello t");
    const invalid = await cli(["run", "greet", "--trust", "--root", dir, "--input", '{"name":""}']);
    expect(invalid.code).toBe(1);
    expect(JSON.parse(invalid.stdout)).toMatchObject({ code: "EINVAL_INPUT", field: "name" });
    rmSync(dir, { recursive: true, force: true });
  });

  it("prints bound schemas in every provider format", async () => {
    const json = await cli(["tools", "--root", root, "--format", "json"]);
    expect(json.code).toBe(0);
    const bound = JSON.parse(json.stdout);
    expect(bound).toMatchObject({ profile: "default", edit_backend: "edit_file" });
    expect(Array.isArray(bound.tools)).toBe(true);
    for (const tool of bound.tools) expect(tool.inputSchema.type).toBe("object");
    const openai = JSON.parse((await cli(["tools", "--root", root, "--format", "openai"])).stdout);
    for (const tool of openai) expect(tool).toMatchObject({ type: "function", strict: true });
    const anthropic = JSON.parse((await cli(["tools", "--root", root, "--format", "anthropic"])).stdout);
    expect(anthropic.map((t: { name: string }) => t.name)).toEqual(
      bound.tools.map((t: { name: string }) => t.name),
    );
    const mcp = JSON.parse((await cli(["tools", "--root", root, "--format", "mcp"])).stdout);
    expect(mcp.tools.map((t: { name: string }) => t.name)).toEqual(
      bound.tools.map((t: { name: string }) => t.name),
    );
  });

  it("runs a JSONL session with exec, answering each line and surviving bad lines", async () => {
    const dir = withConfig({
      plugins: [path.join(REPO, "packages/toolbelt/test/__fixtures__/greet-plugin.mjs")],
    });
    const input = [
      '{"id":"1","tool":"greet","input":{"name":"a"}}',
      "not json",
      '{"id":"2","tool":"nope"}',
      '{"tool":"greet","input":{"name":"b"}}',
      "",
    ].join("\n");
    const result = await cli(["exec", "--trust", "--root", dir], { input });
    const lines = jsonLines(result.stdout);
    expect(lines).toHaveLength(4);
    expect(lines[0]).toEqual({ id: "1", tool: "greet", result: { kind: "greeting", text: "hello a" } });
    expect(lines[1]).toMatchObject({ id: null, result: { code: "EINVAL_INPUT" } });
    expect(lines[2]).toMatchObject({ id: "2", result: { code: "EUNKNOWN_TOOL" } });
    expect(lines[3]).toMatchObject({ id: null, result: { text: "hello b" } });
    expect(result.code).toBe(1);
    rmSync(dir, { recursive: true, force: true });
  });

  it("writes events as JSONL with --events", async () => {
    const dir = withConfig({
      plugins: [path.join(REPO, "packages/toolbelt/test/__fixtures__/greet-plugin.mjs")],
    });
    const result = await cli(["exec", "--trust", "--root", dir, "--events"], {
      input: '{"id":"g","tool":"greet","input":{"name":"e"}}\n',
    });
    const lines = jsonLines(result.stdout);
    const types = lines.filter((l) => l.event).map((l) => (l.event as { type: string }).type);
    expect(types).toEqual(expect.arrayContaining(["tool_call", "tool_result"]));
    const callIndex = lines.findIndex(
      (l) => (l.event as { type?: string } | undefined)?.type === "tool_call",
    );
    const answerIndex = lines.findIndex((l) => l.id === "g");
    expect(callIndex).toBeLessThan(answerIndex);
    expect(result.code).toBe(0);
    rmSync(dir, { recursive: true, force: true });
  });

  it("answers each exec line before the next one is sent", async () => {
    const dir = withConfig({
      plugins: [path.join(REPO, "packages/toolbelt/test/__fixtures__/greet-plugin.mjs")],
    });
    const { spawn } = await import("node:child_process");
    const child = spawn(process.execPath, [
      path.join(REPO, "packages/toolbelt/dist/bin.js"),
      "exec",
      "--trust",
      "--root",
      dir,
    ]);
    const answers: string[] = [];
    let buffer = "";
    const next = () =>
      new Promise<string>((resolve) => {
        const check = () => {
          const nl = buffer.indexOf("\n");
          if (nl >= 0) {
            const line = buffer.slice(0, nl);
            buffer = buffer.slice(nl + 1);
            child.stdout.off("data", onData);
            resolve(line);
          }
        };
        const onData = (d: Buffer) => {
          buffer += d;
          check();
        };
        child.stdout.on("data", onData);
        check();
      });
    child.stdin.write('{"id":"1","tool":"greet","input":{"name":"one"}}\n');
    answers.push(await next());
    child.stdin.write('{"id":"2","tool":"greet","input":{"name":"two"}}\n');
    answers.push(await next());
    child.stdin.end();
    await new Promise((r) => child.on("close", r));
    expect(answers.map((a) => JSON.parse(a).result.text)).toEqual(["hello one", "hello two"]);
    rmSync(dir, { recursive: true, force: true });
  });

  it("refuses a plugin that speaks another plugin API", async () => {
    const dir = tempRoot();
    writeFileSync(path.join(dir, "old.mjs"), "export default { name: 'old', apiVersion: 0, tools: [] };\n");
    mkdirSync(path.join(dir, "configs"));
    writeFileSync(path.join(dir, "configs", "app.json"), JSON.stringify({ plugins: ["./old.mjs"] }));
    const result = await cli(["tools", "--trust", "--root", dir]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("toolbelt: EPLUGIN: ");
    expect(result.stderr).toContain("plugin API 0");
    rmSync(dir, { recursive: true, force: true });
  });

  it("doctor reports what it found", async () => {
    const result = await cli(["doctor", "--root", root, "--format", "json"]);
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as Array<{ family: string; name: string; status: string }>;
    expect(report.find((r) => r.name === "node")?.status).toBe("ok");
  });
});

describe("signals", () => {
  it("SIGTERM to exec ends the background commands it started", async () => {
    const { spawn } = await import("node:child_process");
    const { readdirSync, readFileSync: read } = await import("node:fs");
    const mark = `91${process.pid}`;
    const child = spawn(process.execPath, [
      path.join(REPO, "packages/toolbelt/dist/bin.js"),
      "exec",
      "--root",
      root,
      "--allow",
      "shell",
    ]);
    let out = "";
    child.stdout.on("data", (d) => {
      out += d;
    });
    child.stdin.write(
      `${JSON.stringify({ id: "bg", tool: "shell", input: { command: `sleep ${mark}.5`, run_in_background: true } })}\n`,
    );
    await expect.poll(() => out, { timeout: 30_000 }).toContain('"bg"');
    expect(out).toContain("shell_id");
    const alive = () =>
      readdirSync("/proc").filter((p) => {
        try {
          return /^\d+$/.test(p) && read(`/proc/${p}/cmdline`, "utf8").includes(`${mark}.5`);
        } catch {
          return false;
        }
      });
    expect(alive().length).toBeGreaterThan(0);
    child.kill("SIGTERM");
    const code = await new Promise((r) => child.on("close", r));
    expect(code).toBe(143);
    await expect.poll(alive, { timeout: 5_000 }).toEqual([]);
  }, 60_000);
});

describe("the installed command", () => {
  it("npm links `toolbelt` into node_modules/.bin, as the README's `npx toolbelt` needs", async () => {
    const { spawnSync } = await import("node:child_process");
    const result = spawnSync(path.join(REPO, "node_modules/.bin/toolbelt"), ["--version"], {
      encoding: "utf8",
    });
    expect(result.error).toBeUndefined();
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
  });
});

describe("interactive run", () => {
  it("asks for approval on the terminal: y runs the command, n denies it", async () => {
    const input = '{"command":"echo interactive"}';
    const yes = await cli(["run", "shell", "--root", root, "--interactive", "--input", input], {
      input: "y\n",
    });
    expect(yes.stderr).toContain("Allow? [y/N]");
    expect(yes.code).toBe(0);
    expect(JSON.parse(yes.stdout)).toMatchObject({ exit_code: 0, stdout: "interactive\n" });
    const no = await cli(["run", "shell", "--root", root, "--interactive", "--input", input], {
      input: "n\n",
    });
    expect(no.code).toBe(1);
    expect(JSON.parse(no.stdout)).toMatchObject({ code: "EDENIED" });
  });

  it("binds ask_user_question and asks it on the terminal", async () => {
    const question = JSON.stringify({ questions: [{ question: "Which colour?", options: ["red", "blue"] }] });
    const result = await cli(
      ["run", "ask_user_question", "--root", root, "--interactive", "--input", question],
      {
        input: "2\nsounds good\n",
      },
    );
    expect(result.stderr).toContain("Which colour?");
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({
      answers: [{ selected: ["blue"] }],
      notes: "sounds good",
    });
    const headless = await cli(["run", "ask_user_question", "--root", root, "--input", question]);
    expect(JSON.parse(headless.stdout)).toMatchObject({ code: "EUNKNOWN_TOOL" });
  });
});
