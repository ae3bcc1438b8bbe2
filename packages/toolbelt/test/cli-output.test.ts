import { spawn, spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, REPO, tempRoot } from "./cli-harness.js";

// What the CLI writes reaches its reader whole and in order however slowly it reads, and a reader
// that stops early is no error. Run through the command npm links (bin/toolbelt.js).

const NPM_BIN = path.join(REPO, "packages/toolbelt/bin/toolbelt.js");
let env: NodeJS.ProcessEnv;

beforeAll(() => {
  assertBuilt();
  env = { ...process.env, TOOLBELT_CONFIG_DIR: tempRoot("tb-output-user-"), TOOLBELT_TRUST: "" };
});

// 3,000 lines of 80 characters: an answer of ~260 KB, four times what a pipe holds.
function bigProject(): string {
  const root = tempRoot("tb-output-big-");
  writeFileSync(
    path.join(root, "big.txt"),
    Array.from({ length: 3000 }, (_, i) => `${String(i + 1).padStart(6, "0")} ${"x".repeat(73)}`).join("\n"),
  );
  return root;
}
const read = ["run", "read_file", "--input", '{"path":"big.txt"}'];

describe("the CLI's standard output", () => {
  it("a reader that waits before reading still gets every byte, in order", async () => {
    const root = bigProject();
    const child = spawn(process.execPath, [NPM_BIN, ...read], {
      cwd: root,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    // Paused until the CLI has filled the pipe and waits on it: its stderr says nothing, and the
    // wait is on the pipe, so this only delays the reader (time passing is what is tested).
    child.stdout.pause();
    await new Promise((resolve) => setTimeout(resolve, 700));
    const chunks: Buffer[] = [];
    child.stdout.on("data", (c: Buffer) => chunks.push(c));
    child.stdout.resume();
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    expect(code).toBe(0);
    const out = Buffer.concat(chunks).toString("utf8");
    expect(out.endsWith("}\n")).toBe(true);
    const payload = JSON.parse(out) as { kind: string; content: string; end_line: number };
    expect(payload.kind).toBe("file_content");
    // The numbered lines read (then, past the byte limit, the note saying where to go on).
    const lines = payload.content.split("\n").slice(0, payload.end_line);
    expect(payload.end_line).toBeGreaterThan(2000);
    for (const [i, line] of lines.entries()) expect(line).toContain(`${String(i + 1).padStart(6, "0")} x`);
  });

  it("a reader that closes the pipe early ends the run quietly, exit 0", () => {
    const root = bigProject();
    const r = spawnSync(
      "sh",
      [
        "-c",
        `{ "$NODE" "$BIN" ${read.map((a) => `'${a}'`).join(" ")} 2>err.txt; echo $? > rc.txt; } | head -c 10 > /dev/null; cat err.txt rc.txt`,
      ],
      { cwd: root, env: { ...env, NODE: process.execPath, BIN: NPM_BIN }, encoding: "utf8" },
    );
    expect(r.stdout).not.toMatch(/EPIPE|Error|at /);
    expect(r.stdout.trim()).toBe("0");
  });

  it("the command npm links runs the CLI: a call, --version, a usage error", () => {
    const root = bigProject();
    const run = (args: string[]) =>
      spawnSync(process.execPath, [NPM_BIN, ...args], { cwd: root, env, input: "", encoding: "utf8" });
    const missing = run(["run", "read_file", "--input", '{"path":"gone"}']);
    expect(missing.status).toBe(1);
    expect(JSON.parse(missing.stdout)).toMatchObject({ kind: "error", code: "ENOENT" });
    expect(run(["--version"]).stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
    const usage = run(["run"]);
    expect(usage.status).toBe(2);
    expect(usage.stderr).toContain("toolbelt --help");
  });
});
