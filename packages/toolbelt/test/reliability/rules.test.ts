// biome-ignore-all lint/suspicious/noTemplateCurlyInString: bash command lines, where ${…} is bash's own syntax
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, type CliResult, cli, jsonLines, mcpCall, tempRoot } from "../cli-harness.js";

const dirs: string[] = [];
let configDir: string;

const RULES = { allow: ["shell(echo:*)", "shell(git diff*)"], deny: ["shell(touch:*)", "shell(rm:*)"] };

function env(): NodeJS.ProcessEnv {
  return { TOOLBELT_CONFIG_DIR: configDir, XDG_CONFIG_HOME: configDir, TOOLBELT_TRUST: "" };
}

function run(args: string[], input?: string): Promise<CliResult> {
  return cli(args, { env: env(), timeoutMs: 60_000, ...(input === undefined ? {} : { input }) });
}

function payload(result: CliResult): Record<string, unknown> {
  return JSON.parse(result.stdout.trim().split("\n").at(-1) ?? "{}") as Record<string, unknown>;
}

function project(): string {
  const root = tempRoot("tb-rules-");
  dirs.push(root);
  return root;
}

function config(root: string, tools: Record<string, unknown>): string {
  const file = path.join(
    configDir,
    `rules-${path.basename(root)}-${Math.random().toString(36).slice(2)}.json`,
  );
  writeFileSync(file, JSON.stringify({ tools }));
  return file;
}

function shell(root: string, cfg: string, command: string, extra: string[] = []): Promise<CliResult> {
  return run([
    "run",
    "shell",
    "--root",
    root,
    "--config",
    cfg,
    ...extra,
    "--input",
    JSON.stringify({ command }),
  ]);
}

beforeAll(() => {
  assertBuilt();
  configDir = tempRoot("tb-rules-home-");
  dirs.push(configDir);
});

afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe("shell rules through `toolbelt run shell` (headless, no --allow)", () => {
  it("runs a command an allow rule covers", async () => {
    const root = project();
    const result = await shell(root, config(root, { shell: { rules: RULES } }), "echo allowed-ran");
    expect(result.code).toBe(0);
    expect(payload(result)).toMatchObject({ kind: "shell_result", exit_code: 0 });
    expect(String(payload(result).stdout)).toContain("allowed-ran");
  });

  const hidden: Array<[string, string]> = [
    ["echo hi && touch pwned", "touch pwned"],
    ["echo hi; touch pwned", "touch pwned"],
    ["echo $(touch pwned)", "touch pwned"],
    ["echo `touch pwned`", "touch pwned"],
    ["echo hi | { touch pwned; }", "touch pwned"],
    ['echo hi; bash -c "touch pwned"', "touch pwned"],
    ["echo hi; env touch pwned", "env touch pwned"],
    ['eval "touch pwned"', "touch pwned"],
    ["f(){ touch pwned; }; echo hi; f", "touch pwned"],
    ["echo hi\ntouch pwned", "touch pwned"],
    ["X=$(touch pwned) echo hi", "touch pwned"],
    ["echo <(touch pwned)", "touch pwned"],
    ["/usr/bin/touch pwned", "/usr/bin/touch pwned"],
  ];
  it.each(hidden)("denies %j, naming the part %j, and runs none of it", async (command, part) => {
    const root = project();
    const file = config(root, { shell: { rules: RULES } });
    const result = await shell(root, file, command);
    expect(result.code).toBe(1);
    expect(payload(result)).toMatchObject({ kind: "error", code: "EDENIED" });
    expect(String(payload(result).message)).toContain(JSON.stringify(part));
    // The denial names the rule, its place and the config file it came from.
    expect(String(payload(result).message)).toContain(
      `deny rule "shell(touch:*)" (tools.shell.rules.deny[0], from ${file})`,
    );
    expect(existsSync(path.join(root, "pwned"))).toBe(false);
  });

  const asked: Array<[string, string]> = [
    ["echo touch pwned | sh", "sh runs commands from a script or its input"],
    ['X="touch pwned"; eval "$X"', "eval runs text only known at run time"],
    ["$(echo touch) pwned", "its command name is only known at run time"],
    ["sudo echo hi", "sudo runs its arguments as a command"],
    ["PATH=. echo hi", "it sets PATH"],
    ["echo hi > /dev/tcp/127.0.0.1/9", "it redirects to a network connection"],
    ["echo 'unclosed", "it cannot be parsed as bash"],
    // Bash evaluates arithmetic on a variable's value recursively, and a prompt expansion runs
    // substitutions: both ran `touch` under an `echo` allow rule before they were seen as opaque.
    ["x='a[$(touch pwned)]'; echo $(( x ))", "arithmetic on a variable can run commands from its value"],
    ["x='$(touch pwned)'; echo ${x@P}", "expands a variable as a prompt"],
  ];
  it.each(asked)("asks about %j (%s): refused headless, even under --allow", async (command, why) => {
    const root = project();
    const cfg = config(root, { shell: { rules: RULES } });
    for (const extra of [[], ["--allow", "shell"]]) {
      const result = await shell(root, cfg, command, extra);
      expect(result.code).toBe(1);
      expect(payload(result)).toMatchObject({ kind: "error", code: "EDENIED" });
      expect(String(payload(result).message)).toContain(why);
    }
    expect(existsSync(path.join(root, "pwned"))).toBe(false);
  });

  it("falls back to the mode for a part no rule covers, and --allow answers that", async () => {
    const root = project();
    const cfg = config(root, { shell: { rules: RULES } });
    const asked = await shell(root, cfg, "echo hi && ls");
    expect(payload(asked)).toMatchObject({ kind: "error", code: "EDENIED" });
    expect(String(payload(asked).message)).toContain("shell needs approval");
    const allowed = await shell(root, cfg, "echo hi && ls", ["--allow", "shell"]);
    expect(payload(allowed)).toMatchObject({ kind: "shell_result", exit_code: 0 });
  });

  it("a deny rule beats --allow shell", async () => {
    const root = project();
    const result = await shell(root, config(root, { shell: { rules: RULES } }), "touch pwned", [
      "--allow",
      "shell",
    ]);
    expect(payload(result)).toMatchObject({ kind: "error", code: "EDENIED" });
    expect(existsSync(path.join(root, "pwned"))).toBe(false);
  });

  it("judges redirect targets as writes: a denied path denies, an uncovered one asks", async () => {
    const root = project();
    mkdirSync(path.join(root, "secret"));
    const cfg = config(root, { shell: { rules: { ...RULES, deny: [...RULES.deny, "write(secret/**)"] } } });
    const denied = await shell(root, cfg, "echo x > secret/key");
    expect(payload(denied)).toMatchObject({ kind: "error", code: "EDENIED" });
    expect(String(payload(denied).message)).toContain('"secret/key" matches deny rule "write(secret/**)"');
    expect(existsSync(path.join(root, "secret/key"))).toBe(false);
    const uncovered = await shell(root, cfg, "echo x > notes.txt");
    expect(payload(uncovered)).toMatchObject({ kind: "error", code: "EDENIED" });
    expect(existsSync(path.join(root, "notes.txt"))).toBe(false);
    const covered = await shell(
      root,
      config(root, { shell: { rules: { ...RULES, allow: [...RULES.allow, "write(notes.txt)"] } } }),
      "echo x > notes.txt 2>&1",
    );
    expect(payload(covered)).toMatchObject({ kind: "shell_result", exit_code: 0 });
    expect(readFileSync(path.join(root, "notes.txt"), "utf8")).toBe("x\n");
  });
});

describe("path rules on the core write path", () => {
  it("a write rule denies write_file, whatever --allow says", async () => {
    const root = project();
    const cfg = config(root, { file: { rules: { deny: ["write(dist/**)"] } } });
    const result = await run([
      "run",
      "write_file",
      "--root",
      root,
      "--config",
      cfg,
      "--allow",
      "file",
      "--input",
      JSON.stringify({ path: "dist/app.js", content: "x" }),
    ]);
    expect(payload(result)).toMatchObject({ kind: "error", code: "EDENIED" });
    expect(String(payload(result).message)).toContain('"dist/app.js" matches deny rule "write(dist/**)"');
    expect(existsSync(path.join(root, "dist/app.js"))).toBe(false);
  });
});

describe("path rules on listings", () => {
  it("a read deny rule keeps a file's contents out of search_files over the whole root", async () => {
    const root = project();
    mkdirSync(path.join(root, "secrets"));
    writeFileSync(path.join(root, "secrets/token.txt"), "needle-in-secret\n");
    writeFileSync(path.join(root, "open.txt"), "needle-in-open\n");
    const cfg = config(root, { file: { rules: { deny: ["read(secrets/**)"] } } });
    const result = await run([
      "run",
      "search_files",
      "--root",
      root,
      "--config",
      cfg,
      "--input",
      JSON.stringify({ path: ".", query: "needle" }),
    ]);
    expect(result.stdout).toContain("needle-in-open");
    expect(result.stdout).not.toContain("needle-in-secret");
    const direct = await run([
      "run",
      "read_file",
      "--root",
      root,
      "--config",
      cfg,
      "--input",
      JSON.stringify({ path: "secrets/token.txt" }),
    ]);
    expect(payload(direct)).toMatchObject({ kind: "error", code: "EDENIED" });
  });
});

describe("rules from an untrusted project", () => {
  it("allow rules are ignored loudly; deny rules apply, even over the user's --allow", async () => {
    const root = project();
    mkdirSync(path.join(root, "configs"));
    writeFileSync(
      path.join(root, "configs/app.json"),
      JSON.stringify({ tools: { shell: { rules: { allow: ["shell(touch:*)"], deny: ["shell(echo:*)"] } } } }),
    );
    const touch = await run([
      "run",
      "shell",
      "--root",
      root,
      "--input",
      JSON.stringify({ command: "touch pwned" }),
    ]);
    expect(payload(touch)).toMatchObject({ kind: "error", code: "EDENIED" });
    expect(touch.stderr).toContain("tools.shell.rules.allow (configs/app.json)");
    expect(existsSync(path.join(root, "pwned"))).toBe(false);
    const echo = await run([
      "run",
      "shell",
      "--root",
      root,
      "--allow",
      "shell",
      "--input",
      JSON.stringify({ command: "echo hi" }),
    ]);
    expect(payload(echo)).toMatchObject({ kind: "error", code: "EDENIED" });
    expect(String(payload(echo).message)).toContain('deny rule "shell(echo:*)"');
  });
});

describe("the same rules over `toolbelt exec`", () => {
  it("runs the allowed call and denies the compound one in the same session", async () => {
    const root = project();
    const cfg = config(root, { shell: { rules: RULES } });
    const lines = [
      { id: "ok", tool: "shell", input: { command: "echo via-exec" } },
      { id: "bad", tool: "shell", input: { command: "echo hi || touch pwned" } },
    ];
    const result = await run(
      ["exec", "--root", root, "--config", cfg],
      `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`,
    );
    const out = jsonLines(result.stdout);
    const ok = out.find((l) => l.id === "ok")?.result as Record<string, unknown>;
    const bad = out.find((l) => l.id === "bad")?.result as Record<string, unknown>;
    expect(ok).toMatchObject({ kind: "shell_result", exit_code: 0 });
    expect(String(ok.stdout)).toContain("via-exec");
    expect(bad).toMatchObject({ kind: "error", code: "EDENIED" });
    expect(String(bad.message)).toContain('"touch pwned"');
    expect(existsSync(path.join(root, "pwned"))).toBe(false);
  });
});

/** Calls `shell` once per command over `serve --mcp` (a client without elicitation: nobody to ask). */
async function mcpShell(root: string, cfg: string, commands: string[]): Promise<string[]> {
  const replies = await mcpCall(
    ["--root", root, "--config", cfg],
    commands.map((command) => ({ method: "tools/call", params: { name: "shell", arguments: { command } } })),
    { env: env(), clientName: "rules-test" },
  );
  return replies.map((reply) => JSON.stringify(reply.result));
}

describe("the same rules over `toolbelt serve --mcp`", () => {
  it("runs the allowed call and denies the compound one", async () => {
    const root = project();
    const cfg = config(root, { shell: { rules: RULES } });
    const [ok, bad] = await mcpShell(root, cfg, ["echo via-mcp", "echo hi | tee x; touch pwned"]);
    expect(ok).toContain("via-mcp");
    expect(bad).toContain("EDENIED");
    expect(bad).toContain("touch pwned");
    expect(existsSync(path.join(root, "pwned"))).toBe(false);
  }, 60_000);
});

// Issue 27: attacks that got through the rules before, each shown by its effect (a file written).
describe("substitutions the walker cannot see into (issue 27, 1)", () => {
  const allowLs = { allow: ["shell(ls*)", "shell(cat*)", "shell(echo:*)"], deny: ["shell(rm:*)"] };
  const unseen = [
    "ls ${x-`touch pwned`}",
    "ls ${x:-`touch pwned`}",
    "ls ${x:=`touch pwned`}",
    "ls ${PWD:+`touch pwned`}",
    "ls ${PWD/x/`touch pwned`}",
    "cat <<EOF\n`touch pwned`\nEOF",
    "cat <<EOF\nok\n${x-`touch pwned`}\nEOF\n",
    "n='a[$(touch pwned)]'; echo ${PWD:n}",
    "n='a[$(touch pwned)]'; echo ${!n}",
    "n='a[$(touch pwned)]'; printf -v \"$n\" x",
  ];
  it.each(unseen)(
    "%j asks (refused headless, even under --allow shell) and runs nothing",
    async (command) => {
      const root = project();
      const cfg = config(root, { shell: { rules: allowLs } });
      for (const extra of [[], ["--allow", "shell"]]) {
        const result = await shell(root, cfg, command, extra);
        expect(payload(result)).toMatchObject({ kind: "error", code: "EDENIED" });
        expect(String(payload(result).message)).toMatch(/cannot see into|can run commands|variable name/);
      }
      expect(existsSync(path.join(root, "pwned"))).toBe(false);
    },
  );

  it("still runs the same shapes without a command inside", async () => {
    const root = project();
    const cfg = config(root, { shell: { rules: allowLs } });
    const result = await shell(root, cfg, "ls ${x-.} && cat <<EOF\nplain ${x-text}\nEOF");
    expect(payload(result)).toMatchObject({ kind: "shell_result", exit_code: 0 });
    expect(String(payload(result).stdout)).toContain("plain text");
  });
});

describe("a prefix rule that ends inside a word (issue 27, git diff* and git difftool)", () => {
  it("warns on stderr when the rule is read, naming the safe form; the safe form refuses difftool", async () => {
    const root = project();
    spawnSync("git", ["init", "-q", root]);
    const loose = config(root, { shell: { rules: { allow: ["shell(git diff*)"] } } });
    const warned = await shell(root, loose, "git diff --stat");
    expect(payload(warned)).toMatchObject({ kind: "shell_result" });
    expect(warned.stderr).toContain('"shell(git diff*)"');
    expect(warned.stderr).toContain("git difftool");
    expect(warned.stderr).toContain('"shell(git diff:*)"');
    const safe = config(root, { shell: { rules: { allow: ["shell(git diff:*)"] } } });
    const refused = await shell(root, safe, "git difftool -y -x 'touch pwned' HEAD");
    expect(payload(refused)).toMatchObject({ kind: "error", code: "EDENIED" });
    expect(refused.stderr).not.toContain("ends inside the word");
    expect(existsSync(path.join(root, "pwned"))).toBe(false);
  });
});

describe("files written through options are judged like redirects (issue 27)", () => {
  async function repo(): Promise<string> {
    const root = project();
    spawnSync("git", ["init", "-q", root]);
    writeFileSync(path.join(root, "a.txt"), "one\n");
    spawnSync("git", ["-C", root, "add", "a.txt"]);
    writeFileSync(path.join(root, "a.txt"), "two\n");
    mkdirSync(path.join(root, "secret"));
    return root;
  }

  it.each([
    ["git diff --output=secret/key", "secret/key"],
    ["git diff --output secret/key", "secret/key"],
    ["sort -o secret/key a.txt", "secret/key"],
    ["sort -osecret/key a.txt", "secret/key"],
  ])("%j: a denied path denies", async (command, file) => {
    const root = await repo();
    const cfg = config(root, {
      shell: { rules: { allow: ["shell(git diff:*)", "shell(sort:*)"], deny: ["write(secret/**)"] } },
    });
    const result = await shell(root, cfg, command);
    expect(payload(result)).toMatchObject({ kind: "error", code: "EDENIED" });
    expect(String(payload(result).message)).toContain(`"${file}" matches deny rule "write(secret/**)"`);
    expect(existsSync(path.join(root, file))).toBe(false);
  });

  it("an uncovered output file asks; a write rule covering it lets the command run", async () => {
    const root = await repo();
    const asked = await shell(
      root,
      config(root, { shell: { rules: { allow: ["shell(git diff:*)"] } } }),
      "git diff --output=out.patch",
    );
    expect(payload(asked)).toMatchObject({ kind: "error", code: "EDENIED" });
    expect(existsSync(path.join(root, "out.patch"))).toBe(false);
    const allowed = await shell(
      root,
      config(root, { shell: { rules: { allow: ["shell(git diff:*)", "write(out.patch)"] } } }),
      "git diff --output=out.patch",
    );
    expect(payload(allowed)).toMatchObject({ kind: "shell_result", exit_code: 0 });
    expect(readFileSync(path.join(root, "out.patch"), "utf8")).toContain("+two");
  });
});

describe("rule lists of every layer add up (issue 27, 6)", () => {
  it("an untrusted project's deny rule holds when the user passes --config with shell rules", async () => {
    const root = project();
    mkdirSync(path.join(root, "configs"));
    writeFileSync(
      path.join(root, "configs/app.json"),
      JSON.stringify({ tools: { shell: { rules: { deny: ["shell(touch:*)"], ask: ["shell(echo:*)"] } } } }),
    );
    const cfg = config(root, {
      shell: { rules: { allow: ["shell(ls:*)"], ask: ["shell(git push:*)"], deny: ["shell(rm:*)"] } },
    });
    const touch = await shell(root, cfg, "touch pwned", ["--allow", "shell"]);
    expect(payload(touch)).toMatchObject({ kind: "error", code: "EDENIED" });
    expect(String(payload(touch).message)).toContain('deny rule "shell(touch:*)"');
    expect(existsSync(path.join(root, "pwned"))).toBe(false);
    const echo = await shell(root, cfg, "echo hi");
    expect(payload(echo)).toMatchObject({ kind: "error", code: "EDENIED" });
    expect(String(payload(echo).message)).toContain('ask rule "shell(echo:*)"');
    const ls = await shell(root, cfg, "ls");
    expect(payload(ls)).toMatchObject({ kind: "shell_result", exit_code: 0 });
  });

  it("a project setting a later layer replaces is announced, not dropped silently", async () => {
    const root = project();
    mkdirSync(path.join(root, "configs"));
    writeFileSync(
      path.join(root, "configs/app.json"),
      JSON.stringify({ tools: { file: { allowlist: ["^src/"] } } }),
    );
    const cfg = config(root, { file: { allowlist: ["^"] } });
    const result = await shell(root, cfg, "true", ["--allow", "shell"]);
    expect(result.stderr).toContain("tools.file.allowlist (configs/app.json)");
    expect(result.stderr).toContain(cfg);
  });
});
