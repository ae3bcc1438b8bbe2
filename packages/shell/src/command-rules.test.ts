import { readFileSync } from "node:fs";
import { type ApprovalPrompt, createSession, parseConfig } from "@toolbelt/core";
import { decide } from "@toolbelt/core/internal";
import { afterAll, describe, expect, it } from "vitest";
import { commandLineParts, MAX_RULE_COMMAND_CHARS } from "./command-rules.js";
import { family } from "./index.js";
import { removeDir, tempDir } from "./test-harness.js";

interface Case {
  command: string;
  expect: "allow" | "ask" | "deny";
  why: string;
}
const corpus = JSON.parse(
  readFileSync(new URL("./__fixtures__/hostile-commands.json", import.meta.url), "utf8"),
) as { rules: Record<string, string[]>; cases: Case[] };

const config = parseConfig({ tools: { shell: { rules: corpus.rules } } }, "test");

async function decision(command: string, allow: ReadonlySet<string> = new Set()) {
  const parts = await commandLineParts(command);
  return decide(
    { tool: "shell", family: "shell", access: "execute", paths: [], rules: parts },
    config,
    allow,
  );
}

describe("permission rules against a corpus of hostile command lines", () => {
  it("holds at least 60 cases", () => {
    expect(corpus.cases.length).toBeGreaterThanOrEqual(60);
  });

  it.each(corpus.cases.map((c) => [JSON.stringify(c.command), c.expect, c.why, c] as const))(
    "%s → %s (%s)",
    async (_shown, expected, _why, c) => {
      expect((await decision(c.command)).mode).toBe(expected);
    },
  );

  it("never allows a corpus command that names curl or rm, whatever --allow says about asks", async () => {
    for (const c of corpus.cases.filter((k) => k.expect === "deny")) {
      expect((await decision(c.command, new Set(["shell"]))).mode, c.command).toBe("deny");
    }
  });
});

describe("commandLineParts", () => {
  it("splits a compound line into its simple commands, with quote removal", async () => {
    const parts = await commandLineParts(`n"p"m test && (git 'diff') | { \\ls -l; }`);
    expect(parts.commands.map((p) => p.words)).toEqual([
      ["npm", "test"],
      ["git", "diff"],
      ["ls", "-l"],
    ]);
  });

  it("reports redirect targets as writes and reads, not descriptor duplications", async () => {
    const parts = await commandLineParts("a > out.txt 2>&1 < in.txt >> log 2>/dev/null");
    expect(parts.writes).toEqual(["out.txt", "log"]);
    expect(parts.reads).toEqual(["in.txt"]);
  });

  it("marks what it cannot see through as opaque, with the reason", async () => {
    const parts = await commandLineParts('eval "$x"');
    expect(parts.commands).toHaveLength(1);
    expect(parts.commands[0]?.opaque).toMatch(/eval/);
  });

  it("bounds the line it parses", async () => {
    const parts = await commandLineParts(`echo ${"a".repeat(MAX_RULE_COMMAND_CHARS)}`);
    expect(parts.commands[0]?.opaque).toMatch(/characters/);
  });

  it("bounds nesting of bash -c", async () => {
    let line = "curl x";
    for (let i = 0; i < 12; i++) line = `bash -c ${JSON.stringify(line).replace(/\$/g, "\\$")}`;
    const parts = await commandLineParts(line);
    expect(parts.commands.some((p) => p.opaque?.includes("nests"))).toBe(true);
  });
});

describe("--allow and rule asks", () => {
  it("answers an ask from a missing allow rule", async () => {
    expect((await decision("npm test || true", new Set(["shell"]))).mode).toBe("allow");
  });

  it("does not answer an opaque part while deny rules apply: it could hide a denied command", async () => {
    expect((await decision('eval "$x"', new Set(["shell"]))).mode).toBe("ask");
  });

  it("names the part and the rule in a deny", async () => {
    const d = await decision("npm test && rm -rf /");
    expect(d.mode).toBe("deny");
    if (d.mode === "deny")
      expect(d.reason).toBe('"rm -rf /" matches deny rule "shell(rm:*)" (tools.shell.rules.deny[1])');
  });
});

describe("an ask by rule in a session", () => {
  const root = tempDir("tb-rules-session-");
  afterAll(() => removeDir(root));

  it("shows the approver the rule and the part that needed asking, and runs nothing when refused", async () => {
    const prompts: ApprovalPrompt[] = [];
    const session = await createSession({
      root,
      config: { tools: { shell: { rules: { allow: ["shell(echo:*)"], ask: ["shell(git push:*)"] } } } },
      plugins: [family],
      client: {
        approve: async (prompt) => {
          prompts.push(prompt);
          return false;
        },
      },
    });
    try {
      const result = await session.call("shell", { command: "echo a > /dev/null && git push origin main" });
      expect(result).toMatchObject({ kind: "error", code: "EDENIED" });
      expect(prompts).toHaveLength(1);
      expect(prompts[0]?.summary).toContain(
        'asked by ask rule "shell(git push:*)" (tools.shell.rules.ask[0]) for: git push origin main',
      );
      const ran = await session.call("shell", { command: "echo ran-without-asking" });
      expect(ran).toMatchObject({ kind: "shell_result", exit_code: 0 });
      expect(prompts).toHaveLength(1);
    } finally {
      await session.close();
    }
  });
});
