// The shell family attacked end to end through the built CLI: a command reading toolbelt's token and
// cloud keys from its environment, planting a config or a git hook for a later session, escaping the
// process tracking with `env -u TOOLBELT_SHELL_MARK setsid`, outliving a SIGKILLed toolbelt, and a
// fork bomb. Real processes, real Landlock, real mount namespaces and cgroups.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, type TestContext } from "vitest";
import { type Capability, lacks, need } from "../../../../test-support/capability.js";
import { assertBuilt, BIN, cli, jsonLines, tempRoot } from "../cli-harness.js";

const linux = process.platform === "linux";
const notLinux = lacks("linux", !linux && `the sandbox and /proc are Linux's; this is ${process.platform}`);
const dirs: string[] = [];
const TAG = `tbesc${process.pid}`;

function track(dir: string): string {
  dirs.push(dir);
  return dir;
}

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

interface Check {
  name: string;
  status: string;
  detail: string;
}

let doctor: Check[] = [];
const check = (name: string): Check | undefined => doctor.find((c) => c.name === name);

/**
 * Skips the test when doctor's `name` check is not ok here (the kernel's part, `capability`), or fails
 * it under CI=true when the reason is the sandbox helper, which CI builds.
 */
function needCheck(ctx: TestContext, name: string, capability: Capability): void {
  const helper = check("sandbox-helper");
  need(
    ctx,
    "sandbox-helper",
    helper?.status !== "ok" && `doctor: ${helper?.detail ?? "no sandbox-helper check"}`,
  );
  const c = check(name);
  need(ctx, capability, c?.status !== "ok" && `doctor's ${name} check: ${c?.detail ?? "missing"}`);
}

beforeAll(async () => {
  assertBuilt();
  const out = await cli(["doctor", "--format", "json"]);
  doctor = JSON.parse(out.stdout) as Check[];
});

/** A config file outside the project: a user source, so trust does not filter it. */
function userConfig(config: unknown): string {
  const dir = track(tempRoot("tb-esc-cfg-"));
  const file = path.join(dir, "config.json");
  writeFileSync(file, JSON.stringify(config));
  return file;
}

async function shell(
  root: string,
  input: Record<string, unknown>,
  options: { config?: unknown; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<Record<string, unknown>> {
  const args = ["run", "shell", "--root", root, "--allow", "shell", "--input", JSON.stringify(input)];
  if (options.config) args.push("--config", userConfig(options.config));
  const out = await cli(args, {
    env: options.env ?? {},
    timeoutMs: options.timeoutMs ?? 60_000,
  });
  return JSON.parse(out.stdout) as Record<string, unknown>;
}

/** Live processes whose command line starts with `needle` (not the shell that names it in -c). */
function processesWith(needle: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, "latin1").replace(/\0/g, " ").startsWith(needle)) continue;
      const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
      const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
      if (state !== "Z" && state !== "X") found.push(pid);
    } catch {
      // Ended while we looked.
    }
  }
  return found;
}

/** Live processes whose environment carries `name=value` (the fork bomb's own tag). */
function processesWithEnv(entry: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync("/proc")) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      if (readFileSync(`/proc/${pid}/environ`, "latin1").split("\0").includes(entry)) found.push(pid);
    } catch {
      // Ended, or not ours.
    }
  }
  return found;
}

function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    return !/\) [ZX] /.test(stat);
  } catch {
    return false;
  }
}

/** Polls until `done` holds, at most `ms` (a bound on the work, not a timing assertion). */
async function eventually(done: () => boolean, ms = 15_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (done()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return done();
}

describe.skipIf(notLinux)("the environment a command sees", () => {
  const secrets = {
    TOOLBELT_TOKEN: "tb-http-token-1",
    AWS_SECRET_ACCESS_KEY: "aws-secret-2",
    AWS_ACCESS_KEY_ID: "aws-id-3",
    GITHUB_TOKEN: "gh-token-4",
    NPM_TOKEN: "npm-token-5",
    AZURE_CLIENT_SECRET: "azure-6",
    GOOGLE_APPLICATION_CREDENTIALS: "/keys/gcp-7.json",
    DB_PASSWORD: "db-pass-8",
    OPENAI_API_KEY: "sk-9",
    BUILD_ALLOWED_TOKEN: "allowed-10",
    HARMLESS_SETTING: "harmless-11",
  };

  it("has no token, cloud key or password, but PATH, HOME and an allowed name", async () => {
    const root = track(tempRoot("tb-esc-env-"));
    const r = await shell(
      root,
      { command: "env" },
      { env: secrets, config: { agent: { shell_env: { allow: ["BUILD_ALLOWED_TOKEN"] } } } },
    );
    expect(r.kind, JSON.stringify(r)).toBe("shell_result");
    const seen = String(r.stdout);
    for (const [name, value] of Object.entries(secrets)) {
      if (name === "BUILD_ALLOWED_TOKEN" || name === "HARMLESS_SETTING") continue;
      expect(seen, name).not.toContain(value);
    }
    expect(seen).toContain("BUILD_ALLOWED_TOKEN=allowed-10");
    expect(seen).toContain("HARMLESS_SETTING=harmless-11");
    expect(seen).toMatch(/^PATH=/m);
    expect(seen).toMatch(/^HOME=/m);
  });

  // Issue 27, 4: credentials in names the first scrub did not know, and in values.
  const more = {
    REDIS_URL: "redis://:redis-secret-12@cache:6379",
    MONGODB_URI: "mongodb+srv://app:mongo-secret-13@cluster0.example.net/db",
    AMQP_URL: "amqp://guest:amqp-secret-14@mq:5672",
    MYSQL_PWD: "mysql-secret-15",
    GPG_PASSPHRASE: "gpg-secret-16",
    SESSION_JWT: "jwt-secret-17",
    STRIPE_SK: "sk-stripe-secret-18",
    SLACK_WEBHOOK_URL: "https://hooks.slack.example/services/webhook-secret-19",
    NETRC: "machine example login me password netrc-secret-20",
    GIT_CONFIG_PARAMETERS: "'http.extraheader'='AUTHORIZATION: basic gitcfg-secret-21'",
    SQL_CONN: "Server=db;Database=app;User Id=sa;Password=conn-secret-22;",
    JAVA_TOOL_OPTIONS: "-Dhttp.proxyUrl=http://me:opts-secret-23@proxy:3128",
    HTTP_PROXY: "http://me:proxy-secret-24@proxy.example:3128",
    https_proxy: "http://me:proxy-secret-25@proxy.example:3128",
    NO_PROXY: "localhost,127.0.0.1",
    SITE_URL: "https://example.com/path?q=1",
  };

  it("has no credential from a connection string, a URL, a passphrase or a webhook; proxies lose only theirs", async () => {
    const root = track(tempRoot("tb-esc-env-"));
    const r = await shell(root, { command: "env" }, { env: more });
    expect(r.kind, JSON.stringify(r)).toBe("shell_result");
    const seen = String(r.stdout);
    for (const value of Object.values(more)) {
      const secret = /[a-z]+-secret-\d+/.exec(value)?.[0];
      if (secret) expect(seen, value).not.toContain(secret);
    }
    expect(seen).toMatch(/^HTTP_PROXY=http:\/\/proxy\.example:3128\/?$/m);
    expect(seen).toMatch(/^https_proxy=http:\/\/proxy\.example:3128\/?$/m);
    expect(seen).toContain("NO_PROXY=localhost,127.0.0.1");
    expect(seen).toContain("SITE_URL=https://example.com/path?q=1");
  });

  it("never gets the HTTP token, even when allow names it or says *", async () => {
    const root = track(tempRoot("tb-esc-env-"));
    const r = await shell(
      root,
      { command: 'echo "token=[$TOOLBELT_TOKEN] aws=[$AWS_SECRET_ACCESS_KEY]"' },
      { env: secrets, config: { agent: { shell_env: { allow: ["*", "TOOLBELT_TOKEN"] } } } },
    );
    expect(r.stdout).toBe("token=[] aws=[aws-secret-2]\n");
  });

  it("cannot read the secrets back from toolbelt's or any other process's /proc/<pid>/environ", async (ctx) => {
    needCheck(ctx, "sandbox", "landlock");
    expect(check("sandbox-proc")?.status, "doctor says whether commands get their own /proc").toBeDefined();
    const root = track(tempRoot("tb-esc-env-"));
    // Every process the command can see, its ancestors (toolbelt, this test runner) first of all.
    const command = [
      'p=$PPID; while [ "$p" -gt 1 ] 2>/dev/null; do tr "\\0" "\\n" < /proc/$p/environ 2>/dev/null;',
      "cat /proc/$p/mem >/dev/null 2>&1 && echo MEM_READABLE; p=$(awk '/^PPid/{print $2}' /proc/$p/status 2>/dev/null); done;",
      'for f in /proc/[0-9]*/environ; do tr "\\0" "\\n" < "$f" 2>/dev/null; done; echo end',
    ].join(" ");
    const r = await shell(root, { command }, { env: secrets });
    expect(r.kind, JSON.stringify(r)).toBe("shell_result");
    const seen = String(r.stdout);
    expect(seen).toContain("end");
    for (const [name, value] of Object.entries(secrets)) {
      if (name === "BUILD_ALLOWED_TOKEN" || name === "HARMLESS_SETTING") continue;
      expect(seen, name).not.toContain(value);
    }
    expect(seen).not.toContain("MEM_READABLE");
  });

  it("loses a name the user denies", async () => {
    const root = track(tempRoot("tb-esc-env-"));
    const r = await shell(
      root,
      { command: 'echo "[$HARMLESS_SETTING]"' },
      { env: secrets, config: { agent: { shell_env: { deny: ["HARMLESS_*"] } } } },
    );
    expect(r.stdout).toBe("[]\n");
  });
});

function gitRepo(root: string): void {
  const git = (...args: string[]) => execFileSync("git", args, { cwd: root, stdio: "pipe" });
  git("init", "-q");
  git("config", "user.email", "t@example.com");
  git("config", "user.name", "t");
  mkdirSync(path.join(root, "configs"), { recursive: true });
  writeFileSync(path.join(root, "configs", "app.json"), "{}\n");
  writeFileSync(path.join(root, ".mcp.json"), '{"mcpServers":{}}\n');
  writeFileSync(path.join(root, ".git", "hooks", "pre-commit"), "#!/bin/sh\nexit 0\n", { mode: 0o755 });
  writeFileSync(path.join(root, "README"), "hello\n");
  git("add", "-A");
  git("commit", "-qm", "initial");
}

describe.skipIf(notLinux)("protected paths under the sandbox", () => {
  it("cannot be written by a command, while git commit and checkout in the same sandbox work", async (ctx) => {
    needCheck(ctx, "sandbox-read-only", "mount-namespace");
    const root = track(tempRoot("tb-esc-ro-"));
    gitRepo(root);
    const attempts = [
      'echo \'{"agent":{"shell_sandbox":"off"}}\' > configs/app.json',
      'echo \'{"mcpServers":{"evil":{"command":"sh"}}}\' > .mcp.json',
      "printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > .git/hooks/pre-commit",
      "echo evil > .git/hooks/post-checkout",
      "git config core.hooksPath /tmp",
      "rm -f configs/app.json .git/hooks/pre-commit",
    ];
    const command = [
      ...attempts.map(
        (a, i) => `(${a}) 2>/dev/null && echo "attempt ${i}: WROTE" || echo "attempt ${i}: refused"`,
      ),
      "echo change >> README && git add README && git commit -qm 'from the sandbox' && echo COMMITTED",
      "git checkout -q -b side && echo CHECKED_OUT",
    ].join("; ");
    const r = await shell(root, { command }, { config: { agent: { shell_sandbox: "required" } } });
    expect(r.sandbox).toBe("landlock");
    const out = String(r.stdout);
    for (let i = 0; i < attempts.length; i++) expect(out, out).toContain(`attempt ${i}: refused`);
    expect(out).toContain("COMMITTED");
    expect(out).toContain("CHECKED_OUT");
    expect(readFileSync(path.join(root, "configs", "app.json"), "utf8")).toBe("{}\n");
    expect(readFileSync(path.join(root, ".mcp.json"), "utf8")).toBe('{"mcpServers":{}}\n');
    expect(readFileSync(path.join(root, ".git", "hooks", "pre-commit"), "utf8")).toBe("#!/bin/sh\nexit 0\n");
    expect(existsSync(path.join(root, ".git", "hooks", "post-checkout"))).toBe(false);
    expect(readFileSync(path.join(root, ".git", "config"), "utf8")).not.toContain("hooksPath");
    const log = execFileSync("git", ["log", "--format=%s"], { cwd: root, encoding: "utf8" });
    expect(log).toContain("from the sandbox");
    expect(r.protected_changed).toBeUndefined();
  });

  it("reports a protected file a command created, and one replaced by renaming its directory", async () => {
    const root = track(tempRoot("tb-esc-new-"));
    gitRepo(root);
    // A file that does not exist cannot be bound read-only; the result says it appeared.
    const created = await shell(root, { command: "mkdir .toolbelt && echo x > .toolbelt/plugin.js" });
    expect(created.protected_changed).toEqual([".toolbelt"]);
    // Renaming the directory above a bind mount is allowed by the kernel; the swap is reported.
    const swapped = await shell(root, {
      command: "mv configs configs.old && mkdir configs && echo '{}' > configs/app.json",
    });
    expect(swapped.protected_changed).toEqual(["configs/app.json"]);
  });
});

describe.skipIf(notLinux)("processes that try to escape cleanup", () => {
  it("`env -u TOOLBELT_SHELL_MARK setsid sleep` is gone after the call's timeout and after it exits", async (ctx) => {
    needCheck(ctx, "process-tracking", "process-tracking");
    const root = track(tempRoot("tb-esc-setsid-"));
    const timedOut = await shell(root, {
      command: `env -u TOOLBELT_SHELL_MARK setsid sleep 3001${process.pid} & sleep 60`,
      timeout: 1,
    });
    expect(timedOut.timed_out).toBe(true);
    expect(processesWith(`sleep 3001${process.pid}`)).toEqual([]);
    const exited = await shell(root, {
      command: `env -u TOOLBELT_SHELL_MARK setsid sleep 3002${process.pid} > /dev/null 2>&1 & echo started`,
    });
    expect(exited.exit_code).toBe(0);
    expect(processesWith(`sleep 3002${process.pid}`)).toEqual([]);
  });

  it("a background command and its setsid escapee end with the exec session", async (ctx) => {
    needCheck(ctx, "process-tracking", "process-tracking");
    const root = track(tempRoot("tb-esc-close-"));
    const command = `env -u TOOLBELT_SHELL_MARK setsid sleep 3003${process.pid} & sleep 3004${process.pid}`;
    const out = await cli(["exec", "--root", root, "--allow", "shell"], {
      input: `${JSON.stringify({ id: "a", tool: "shell", input: { command, run_in_background: true } })}\n${JSON.stringify({ id: "b", tool: "shell", input: { command: "sleep 0.5" } })}\n`,
    });
    const started = jsonLines(out.stdout).find((l) => l.id === "a")?.result as Record<string, unknown>;
    expect(started?.kind, out.stdout).toBe("shell_started");
    expect(
      await eventually(
        () =>
          processesWith(`sleep 3003${process.pid}`).length === 0 &&
          processesWith(`sleep 3004${process.pid}`).length === 0,
      ),
    ).toBe(true);
  });

  it("a background session dies when the toolbelt process is SIGKILLed", async (ctx) => {
    needCheck(ctx, "process-tracking", "process-tracking");
    const root = track(tempRoot("tb-esc-kill-"));
    const child = spawn(process.execPath, [BIN, "exec", "--root", root, "--allow", "shell"], {
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    child.stdout.on("data", (d) => {
      stdout += d;
    });
    const command = `env -u TOOLBELT_SHELL_MARK setsid sleep 3005${process.pid} & sleep 3006${process.pid}`;
    child.stdin.write(
      `${JSON.stringify({ id: "bg", tool: "shell", input: { command, run_in_background: true } })}\n`,
    );
    expect(await eventually(() => stdout.includes('"bg"'), 30_000)).toBe(true);
    const started = jsonLines(stdout).find((l) => l.id === "bg")?.result as Record<string, unknown>;
    const pid = Number(started.pid);
    expect(await eventually(() => processesWith(`sleep 3005${process.pid}`).length === 1)).toBe(true);
    const escapee = processesWith(`sleep 3005${process.pid}`)[0] as number;
    expect(alive(pid)).toBe(true);
    child.kill("SIGKILL");
    // Bounded wait: the watcher polls twice a second; 15 s is generous on a loaded machine.
    expect(await eventually(() => !alive(pid) && !alive(escapee))).toBe(true);
    expect(processesWith(`sleep 3006${process.pid}`)).toEqual([]);
  });
});

describe.skipIf(notLinux)("a fork bomb", () => {
  it("is contained by the process cap and the machine stays usable", async (ctx) => {
    // Without a cap (root and no cgroup pids.max) running it would take the machine down.
    needCheck(ctx, "process-cap", "process-cap");
    const root = track(tempRoot("tb-esc-bomb-"));
    const r = await shell(
      root,
      { command: `export ${TAG}=1; :(){ :|:& };:; sleep 30`, timeout: 4 },
      { config: { agent: { shell_sandbox: "required", shell_max_processes: 64 } }, timeoutMs: 120_000 },
    );
    expect(r.kind, JSON.stringify(r).slice(0, 500)).toBe("shell_result");
    expect(String(r.stdout)).toMatch(/Resource temporarily unavailable|retry/);
    expect(await eventually(() => processesWithEnv(`${TAG}=1`).length === 0, 30_000)).toBe(true);
    expect(spawnSync("sh", ["-c", "echo usable"], { encoding: "utf8" }).stdout).toBe("usable\n");
  }, 180_000);
});

// Issue 27: only the process count was capped; a command could take all the memory or fill the disk.
describe.skipIf(lacks("linux", !linux && `this is ${process.platform}`))(
  "memory and file-size limits",
  () => {
    it("a command allocating past agent.shell_max_memory_mib is killed, and the result says so", async (ctx) => {
      const memory = check("memory-limit");
      need(ctx, "memory-cgroup", memory !== undefined && memory.status !== "ok" && memory.detail);
      const root = track(tempRoot("tb-esc-mem-"));
      const allocate =
        'node -e \'const a=[];for(let i=0;i<96;i++)a.push(Buffer.alloc(16*2**20,1));console.log("ALLOCATED",a.length*16,"MiB")\'';
      const r = await shell(
        root,
        { command: allocate },
        { config: { agent: { shell_max_memory_mib: 256 } } },
      );
      expect(r.kind, JSON.stringify(r)).toBe("shell_result");
      expect(String(r.stdout)).not.toContain("ALLOCATED");
      expect(r.limits_hit).toEqual(["memory"]);
      expect(String(r.limit_note)).toContain("agent.shell_max_memory_mib");
      const fine = await shell(
        root,
        { command: "node -e 'console.log(\"SMALL\", Buffer.alloc(16*2**20,1).length)'" },
        { config: { agent: { shell_max_memory_mib: 256 } } },
      );
      expect(fine).toMatchObject({ exit_code: 0 });
      expect(fine.limits_hit).toBeUndefined();
    });

    it("a file grows no larger than agent.shell_max_file_mib, even as root, and the result says so", async () => {
      const root = track(tempRoot("tb-esc-fsize-"));
      const r = await shell(
        root,
        { command: "ulimit -f unlimited 2>/dev/null; head -c 8000000 /dev/zero > big; echo status=$?" },
        { config: { agent: { shell_max_file_mib: 1 } } },
      );
      expect(r.kind, JSON.stringify(r)).toBe("shell_result");
      const { statSync } = await import("node:fs");
      expect(statSync(path.join(root, "big")).size).toBeLessThanOrEqual(2 ** 20);
      expect(r.limits_hit).toEqual(["file_size"]);
      expect(String(r.limit_note)).toContain("agent.shell_max_file_mib");
    });
  },
);
