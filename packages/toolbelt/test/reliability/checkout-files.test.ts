// Attack: files of a checkout that toolbelt reads on its own, outside any tool call — a project's
// AGENTS.md / CLAUDE.md (handed to the model by switch_project), its skills' SKILL.md, the
// description in its package.json (list_projects), its configs/app.json and .mcp.json (read at every
// start). Each was read with a plain readFileSync(path): a symlink to a secret outside the project
// handed the secret to the model (read_file refuses the same path with EPATH_ESCAPE), a FIFO hung the
// session start for good (SIGTERM too: the main thread sat in open(2)), and a symlink to /dev/zero
// grew toolbelt to 16 GiB before it aborted. Each case runs the built CLI as a real process, bounded
// in time and in memory by a watchdog that kills it past either bound.
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { lacks } from "../../../../test-support/capability.js";
import { assertBuilt, BIN, jsonLines, tempRoot } from "../cli-harness.js";

const MiB = 1024 * 1024;
/** A run past this resident size is killed: every read here is bounded well below it. */
const MAX_RSS = 1024 * MiB;
/** A run still going after this long is killed: every answer here comes in a few seconds. */
const RUN_BOUND_MS = 30_000;
const SECRET = `TOOLBELT-TEST-SECRET-${process.pid}-7f3a9c`;
/**
 * A short token file (an API token on one line): JSON.parse's error quotes a source of up to 20
 * characters whole (and the first 10 of a longer one), so a parse error of it would show all of it.
 */
const TOKEN = `sk-${process.pid % 100_000}-q7z`;

const linux = process.platform === "linux";
const notLinux = lacks(
  "linux",
  !linux && "the checkout-files attacks need mkfifo, /dev/zero, /proc/<pid>/status",
);

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Why the watchdog killed the run, if it did. */
  killed?: string;
  /** The largest resident set seen (VmHWM), bytes. */
  peak: number;
}

let dirs: string[] = [];
let home = "";
let configDir = "";
let main = "";
let outside = "";

function track(dir: string): string {
  dirs.push(dir);
  return dir;
}

function env(): NodeJS.ProcessEnv {
  return {
    ...process.env,
    NO_COLOR: "1",
    TOOLBELT_CONFIG_DIR: configDir,
    XDG_CONFIG_HOME: configDir,
    TOOLBELT_HOME: home,
    TOOLBELT_STATE_DIR: path.join(home, "state"),
    TOOLBELT_TRUST: "",
  };
}

function peakOf(pid: number): { rss: number; hwm: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "latin1");
    const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0);
    return { rss: kib("VmRSS") * 1024, hwm: kib("VmHWM") * 1024 };
  } catch {
    return undefined;
  }
}

/**
 * Runs the built CLI; a watchdog reads its resident set every 20 ms and SIGKILLs it past MAX_RSS or
 * RUN_BOUND_MS (SIGKILL: a process stuck in open(2) on a FIFO never runs its SIGTERM handler).
 */
function run(args: string[], input = ""): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: env(), stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    let peak = 0;
    let killed: string | undefined;
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    const kill = (why: string) => {
      if (killed) return;
      killed = why;
      child.kill("SIGKILL");
    };
    const started = Date.now();
    const watch = setInterval(() => {
      const now = child.pid === undefined ? undefined : peakOf(child.pid);
      if (now) peak = Math.max(peak, now.hwm, now.rss);
      if (peak > MAX_RSS) kill(`resident set over ${MAX_RSS / MiB} MiB (${Math.round(peak / MiB)} MiB)`);
      else if (Date.now() - started > RUN_BOUND_MS) kill(`no exit within ${RUN_BOUND_MS} ms`);
    }, 20);
    child.on("error", reject);
    child.on("close", (code) => {
      clearInterval(watch);
      resolve({ code, stdout, stderr, peak, ...(killed ? { killed } : {}) });
    });
    child.stdin.end(input);
  });
}

function exec(root: string, calls: Array<Record<string, unknown>>, extra: string[] = []): Promise<Run> {
  return run(
    ["exec", "--root", root, "--no-fail-on-error", ...extra],
    `${calls.map((c) => JSON.stringify(c)).join("\n")}\n`,
  );
}

/** The result of call `id` in an exec run, failing with the run's output when it is not there. */
function answer(out: Run, id: string): Record<string, unknown> {
  expect(out.killed, `${out.killed}\nstdout: ${out.stdout}\nstderr: ${out.stderr}`).toBeUndefined();
  const line = jsonLines(out.stdout).find((l) => l.id === id);
  expect(line, `no answer to ${id}\nstdout: ${out.stdout}\nstderr: ${out.stderr}`).toBeDefined();
  return line?.result as Record<string, unknown>;
}

/** A project the catalog lists: a folder under <TOOLBELT_HOME>/projects (a managed clone). */
function project(name: string): string {
  const dir = path.join(home, "projects", name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, "a.txt"), "hello\n");
  return dir;
}

function fifo(file: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  execFileSync("mkfifo", [file]);
}

function link(target: string, file: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  symlinkSync(target, file);
}

/** A SKILL.md whose description is the secret. */
function secretSkill(name: string): string {
  return `---\nname: ${name}\ndescription: ${SECRET}\n---\nbody ${SECRET}\n`;
}

const readA = { id: "read", tool: "read_file", input: { path: "a.txt" } };

beforeAll(() => {
  if (linux) assertBuilt();
});
beforeEach(() => {
  home = track(tempRoot("tb-checkout-home-"));
  configDir = track(tempRoot("tb-checkout-config-"));
  main = track(tempRoot("tb-checkout-main-"));
  outside = track(tempRoot("tb-checkout-outside-"));
  mkdirSync(path.join(home, "projects"));
  // The user lets the model move between projects (list_projects / switch_project are bound).
  writeFileSync(path.join(configDir, "config.json"), JSON.stringify({ agent: { workspace_mode: "auto" } }));
  writeFileSync(path.join(main, "a.txt"), "hello\n");
  writeFileSync(path.join(outside, "id_rsa"), `-----BEGIN KEY-----\n${SECRET}\n-----END KEY-----\n`);
  writeFileSync(path.join(outside, "token"), `${TOKEN}\n`);
  writeFileSync(path.join(outside, "package.json"), JSON.stringify({ description: SECRET }));
  mkdirSync(path.join(outside, "skills", "leak"), { recursive: true });
  writeFileSync(path.join(outside, "skills", "leak", "SKILL.md"), secretSkill("leak-dir"));
  writeFileSync(path.join(outside, "SKILL.md"), secretSkill("leak"));
});
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  dirs = [];
});

describe.skipIf(notLinux)("a project's files symlinked to a secret outside it", () => {
  it("switch_project answers without the secret and says AGENTS.md and CLAUDE.md were not read", async () => {
    const evil = project("evil");
    link(path.join(outside, "id_rsa"), path.join(evil, "AGENTS.md"));
    // Relative, the way a checkout ships it: ../../.. climbs out of the project.
    link(path.relative(evil, path.join(outside, "id_rsa")), path.join(evil, "CLAUDE.md"));
    link(path.join(outside, "SKILL.md"), path.join(evil, ".toolbelt/skills/leak/SKILL.md"));
    link(path.join(outside, "skills"), path.join(evil, ".claude/skills"));
    link(path.join(outside, "package.json"), path.join(evil, "package.json"));

    const out = await exec(main, [
      { id: "list", tool: "list_projects", input: {} },
      { id: "switch", tool: "switch_project", input: { key: "evil" } },
      { id: "read", tool: "read_file", input: { path: "AGENTS.md" } },
    ]);
    const switched = answer(out, "switch");
    expect(switched).toMatchObject({ kind: "project_switched", key: "evil", new_skills: [] });
    expect(switched.instructions).toBeUndefined();
    const skipped = (switched.skipped as Array<{ file: string; reason: string }>).map((s) => s.file);
    expect(skipped).toEqual(
      expect.arrayContaining(["AGENTS.md", "CLAUDE.md", ".toolbelt/skills/leak/SKILL.md"]),
    );
    expect(JSON.stringify(switched)).toContain("points outside");
    // read_file refuses the same file: the two ways in now agree.
    expect(answer(out, "read")).toMatchObject({ code: "EPATH_ESCAPE" });
    // Not in the answers, not in the package.json description list_projects shows, not anywhere.
    expect(out.stdout + out.stderr).not.toContain(SECRET);

    // The text the model reads says what was skipped and why.
    const text = await run([
      "run",
      "switch_project",
      "--root",
      main,
      "--format",
      "text",
      "--input",
      '{"key":"evil"}',
    ]);
    expect(text.killed).toBeUndefined();
    expect(text.stdout).toContain("# Not-Read: AGENTS.md, CLAUDE.md");
    expect(text.stdout).toMatch(/Not read: AGENTS\.md points outside/);
    expect(text.stdout).toContain("No instructions were read from this project.");
    expect(text.stdout + text.stderr).not.toContain(SECRET);
  }, 90_000);

  it("a CLAUDE.md of the project's own is still read when AGENTS.md points outside", async () => {
    const mixed = project("mixed");
    link(path.join(outside, "id_rsa"), path.join(mixed, "AGENTS.md"));
    writeFileSync(path.join(mixed, "CLAUDE.md"), "Use tabs.\n");
    const out = await exec(main, [{ id: "switch", tool: "switch_project", input: { key: "mixed" } }]);
    expect(answer(out, "switch")).toMatchObject({
      instructions: { file: "CLAUDE.md", content: "Use tabs.\n", truncated: false },
      skipped: [{ file: "AGENTS.md" }],
    });
    expect(out.stdout).not.toContain(SECRET);
  }, 60_000);

  it("configs/app.json pointing at a secret: neither the start-up error nor switch_project's quotes it", async () => {
    // The session's own project: the parse error of the outside file quoted it on stderr (a CI log)
    // — now the file is refused before it is read.
    link(path.join(outside, "token"), path.join(main, "configs/app.json"));
    const start = await run(["run", "read_file", "--root", main, "--input", '{"path":"a.txt"}']);
    expect(start.killed).toBeUndefined();
    expect(start.code).toBe(2);
    expect(start.stderr).toContain("EINVAL_CONFIG");
    expect(start.stderr).toContain("points outside the project");
    expect(start.stdout + start.stderr).not.toContain(TOKEN);
    rmSync(path.join(main, "configs"), { recursive: true });

    // A project switched into: the error went back to the model.
    const evil = project("evil-config");
    link(path.join(outside, "token"), path.join(evil, "configs/app.json"));
    const out = await exec(main, [{ id: "switch", tool: "switch_project", input: { key: "evil-config" } }]);
    expect(answer(out, "switch")).toMatchObject({ kind: "error", code: "EINVAL_CONFIG" });
    expect(out.stdout + out.stderr).not.toContain(TOKEN);
  }, 60_000);
});

describe.skipIf(notLinux)("a FIFO where a checkout file should be", () => {
  it("as AGENTS.md of a project switched into: switch_project answers, AGENTS.md not read", async () => {
    const evil = project("fifo");
    fifo(path.join(evil, "AGENTS.md"));
    const out = await exec(main, [{ id: "switch", tool: "switch_project", input: { key: "fifo" } }]);
    const switched = answer(out, "switch");
    expect(switched).toMatchObject({ kind: "project_switched", skipped: [{ file: "AGENTS.md" }] });
    expect(JSON.stringify(switched.skipped)).toContain("is a FIFO");
  }, 60_000);

  it("as a project SKILL.md: the session starts and answers; switch_project notes it", async () => {
    fifo(path.join(main, ".toolbelt/skills/x/SKILL.md"));
    fifo(path.join(main, ".claude/skills/SKILL.md"));
    expect(answer(await exec(main, [readA]), "read")).toMatchObject({ kind: "file_content" });

    const evil = project("fifo-skill");
    fifo(path.join(evil, ".toolbelt/skills/x/SKILL.md"));
    const out = await exec(main, [{ id: "switch", tool: "switch_project", input: { key: "fifo-skill" } }]);
    expect(answer(out, "switch")).toMatchObject({
      kind: "project_switched",
      skipped: [{ file: ".toolbelt/skills/x/SKILL.md" }],
    });
  }, 60_000);

  it("as configs/app.json: run and exec exit at once with an error naming the file, trusted or not", async () => {
    fifo(path.join(main, "configs/app.json"));
    for (const extra of [[], ["--trust"]]) {
      const out = await run(["run", "read_file", "--root", main, "--input", '{"path":"a.txt"}', ...extra]);
      expect(out.killed, out.stderr).toBeUndefined();
      expect(out.code).toBe(2);
      expect(out.stderr).toContain("EINVAL_CONFIG");
      expect(out.stderr).toContain(path.join(main, "configs/app.json"));
      expect(out.stderr).toContain("is a FIFO, not a regular file");
    }
    const out = await exec(main, [readA]);
    expect(out.killed, out.stderr).toBeUndefined();
    expect(out.stderr).toContain("is a FIFO, not a regular file");
  }, 60_000);

  it("as .mcp.json: the session answers; the file is reported unreadable, trusted or not", async () => {
    fifo(path.join(main, ".mcp.json"));
    const untrusted = await exec(main, [readA]);
    expect(answer(untrusted, "read")).toMatchObject({ kind: "file_content" });
    expect(untrusted.stderr).toContain("is a FIFO, not a regular file");
    const trusted = await exec(main, [readA], ["--trust"]);
    expect(answer(trusted, "read")).toMatchObject({ kind: "file_content" });
  }, 60_000);
});

describe.skipIf(notLinux)("/dev/zero or a huge file where a checkout file should be", () => {
  it("AGENTS.md and a SKILL.md linked to /dev/zero: not read, bounded memory", async () => {
    const zero = project("zero");
    link("/dev/zero", path.join(zero, "AGENTS.md"));
    link("/dev/zero", path.join(zero, ".toolbelt/skills/z/SKILL.md"));
    link("/dev/zero", path.join(main, ".claude/skills/z/SKILL.md"));
    const out = await exec(main, [readA, { id: "switch", tool: "switch_project", input: { key: "zero" } }]);
    expect(answer(out, "read")).toMatchObject({ kind: "file_content" });
    const switched = answer(out, "switch");
    expect((switched.skipped as Array<{ file: string }>).map((s) => s.file)).toEqual([
      "AGENTS.md",
      ".toolbelt/skills/z/SKILL.md",
    ]);
  }, 60_000);

  it("a sparse 1 GiB AGENTS.md: its first 40,000 characters, the cut stated, bounded memory", async () => {
    const big = project("big");
    writeFileSync(path.join(big, "AGENTS.md"), "Use tabs.\n");
    truncateSync(path.join(big, "AGENTS.md"), 1024 * MiB);
    const out = await exec(main, [{ id: "switch", tool: "switch_project", input: { key: "big" } }]);
    const switched = answer(out, "switch");
    expect(switched.instructions).toMatchObject({ file: "AGENTS.md", truncated: true, bytes: 1024 * MiB });
    const content = (switched.instructions as { content: string }).content;
    expect(content.startsWith("Use tabs.\n")).toBe(true);
    expect(content.length).toBe(40_000);
    expect(out.peak).toBeLessThan(MAX_RSS);
  }, 60_000);

  it("configs/app.json linked to /dev/zero: a clear error at once, trusted (followed: not a regular file) or not (outside)", async () => {
    link("/dev/zero", path.join(main, "configs/app.json"));
    const untrusted = await run(["run", "read_file", "--root", main, "--input", '{"path":"a.txt"}']);
    expect(untrusted.killed, untrusted.stderr).toBeUndefined();
    expect(untrusted.code).toBe(2);
    expect(untrusted.stderr).toContain("points outside the project");
    const trusted = await run(["run", "read_file", "--root", main, "--input", '{"path":"a.txt"}', "--trust"]);
    expect(trusted.killed, trusted.stderr).toBeUndefined();
    expect(trusted.code).toBe(2);
    expect(trusted.stderr).toContain("is a character device, not a regular file");
  }, 60_000);

  it("a configs/app.json over 1 MiB: refused naming the limit", async () => {
    mkdirSync(path.join(main, "configs"));
    writeFileSync(path.join(main, "configs/app.json"), `{"x": "${"a".repeat(2 * MiB)}"}`);
    const out = await run(["run", "read_file", "--root", main, "--input", '{"path":"a.txt"}']);
    expect(out.killed, out.stderr).toBeUndefined();
    expect(out.code).toBe(2);
    expect(out.stderr).toContain("is larger than 1048576 bytes (1 MiB), the limit for a config file");
  }, 60_000);

  it(".mcp.json linked to /dev/zero: the session answers, trusted or not, bounded memory", async () => {
    link("/dev/zero", path.join(main, ".mcp.json"));
    const untrusted = await exec(main, [readA]);
    expect(answer(untrusted, "read")).toMatchObject({ kind: "file_content" });
    expect(untrusted.stderr).toContain(".mcp.json");
    const trusted = await exec(main, [readA], ["--trust"]);
    expect(answer(trusted, "read")).toMatchObject({ kind: "file_content" });
  }, 60_000);
});
