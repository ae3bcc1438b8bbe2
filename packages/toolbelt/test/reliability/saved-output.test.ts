// Issue 30, item 3: a command's output longer than a result shows is kept whole in a file of the
// session's own (outside the root), which read_file and search_files read and nothing writes. Attacked
// end to end through the built CLI: another session reads it, the write tools write it, a sandboxed
// command writes into it or plants a link beside it, and the session's end leaves it behind.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, BIN, cli, lacksLandlock, REPO, tempRoot } from "../cli-harness.js";

type Result = Record<string, unknown>;

const base = tempRoot("tb-saved-e2e-");
const state = path.join(base, "state");
const home = path.join(base, "home");
const env = {
  TOOLBELT_STATE_DIR: state,
  TOOLBELT_CONFIG_DIR: home,
  XDG_CONFIG_HOME: home,
  TOOLBELT_TRUST: "",
};

beforeAll(() => assertBuilt());
afterAll(() => rmSync(base, { recursive: true, force: true }));

let roots = 0;
function project(): string {
  const root = path.join(base, `root${roots++}`);
  mkdirSync(root, { recursive: true });
  return root;
}

/** One `toolbelt exec` session kept open: each call is answered before the next is sent. */
class ExecSession {
  readonly #child: ChildProcessWithoutNullStreams;
  #buffer = "";
  #stderr = "";
  readonly #waiting = new Map<string, (r: Result) => void>();
  #next = 0;
  readonly closed: Promise<number | null>;

  constructor(args: string[]) {
    this.#child = spawn(process.execPath, [BIN, "exec", ...args], {
      cwd: REPO,
      env: { ...process.env, NO_COLOR: "1", ...env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.#child.stdout.setEncoding("utf8");
    this.#child.stderr.setEncoding("utf8");
    this.#child.stderr.on("data", (d: string) => {
      this.#stderr += d;
    });
    this.#child.stdout.on("data", (d: string) => {
      this.#buffer += d;
      for (let nl = this.#buffer.indexOf("\n"); nl >= 0; nl = this.#buffer.indexOf("\n")) {
        const line = JSON.parse(this.#buffer.slice(0, nl)) as { id?: string; result?: Result };
        this.#buffer = this.#buffer.slice(nl + 1);
        if (line.id && line.result) this.#waiting.get(line.id)?.(line.result);
      }
    });
    this.closed = new Promise((resolve) => this.#child.on("close", resolve));
  }

  call(tool: string, input: unknown): Promise<Result> {
    const id = `c${this.#next++}`;
    const answer = new Promise<Result>((resolve, reject) => {
      this.#waiting.set(id, resolve);
      void this.closed.then(() => reject(new Error(`exec ended before answering ${tool}: ${this.#stderr}`)));
    });
    this.#child.stdin.write(`${JSON.stringify({ id, tool, input })}\n`);
    return answer;
  }

  async close(): Promise<number | null> {
    this.#child.stdin.end();
    return this.closed;
  }

  /** Ends the process without letting it close its session (a crash, an OOM kill). */
  async crash(): Promise<void> {
    this.#child.kill("SIGKILL");
    await this.closed;
  }
}

/** About 5 MB of log with one error line in its middle. */
const FLOOD =
  "yes 'compiling module: nothing to report here' | head -n 60000; echo 'ERROR: the build failed at step 42'; yes 'linking: nothing to report here either' | head -n 65000";

describe("long shell output, kept whole", { timeout: 120_000 }, () => {
  it("a 5 MB output's error line in the middle is found with search_files and read with read_file; only this session reads it, nothing writes it, and it goes with the session", async () => {
    const root = project();
    const a = new ExecSession(["--root", root, "--allow", "shell", "--allow", "files", "--allow", "edit"]);
    const r = await a.call("shell", { command: FLOOD });
    expect(r.kind, JSON.stringify(r).slice(0, 500)).toBe("shell_result");
    expect(r.output_bytes).toBeGreaterThan(4_900_000);
    expect(r.elided_bytes).toBeGreaterThan(4_800_000);
    expect(String(r.stdout)).not.toContain("ERROR: the build failed");
    const file = String(r.output_file);
    expect(path.isAbsolute(file)).toBe(true);
    expect(file.startsWith(root)).toBe(false);
    expect(r.output_file_bytes).toBe(statSync(file).size);

    // search_files finds the line, read_file reads it by its number.
    const found = await a.call("search_files", { query: "ERROR: the build failed", path: file });
    expect(found).toMatchObject({ kind: "search_results", matches: 1, path: file });
    const entry = (
      found.entries as Array<{ path: string; matches: Array<{ line: number; text: string }> }>
    )[0];
    expect(entry?.path).toBe(file);
    const line = entry?.matches[0]?.line as number;
    expect(entry?.matches[0]?.text).toBe("ERROR: the build failed at step 42");
    const read = await a.call("read_file", { path: file, offset: line, limit: 1 });
    expect(read).toMatchObject({ kind: "file_content", path: file, start_line: line });
    expect(String(read.content)).toContain("ERROR: the build failed at step 42");

    // Another session (another process, same user and state dir) cannot read it, by either tool.
    const other = project();
    for (const [tool, input] of [
      ["read_file", { path: file }],
      ["search_files", { query: "ERROR", path: file }],
    ] as const) {
      const out = await cli(["run", tool, "--root", other, "--input", JSON.stringify(input)], { env });
      expect(JSON.parse(out.stdout), tool).toMatchObject({ kind: "error", code: "EPATH_ESCAPE" });
    }
    // Nor its directory, nor a neighbour's path the model might guess.
    expect(await a.call("read_file", { path: path.dirname(file) })).toMatchObject({ code: "EPATH_ESCAPE" });
    expect(await a.call("list_files", { path: path.dirname(file) })).toMatchObject({ code: "EPATH_ESCAPE" });

    // The write tools are refused, and the file is as it was.
    const size = statSync(file).size;
    expect(await a.call("write_file", { path: file, content: "forged\n" })).toMatchObject({
      kind: "error",
      code: "EPATH_ESCAPE",
    });
    expect(
      await a.call("edit_file", { path: file, old_text: "ERROR: the build failed", new_text: "all good" }),
    ).toMatchObject({ kind: "error", code: "EPATH_ESCAPE" });
    expect(statSync(file).size).toBe(size);

    // Session end: the file and its directory are gone.
    await a.close();
    expect(existsSync(file)).toBe(false);
    expect(existsSync(path.dirname(file))).toBe(false);
  });

  it.skipIf(lacksLandlock())(
    "a sandboxed command can neither write into the saved output nor plant a link beside it",
    async () => {
      const root = project();
      const a = new ExecSession(["--root", root, "--allow", "shell", "--allow", "files"]);
      const file = String((await a.call("shell", { command: FLOOD })).output_file);
      const before = readFileSync(file);
      const dir = path.dirname(file);
      const attack = await a.call("shell", {
        command: `echo forged >> '${file}'; echo forged > '${dir}/9-shell.log'; ln -s /etc/passwd '${dir}/10-shell.log'; ls '${dir}'`,
      });
      expect(String(attack.stdout)).toMatch(/Permission denied|Read-only|Operation not permitted/);
      expect(readFileSync(file).equals(before)).toBe(true);
      expect(existsSync(path.join(dir, "9-shell.log"))).toBe(false);
      expect(existsSync(path.join(dir, "10-shell.log"))).toBe(false);
      await a.close();
    },
  );

  it("the profiles' shell tools save it too (mewbo's aider_shell_tool, read with its read_file)", async () => {
    const root = project();
    const a = new ExecSession(["--root", root, "--profile", "mewbo", "--allow", "shell", "--allow", "files"]);
    const r = await a.call("aider_shell_tool", { command: FLOOD });
    const file = String(r.output_file);
    expect(existsSync(file)).toBe(true);
    const found = await a.call("search_files", { query: "^ERROR", path: file });
    const line = (found.entries as Array<{ matches: Array<{ line: number }> }>)[0]?.matches[0]
      ?.line as number;
    // mewbo's offset is 0-based.
    const read = await a.call("read_file", { path: file, offset: line - 1, limit: 1 });
    expect(String(read.content)).toContain("ERROR: the build failed at step 42");
    await a.close();
    expect(existsSync(file)).toBe(false);
  });

  it("a session that never closed (toolbelt killed) leaves its saved output only until the next start", async () => {
    const root = project();
    const a = new ExecSession(["--root", root, "--allow", "shell"]);
    const file = String((await a.call("shell", { command: FLOOD })).output_file);
    await a.crash();
    expect(existsSync(file)).toBe(true);
    const out = await cli(
      ["run", "read_file", "--root", project(), "--input", JSON.stringify({ path: "x" })],
      {
        env,
      },
    );
    expect(out.stdout).toMatch(/ENOENT/);
    expect(existsSync(path.dirname(file))).toBe(false);
  });

  it("a background command's output is saved as it runs; shell_session names the file", async () => {
    const root = project();
    const a = new ExecSession(["--root", root, "--allow", "shell", "--allow", "files"]);
    await a.call("shell", { command: FLOOD, run_in_background: true });
    let view: Result = {};
    for (;;) {
      view = await a.call("shell_session", { operation: "read", shell_id: "sh-1", wait_ms: 1000 });
      if (view.status !== "running" && !view.remaining_characters) break;
    }
    // The bounded log (1 MiB) dropped what was not read in time; the file has every character.
    const file = String(view.output_file);
    await expect.poll(() => statSync(file).size, { timeout: 10_000 }).toBe(view.cursor);
    const found = await a.call("search_files", { query: "ERROR: the build failed", path: file });
    expect(found).toMatchObject({ kind: "search_results", matches: 1 });
    await a.close();
    expect(existsSync(file)).toBe(false);
  });
});
