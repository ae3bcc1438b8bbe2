// End to end through the built bin: `npm run build` first (CI builds before testing).
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt } from "../../toolbelt/test/cli-harness.js";

const BIN = fileURLToPath(new URL("../../toolbelt/dist/bin.js", import.meta.url));
// A missing or stale build fails these tests (see assertBuilt), it does not skip them.
beforeAll(assertBuilt);

function toolbelt(
  args: string[],
  input = "",
  nodeArgs: string[] = [],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeArgs, BIN, ...args], { stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => {
      stdout += d;
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(input);
  });
}

function sleepersWith(arg: string): number[] {
  return readdirSync("/proc")
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        const stat = readFileSync(`/proc/${p}/stat`, "latin1");
        const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
        return state !== "Z" && readFileSync(`/proc/${p}/cmdline`, "latin1") === `sleep\0${arg}\0`;
      } catch {
        return false;
      }
    })
    .map(Number);
}

let root: string;
beforeAll(() => {
  root = realpathSync(mkdtempSync(path.join(os.tmpdir(), "tb-shell-e2e-")));
});
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

describe("toolbelt run shell", () => {
  it("is denied without --allow, and the error names the flag", async () => {
    const r = await toolbelt([
      "run",
      "shell",
      "--root",
      root,
      "--input",
      JSON.stringify({ command: "echo hi" }),
    ]);
    expect(r.code).toBe(1);
    const payload = JSON.parse(r.stdout);
    expect(payload).toMatchObject({ kind: "error", code: "EDENIED" });
    expect(payload.message).toContain("--allow shell");
  });

  it("runs with --allow shell", async () => {
    const r = await toolbelt([
      "run",
      "shell",
      "--root",
      root,
      "--allow",
      "shell",
      "--input",
      JSON.stringify({ command: "echo hi; echo err >&2; exit 4" }),
    ]);
    // A failed command fails the run (CI can branch on it); the payload is printed all the same.
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ kind: "shell_result", stdout: "hi\nerr\n", exit_code: 4 });
  });

  it("answers tty: true with a clear EUNAVAILABLE where no pty module loads", async () => {
    // A process in which @lydell/node-pty cannot be resolved, as on a machine without its prebuilds.
    const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), "tb-no-pty-")));
    try {
      const hooks = path.join(dir, "hooks.mjs");
      writeFileSync(
        hooks,
        `export async function resolve(specifier, context, next) {
  if (specifier === "@lydell/node-pty") {
    const error = new Error("Cannot find package '@lydell/node-pty'");
    error.code = "ERR_MODULE_NOT_FOUND";
    throw error;
  }
  return next(specifier, context);
}\n`,
      );
      const register = path.join(dir, "register.mjs");
      writeFileSync(
        register,
        `import { register } from "node:module";\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`,
      );
      const lines = [
        { id: "1", tool: "shell", input: { command: "echo x", tty: true } },
        { id: "2", tool: "shell", input: { command: "echo x", tty: true, run_in_background: true } },
      ];
      const r = await toolbelt(
        ["exec", "--root", root, "--allow", "shell"],
        `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`,
        ["--import", register],
      );
      const answers = r.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
      expect(answers, r.stderr).toHaveLength(2);
      for (const { result } of answers) {
        expect(result).toMatchObject({ kind: "error", code: "EUNAVAILABLE" });
        expect(String(result.message)).toMatch(
          /tty: true needs a pseudo-terminal.*@lydell\/node-pty could not be loaded/,
        );
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("ends background sessions when an exec session ends", async () => {
    const lines = [
      {
        id: "1",
        tool: "shell",
        input: { command: "echo started; exec sleep 3601", run_in_background: true },
      },
      {
        id: "2",
        tool: "shell_session",
        input: { operation: "read", shell_id: "sh-1", filter: "started", wait_ms: 5000 },
      },
    ];
    const r = await toolbelt(
      ["exec", "--root", root, "--allow", "shell"],
      `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`,
    );
    const answers = r.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(answers[0].result).toMatchObject({ kind: "shell_started", shell_id: "sh-1" });
    expect(answers[1].result).toMatchObject({ kind: "shell_session", status: "running", output: "started" });
    expect(sleepersWith("3601")).toEqual([]);
  });

  it("doctor reports the shell's sandbox and pty", async () => {
    const r = await toolbelt(["doctor", "--root", root, "--format", "json"]);
    const report = JSON.parse(r.stdout) as Array<{
      family: string;
      name: string;
      status: string;
      detail: string;
    }>;
    const names = report.filter((c) => c.family === "shell").map((c) => c.name);
    expect(names).toEqual(expect.arrayContaining(["landlock", "sandbox-helper", "pty", "sandbox"]));
  });
});
