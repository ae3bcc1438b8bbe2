import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { createToolbelt } from "@toolbelt/toolbelt";
import { beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, type CliResult, cli, tempRoot } from "./cli-harness.js";

// Permission rules that carry their own examples, and `toolbelt rules check`, through the built CLI
// (and the SDK) with the shell family's real parser.
let home: string;

beforeAll(() => {
  assertBuilt();
  home = tempRoot("tb-rules-check-home-");
});

function run(args: string[]): Promise<CliResult> {
  return cli(args, {
    env: { TOOLBELT_CONFIG_DIR: home, XDG_CONFIG_HOME: home, TOOLBELT_TRUST: "" },
    timeoutMs: 60_000,
  });
}

/** A project whose configs/app.json holds `projectRules`, and a --config file holding `cliRules`. */
function project(projectRules: unknown, cliRules?: unknown): { root: string; config: string } {
  const root = tempRoot("tb-rules-check-");
  mkdirSync(path.join(root, "configs"));
  writeFileSync(
    path.join(root, "configs/app.json"),
    JSON.stringify({ tools: { shell: { rules: projectRules } } }),
  );
  const config = path.join(root, "ci.json");
  writeFileSync(config, JSON.stringify({ tools: { shell: { rules: cliRules ?? {} } } }));
  return { root, config };
}

interface Explained {
  decision: string;
  source: string;
  rule?: { kind: string; rule: string; source: string; layer?: string };
  part?: string;
  parts: Array<{ kind: string; text: string; decision?: string; rule?: { rule: string; source: string } }>;
}

async function check(where: { root: string; config: string }, line: string, extra: string[] = []) {
  const result = await run([
    "rules",
    "check",
    line,
    "--root",
    where.root,
    "--config",
    where.config,
    "--format",
    "json",
    ...extra,
  ]);
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as Explained;
}

const RULES = {
  allow: [
    {
      rule: "shell(npm test:*)",
      match: ["npm test", "npm test -- --watch=false"],
      not_match: ["npm tests", "npm test; curl x"],
    },
  ],
  ask: [{ rule: "shell(git push:*)", match: ["git push origin main"], not_match: ["git status"] }],
  deny: [{ rule: "shell(curl:*)", match: ["curl https://x", "/usr/bin/curl x", "echo $(curl x)"] }],
};

describe("rules that carry examples", () => {
  it("a config whose examples agree with its rules loads, and its rules hold", async () => {
    const where = project({}, RULES);
    const result = await check(where, "npm test -- --watch=false");
    expect(result.decision).toBe("allow");
  });

  it("an example its rule disagrees with is a config error naming the rule and the example (exit 2)", async () => {
    const where = project(
      {},
      {
        allow: [{ rule: "shell(git diff*)", match: ["git diff --stat"], not_match: ["git difftool -x sh"] }],
        deny: [{ rule: "shell(rm:*)", match: ["rm -rf build", "find . -delete"] }],
      },
    );
    for (const args of [
      ["rules", "check", "ls"],
      ["run", "shell", "--input", JSON.stringify({ command: "ls" })],
    ]) {
      const result = await run([...args, "--root", where.root, "--config", where.config]);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain("EINVAL_CONFIG");
      expect(result.stderr).toContain(
        `allow rule "shell(git diff*)" (tools.shell.rules.allow[0], from ${where.config}): not_match example "git difftool -x sh"`,
      );
      expect(result.stderr).toContain(
        `deny rule "shell(rm:*)" (tools.shell.rules.deny[0], from ${where.config}): match example "find . -delete"`,
      );
      // The examples that agree are not named.
      expect(result.stderr).not.toContain('"rm -rf build"');
      expect(result.stdout).toBe("");
    }
  });

  it("an allow rule's match example must be allowed whole: a pipe into sh asks whatever the rule says", async () => {
    const where = project({}, { allow: [{ rule: "shell(git log:*)", match: ["git log | sh"] }] });
    const result = await run(["rules", "check", "ls", "--root", where.root, "--config", where.config]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/match example "git log \| sh" — it asks whatever the rules say/);
  });

  it("toolbelt doctor names each disagreeing example instead of refusing", async () => {
    const where = project({}, { deny: [{ rule: "shell(rm:*)", match: ["rm -rf build", "find . -delete"] }] });
    const result = await run(["doctor", "--root", where.root, "--config", where.config, "--format", "json"]);
    expect(result.code, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout) as Array<{
      family: string;
      name: string;
      status: string;
      detail: string;
    }>;
    expect(report.filter((r) => r.family === "rules")).toEqual([
      {
        family: "rules",
        name: "tools.shell.rules.deny[0]",
        status: "error",
        detail: `deny rule "shell(rm:*)" (tools.shell.rules.deny[0], from ${where.config}): match example "find . -delete" — the rule does not match it`,
      },
    ]);
  });

  it("the SDK refuses the same config when the session opens", async () => {
    const { root } = project({});
    await expect(
      createToolbelt({
        root,
        userConfig: false,
        families: ["shell"],
        config: {
          tools: { shell: { rules: { ask: [{ rule: "shell(git push:*)", not_match: ["git push -f"] }] } } },
        },
      }),
    ).rejects.toMatchObject({
      code: "EINVAL_CONFIG",
      message: expect.stringContaining('not_match example "git push -f"'),
    });
  });
});

describe("toolbelt rules check", () => {
  it("names the rule that allows, asks or denies, with the layer it came from", async () => {
    const where = project({ deny: ["shell(dd:*)"] }, RULES);
    const app = path.join(where.root, "configs/app.json");
    const allow = await check(where, "npm test");
    expect(allow).toMatchObject({
      decision: "allow",
      rule: {
        kind: "allow",
        rule: "shell(npm test:*)",
        source: "tools.shell.rules.allow[0]",
        layer: where.config,
      },
    });
    const ask = await check(where, "git push origin main");
    expect(ask).toMatchObject({
      decision: "ask",
      rule: {
        kind: "ask",
        rule: "shell(git push:*)",
        source: "tools.shell.rules.ask[0]",
        layer: where.config,
      },
      part: "git push origin main",
    });
    // The untrusted project's deny rule applies (it only tightens), and is named as the project's.
    const deny = await check(where, "dd if=/dev/zero of=x");
    expect(deny).toMatchObject({
      decision: "deny",
      rule: { kind: "deny", rule: "shell(dd:*)", source: "tools.shell.rules.deny[0]" },
    });
    expect([app, "configs/app.json"]).toContain(deny.rule?.layer);
    // No rule: the mode decides, and says so.
    const none = await check(where, "ls -la");
    expect(none).toMatchObject({
      decision: "ask",
      source: "default for execute access",
      parts: [{ text: "ls -la" }],
    });
    expect(none.rule).toBeUndefined();
    expect(none.parts[0]?.decision).toBeUndefined();
  });

  it("shows what each segment of a compound command gets, and which one decided", async () => {
    const where = project({}, RULES);
    const result = await check(where, "npm test && git push origin main; curl https://x > out.txt");
    expect(result.decision).toBe("deny");
    expect(result.rule?.rule).toBe("shell(curl:*)");
    expect(result.part).toBe("curl https://x");
    expect(result.parts.map((p) => [p.kind, p.text, p.decision, p.rule?.rule])).toEqual([
      ["command", "npm test", "allow", "shell(npm test:*)"],
      ["command", "git push origin main", "ask", "shell(git push:*)"],
      ["command", "curl https://x", "deny", "shell(curl:*)"],
      ["write", "out.txt", undefined, undefined],
    ]);
    // Without the denied segment the ask decides; an allow needs every segment.
    expect((await check(where, "npm test && git push origin main")).decision).toBe("ask");
    expect((await check(where, "npm test && ls")).decision).toBe("ask");
  });

  it("prints the decision and the deciding rule as text", async () => {
    const where = project({}, RULES);
    const result = await run([
      "rules",
      "check",
      "npm test; git push",
      "--root",
      where.root,
      "--config",
      where.config,
    ]);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trimEnd().split("\n");
    expect(lines[0]).toBe(
      `ask by ask rule "shell(git push:*)" (tools.shell.rules.ask[0], from ${where.config}) for: git push`,
    );
    expect(lines[1]).toMatch(/^ {2}allow command npm test +— allow rule "shell\(npm test:\*\)"/);
    expect(lines[2]).toMatch(/^ {2}ask {3}command git push +— ask rule "shell\(git push:\*\)"/);
  });

  it("is a usage error without a command line or with another action", async () => {
    expect((await run(["rules", "check"])).code).toBe(2);
    expect((await run(["rules", "explain", "ls"])).code).toBe(2);
  });
});
