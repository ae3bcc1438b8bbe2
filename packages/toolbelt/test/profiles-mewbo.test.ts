import { existsSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, cli, jsonLines, lacksLandlock, tempRoot } from "./cli-harness.js";
import { type HttpProcess, startHttp } from "./serve-fixture.js";

// The mewbo profile (and the two defaults its spec sets for every profile), behaviour by behaviour,
// through the built CLI.

let root: string;
let outside: string;
let stateDir: string;
const savedStateDir = process.env.TOOLBELT_STATE_DIR;

function run(tool: string, input: unknown, extra: string[] = []) {
  return cli(["run", tool, "--root", root, "--profile", "mewbo", "--input", JSON.stringify(input), ...extra]);
}

function json(stdout: string): Record<string, unknown> {
  return JSON.parse(stdout) as Record<string, unknown>;
}

async function tools(extra: string[]): Promise<{ names: string[]; deferred: string[] }> {
  const out = await cli(["tools", "--format", "json", "--root", root, ...extra]);
  expect(out.code, out.stderr).toBe(0);
  const parsed = JSON.parse(out.stdout) as { tools: Array<{ name: string }>; deferred: string[] };
  return { names: parsed.tools.map((t) => t.name), deferred: parsed.deferred };
}

function configFile(name: string, value: unknown): string {
  const file = path.join(outside, name);
  writeFileSync(file, JSON.stringify(value));
  return file;
}

beforeAll(() => {
  assertBuilt();
  root = tempRoot("tb-mewbo-");
  outside = tempRoot("tb-mewbo-outside-");
  stateDir = tempRoot("tb-mewbo-state-");
  // The servers this file starts save open questions here, not in ~/.toolbelt.
  process.env.TOOLBELT_STATE_DIR = stateDir;
  mkdirSync(path.join(root, "pkg", "sub"), { recursive: true });
  writeFileSync(path.join(root, "ten.txt"), Array.from({ length: 10 }, (_, i) => `line ${i + 1}\n`).join(""));
  writeFileSync(path.join(outside, "secret.txt"), "outside secret\n");
});

afterAll(() => {
  if (savedStateDir === undefined) delete process.env.TOOLBELT_STATE_DIR;
  else process.env.TOOLBELT_STATE_DIR = savedStateDir;
  for (const dir of [root, outside, stateDir]) rmSync(dir, { recursive: true, force: true });
});

describe("tool search is on (auto) by default", () => {
  it("binds small deferrable sets in full with no tool_search; a large one goes behind it; off stays available", async () => {
    const plain = await tools(["--profile", "mewbo"]);
    expect(plain.deferred).toEqual([]);
    expect(plain.names).not.toContain("tool_search");
    expect(plain.names).toContain("lsp_hover");

    const tight = configFile("tight.json", { agent: { context_window_tokens: 500 } });
    const deferred = await tools(["--profile", "mewbo", "--config", tight]);
    expect(deferred.names).toContain("tool_search");
    expect(deferred.deferred).toContain("lsp_hover");
    expect(deferred.names).not.toContain("lsp_hover");

    const off = configFile("off.json", { agent: { context_window_tokens: 500, tool_search: "off" } });
    const all = await tools(["--profile", "mewbo", "--config", off]);
    expect(all.deferred).toEqual([]);
    expect(all.names).toContain("lsp_hover");
  });
});

describe("mewbo's edit tool", () => {
  it("is one of its own two backends with no model or a model neither Claude nor GPT; edit_tool '' follows the model", async () => {
    for (const extra of [[], ["--model", "llama-3.3-70b"]]) {
      const { names } = await tools(["--profile", "mewbo", ...extra]);
      expect(names).toContain("aider_edit_block_tool");
      expect(names).not.toContain("edit_file");
    }
    const empty = configFile("empty-edit.json", { agent: { edit_tool: "" } });
    const gpt = await tools(["--profile", "mewbo", "--model", "gpt-5", "--config", empty]);
    expect(gpt.names).toContain("file_edit_tool");
    // The default profile keeps edit_file for an unknown model.
    expect((await tools(["--model", "llama-3.3-70b"])).names).toContain("edit_file");
  });

  it("a failed aider block does not suggest the tolerant option mewbo's schema lacks", async () => {
    writeFileSync(path.join(root, "i.py"), "class A:\n    def f(self):\n        return 1\n");
    const content =
      "i.py\n```\n<<<<<<< SEARCH\ndef f(self):\n    return 1\n=======\ndef f(self):\n    return 2\n>>>>>>> REPLACE\n```\n";
    const out = await run("aider_edit_block_tool", { content }, ["--allow", "edit"]);
    expect(json(out.stdout)).toMatchObject({ kind: "error", code: "ENO_MATCH" });
    expect(String(json(out.stdout).message)).not.toMatch(/tolerant/);
  });
});

describe("mewbo's read_file", () => {
  it("says the 0-based next offset, and following it skips no line", async () => {
    const first = await run("read_file", { path: "ten.txt", offset: 2, limit: 3 }, ["--format", "text"]);
    expect(first.stdout).toContain("# Truncated: yes (next offset 5)");
    const next = json((await run("read_file", { path: "ten.txt", offset: 5, limit: 1 })).stdout);
    expect(next).toMatchObject({ start_line: 6, end_line: 6 });
    expect(String(next.content)).toContain("line 6");
  });
});

describe("mewbo's shell tools", () => {
  it("aider_shell_tool runs in its root parameter (it used to be dropped)", async () => {
    const inPkg = json(
      (await run("aider_shell_tool", { command: "pwd", root: "pkg" }, ["--allow", "shell"])).stdout,
    );
    expect(inPkg).toMatchObject({ kind: "shell_result", cwd: "pkg", stdout: `${path.join(root, "pkg")}\n` });
    const sub = json(
      (await run("aider_shell_tool", { command: "pwd", root: "pkg", cwd: "sub" }, ["--allow", "shell"]))
        .stdout,
    );
    expect(sub).toMatchObject({ cwd: path.join("pkg", "sub") });
    const outOfRoot = json(
      (await run("aider_shell_tool", { command: "pwd", root: ".." }, ["--allow", "shell"])).stdout,
    );
    expect(outOfRoot).toMatchObject({ kind: "error", code: "EPATH_ESCAPE" });
  });

  it("aider_shell_tool refuses a cwd outside its own root, even inside the project, and runs nothing", async () => {
    // The spec: "A `cwd` outside the resolved `root` raises a path validation error."
    mkdirSync(path.join(root, "pkg", "sub", "deep"), { recursive: true });
    const marker = path.join(root, "ran.txt");
    const tries: Array<Record<string, unknown>> = [
      { root: "pkg/sub", cwd: ".." },
      { root: "pkg/sub", cwd: "../.." },
      { root: "pkg/sub", cwd: path.join(root, "pkg") },
      { root: "pkg/sub", cwd: "deep/../../.." },
    ];
    for (const where of tries) {
      const out = await run("aider_shell_tool", { command: "touch ran.txt; pwd", ...where }, [
        "--allow",
        "shell",
      ]);
      const result = json(out.stdout);
      expect(result, JSON.stringify(where)).toMatchObject({ kind: "error", code: "EPATH_ESCAPE" });
      expect(String(result.message)).toMatch(/outside the call's root pkg\/sub/);
      expect(out.code).toBe(1);
    }
    expect(existsSync(marker)).toBe(false);
    expect(existsSync(path.join(root, "pkg", "ran.txt"))).toBe(false);
    // Inside its root (relative, absolute, or back into it) still runs.
    for (const cwd of ["deep", path.join(root, "pkg", "sub", "deep"), "deep/.."]) {
      const ok = json(
        (await run("aider_shell_tool", { command: "pwd", root: "pkg/sub", cwd }, ["--allow", "shell"]))
          .stdout,
      );
      expect(ok, cwd).toMatchObject({ kind: "shell_result" });
    }
  });

  it("aider_shell_tool judges its root on real paths: a symlink out of the root is outside it", async () => {
    symlinkSync(path.join(root, "pkg"), path.join(root, "pkg", "sub", "up"));
    const out = json(
      (await run("aider_shell_tool", { command: "pwd", root: "pkg/sub", cwd: "up" }, ["--allow", "shell"]))
        .stdout,
    );
    expect(out).toMatchObject({ kind: "error", code: "EPATH_ESCAPE" });
  });

  it("shell_session_tool without a cursor returns everything retained; a filtered read hides nothing", async () => {
    // One exec session: start, wait for the command to finish, read filtered, then twice without a cursor.
    const script = [
      {
        id: "1",
        tool: "aider_shell_tool",
        input: { command: "printf 'alpha\\nbeta\\ngamma\\n'", run_in_background: true },
      },
      { id: "2", tool: "aider_shell_tool", input: { command: "sleep 0.5" } },
      { id: "3", tool: "shell_session_tool", input: { operation: "read", shell_id: "sh-1", filter: "beta" } },
      { id: "4", tool: "shell_session_tool", input: { operation: "read", shell_id: "sh-1" } },
      { id: "5", tool: "shell_session_tool", input: { operation: "read", shell_id: "sh-1" } },
    ];
    const input = `${script.map((c) => JSON.stringify(c)).join("\n")}\n`;
    const out = await cli(["exec", "--root", root, "--profile", "mewbo", "--allow", "shell"], { input });
    const results = Object.fromEntries(
      jsonLines(out.stdout).map((l) => [l.id, l.result as Record<string, unknown>]),
    );
    expect(results["1"], out.stderr).toMatchObject({ kind: "shell_started", shell_id: "sh-1" });
    expect(results["3"], out.stderr).toMatchObject({ output: "beta" });
    expect(results["4"]).toMatchObject({ from_cursor: 0, output: "alpha\nbeta\ngamma\n" });
    expect(results["5"]).toMatchObject({ output: "alpha\nbeta\ngamma\n" });
  });

  it.skipIf(lacksLandlock())(
    "sandboxed commands cannot read outside the root by default; confine_reads: false opts out",
    async () => {
      const denied = json(
        (await run("aider_shell_tool", { command: `cat ${outside}/secret.txt` }, ["--allow", "shell"]))
          .stdout,
      );
      expect(denied.sandbox, String(denied.sandbox_note)).toBe("landlock");
      expect(denied.exit_code).not.toBe(0);
      expect(String(denied.stdout)).not.toContain("outside secret");
      const loose = configFile("loose.json", { agent: { shell_sandbox_confine_reads: false } });
      const read = json(
        (
          await run("aider_shell_tool", { command: `cat ${outside}/secret.txt` }, [
            "--allow",
            "shell",
            "--config",
            loose,
          ])
        ).stdout,
      );
      expect(read).toMatchObject({ exit_code: 0, stdout: "outside secret\n" });
    },
  );
});

describe("late answers to ask_user_question over HTTP", { timeout: 90_000 }, () => {
  let server: HttpProcess | undefined;
  const api = async (route: string, body?: unknown) => {
    const s = server as HttpProcess;
    const response = await fetch(`${s.url}${route}`, {
      method: body === undefined ? "GET" : "POST",
      headers: { authorization: `Bearer ${s.token}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  /** A session of the server's root whose client can answer questions (it advertises ask_user). */
  const sessionId = async () => {
    const opened = await api("/api/sessions", { capabilities: ["ask_user"] });
    expect(opened.status).toBe(201);
    return encodeURIComponent(String(opened.body.id));
  };
  const ask = async (sid: string) => {
    const question = { question: "Which database?", options: ["Postgres", "SQLite"] };
    const r = await api(`/api/sessions/${sid}/calls`, {
      tool: "ask_user_question",
      input: { questions: [question], timeout_seconds: 0.2 },
    });
    expect(r.body.result).toMatchObject({ kind: "question_pending" });
    return String((r.body.result as { question_id: string }).question_id);
  };

  afterAll(async () => {
    await server?.stop();
  });

  it("an expired question stays answerable after a newer message; a late answer is taken once; open questions survive a restart", async () => {
    const httpRoot = tempRoot("tb-mewbo-http-");
    try {
      server = await startHttp(httpRoot, ["--profile", "mewbo"]);
      let sid = await sessionId();

      // The spec: "The question stays answerable afterwards, and through a newer message or an API
      // restart, so a late answer arrives as a new message in the session."
      const first = await ask(sid);
      const message = await api(`/api/sessions/${sid}/messages`, { text: "use SQLite, stop asking" });
      expect(message).toMatchObject({ status: 200, body: { superseded: [] } });
      const open = (await api(`/api/sessions/${sid}/pending`)).body.questions as Array<{
        question_id: string;
      }>;
      expect(open.map((q) => q.question_id)).toEqual([first]);
      expect(
        (await api(`/api/sessions/${sid}/questions/${first}`, { answers: [{ options: [1] }] })).status,
      ).toBe(200);
      const late = await api(`/api/sessions/${sid}/late-answers`, {});
      expect(late.body.answers).toMatchObject([{ question_id: first, answers: [{ selected: ["SQLite"] }] }]);
      expect(String((late.body.answers as Array<{ text: string }>)[0]?.text)).toContain("Late: true");
      expect((await api(`/api/sessions/${sid}/late-answers`, {})).body.answers).toEqual([]);

      const third = await ask(sid);
      await server.stop();
      server = await startHttp(httpRoot, ["--profile", "mewbo"]);
      sid = await sessionId();
      const pending = (await api(`/api/sessions/${sid}/pending`)).body.questions as Array<{
        question_id: string;
      }>;
      expect(pending.map((q) => q.question_id)).toEqual([third]);
      const answered = await api(`/api/sessions/${sid}/questions/${third}`, { answers: [{ text: "MySQL" }] });
      expect(answered).toMatchObject({ status: 200, body: { late: true } });
      const after = await api(`/api/sessions/${sid}/late-answers`, {});
      expect(after.body.answers).toMatchObject([{ question_id: third, answers: [{ text: "MySQL" }] }]);
    } finally {
      await server?.stop();
      server = undefined;
      rmSync(httpRoot, { recursive: true, force: true });
    }
  });
});
