import { describe, expect, it } from "vitest";
import { parseConfig } from "./config.js";
import { mergeLayers } from "./config-sources.js";
import { decide, listingDecision } from "./permissions.js";
import {
  checkRuleExamples,
  collectRules,
  commandRuleMatches,
  globMatch,
  pathRuleMatches,
  ruleExampleProblems,
} from "./rules.js";

const cfg = (tools: Record<string, unknown>) => parseConfig({ tools }, "test");
const none: ReadonlySet<string> = new Set();

describe("rule patterns", () => {
  it("matches command prefixes word by word", () => {
    expect(commandRuleMatches("npm test:*", ["npm", "test"])).toBe(true);
    expect(commandRuleMatches("npm test:*", ["npm", "test", "--", "-w"])).toBe(true);
    expect(commandRuleMatches("npm test:*", ["npm", "tests"])).toBe(false);
    expect(commandRuleMatches("npm test:*", ["npm"])).toBe(false);
  });

  it("matches a glob over the command text and an exact command otherwise", () => {
    expect(commandRuleMatches("git diff*", ["git", "diff", "--stat"])).toBe(true);
    expect(commandRuleMatches("git diff*", ["git", "log"])).toBe(false);
    expect(commandRuleMatches("make  build", ["make", "build"])).toBe(true);
    expect(commandRuleMatches("make build", ["make", "build", "x"])).toBe(false);
  });

  it("matches paths with *, ** and ?", () => {
    expect(pathRuleMatches("src/**", "src")).toBe(true);
    expect(pathRuleMatches("src/**", "src/a/b.ts")).toBe(true);
    expect(pathRuleMatches("src/**", "srcx/a.ts")).toBe(false);
    expect(pathRuleMatches("src/*.ts", "src/a/b.ts")).toBe(false);
    expect(pathRuleMatches("**/*.env", "a/b/.env")).toBe(true);
    expect(pathRuleMatches("**/*.env", ".env")).toBe(true);
    expect(pathRuleMatches("./docs/?.md", "docs/a.md")).toBe(true);
  });

  it("costs at most pattern × text steps, whatever the pattern", () => {
    // A backtracking matcher takes exponential time on this; the state simulation answers at once.
    const pattern = `${"*a".repeat(40)}b`;
    expect(globMatch(pattern, "a".repeat(5000), false)).toBe(false);
  });
});

describe("decide with rules", () => {
  const read = { tool: "read_file", family: "files", access: "read" as const };
  const write = { tool: "write_file", family: "files", access: "write" as const };

  it("deny beats ask beats allow, and deny beats --allow", () => {
    const config = cfg({
      file: {
        rules: { allow: ["write(src/**)"], ask: ["write(src/gen/**)"], deny: ["write(src/secret/**)"] },
      },
    });
    expect(decide({ ...write, paths: ["src/a.ts"] }, config, none).mode).toBe("allow");
    expect(decide({ ...write, paths: ["src/gen/a.ts"] }, config, none).mode).toBe("ask");
    expect(decide({ ...write, paths: ["src/secret/k"] }, config, new Set(["file", "files"])).mode).toBe(
      "deny",
    );
  });

  it("falls back to the mode when no rule covers every path", () => {
    const config = cfg({ file: { mode: "ask", rules: { allow: ["write(src/**)"] } } });
    expect(decide({ ...write, paths: ["src/a.ts", "README.md"] }, config, none).mode).toBe("ask");
    expect(decide({ ...write, paths: ["src/a.ts"] }, config, none).mode).toBe("allow");
  });

  it("matches read rules on read paths only, and tool names on the tool's own paths", () => {
    const config = cfg({ file: { rules: { deny: ["read(secrets/**)", "write_file(docs/**)"] } } });
    expect(decide({ ...read, paths: ["secrets/k"] }, config, none).mode).toBe("deny");
    expect(decide({ ...write, paths: ["secrets/k"] }, config, none).mode).toBe("allow");
    expect(decide({ ...write, paths: ["docs/a.md"] }, config, none).mode).toBe("deny");
    expect(decide({ ...read, paths: ["docs/a.md"] }, config, none).mode).toBe("allow");
  });

  it("an allow rule beats a deny mode (deny everything except), never an allowlist", () => {
    const config = cfg({ file: { mode: "deny", allowlist: ["^src/"], rules: { allow: ["write"] } } });
    expect(decide({ ...write, paths: ["src/a.ts"] }, config, none).mode).toBe("allow");
    expect(decide({ ...write, paths: ["lib/a.ts"] }, config, none).mode).toBe("deny");
  });

  it("drops from a listing the files deny and ask rules name, together with the allowlist", () => {
    const sub = { tool: "search_files", family: "files" };
    const config = cfg({
      file: {
        allowlist: ["^src/"],
        rules: { deny: ["read(src/secret/**)"], ask: ["search_files(**/*.key)"] },
      },
    });
    const { filter } = listingDecision(sub, config, { rel: ".", directory: true });
    expect(filter?.(["src/a.ts", "src/secret/k", "src/b.key", "lib/c.ts"])).toEqual([
      true,
      false,
      false,
      false,
    ]);
    const rulesOnly = listingDecision(sub, cfg({ file: { rules: { deny: ["read(.env)"] } } }), {
      rel: ".",
      directory: true,
    });
    expect(rulesOnly.filter?.([".env", "a.ts"])).toEqual([false, true]);
    expect(listingDecision(sub, cfg({}), { rel: ".", directory: true }).filter).toBeUndefined();
  });

  it("rejects a malformed rule when the config is read", () => {
    expect(() => cfg({ shell: { rules: { allow: ["shell(npm test"] } } })).toThrow(/rule/);
  });
});

describe("rules from an untrusted project", () => {
  const user = {
    source: "user",
    trusted: true,
    value: { tools: { shell: { rules: { deny: ["shell(rm:*)"] } } } },
  };
  const project = {
    source: "project",
    trusted: false,
    value: {
      tools: {
        shell: { rules: { allow: ["shell(curl:*)"], deny: ["shell(dd:*)"], ask: ["shell(git push:*)"] } },
      },
    },
  };

  it("adds their deny and ask rules to the user's and ignores their allow rules, loudly", () => {
    const { config, ignored } = mergeLayers([user, project] as never);
    expect(config.tools.shell?.rules).toEqual({
      ask: ["shell(git push:*)"],
      deny: ["shell(rm:*)", "shell(dd:*)"],
    });
    expect(ignored.map((i) => i.key)).toContain("tools.shell.rules.allow");
  });

  it("keeps them when a later trusted layer (--config) names rules of its own: lists add up", () => {
    const cli = {
      source: "ci.json",
      trusted: true,
      value: { tools: { shell: { rules: { allow: ["shell(ls:*)"], deny: ["shell(curl:*)"] } } } },
    };
    const { config, ignored } = mergeLayers([user, project, cli] as never);
    expect(config.tools.shell?.rules).toEqual({
      allow: ["shell(ls:*)"],
      ask: ["shell(git push:*)"],
      deny: ["shell(rm:*)", "shell(dd:*)", "shell(curl:*)"],
    });
    expect(ignored.map((i) => i.key)).toEqual(["tools.shell.rules.allow"]);
  });

  it("says when a later layer replaces a setting the project tightened", () => {
    const tight = { ...project, value: { tools: { file: { allowlist: ["^src/"] } } } };
    const cli = { source: "ci.json", trusted: true, value: { tools: { file: { allowlist: ["^"] } } } };
    const { ignored } = mergeLayers([user, tight, cli] as never);
    expect(ignored).toEqual([{ key: "tools.file.allowlist", source: "project", why: "replaced by ci.json" }]);
  });

  it("keeps them when trusted", () => {
    const { config } = mergeLayers([user, { ...project, trusted: true }] as never);
    expect(config.tools.shell?.rules?.allow).toEqual(["shell(curl:*)"]);
  });
});

describe("rules that carry examples", () => {
  const layered = (tools: Record<string, unknown>, trusted = true) =>
    mergeLayers([{ source: "/p/configs/app.json", trusted, value: { tools } }] as never).config;

  it("passes when every match example is decided by its rule and no not_match example is", async () => {
    const config = layered({
      file: {
        rules: {
          deny: [{ rule: "read(**/*.env)", match: [".env", "a/b/prod.env"], not_match: ["src/env.ts"] }],
        },
      },
    });
    expect(await ruleExampleProblems(config, undefined)).toEqual([]);
  });

  it("names the rule, its place and layer, and the example that disagrees", async () => {
    const config = layered({
      file: {
        rules: {
          ask: ["write(docs/**)", { rule: "write(src/**)", match: ["lib/a.ts"], not_match: ["src/b.ts"] }],
        },
      },
    });
    const problems = await ruleExampleProblems(config, undefined);
    expect(problems.map((p) => [p.rule.source, p.rule.layer, p.list, p.example])).toEqual([
      ["tools.file.rules.ask[1]", "/p/configs/app.json", "match", "lib/a.ts"],
      ["tools.file.rules.ask[1]", "/p/configs/app.json", "not_match", "src/b.ts"],
    ]);
    await expect(checkRuleExamples(config, undefined)).rejects.toThrow(
      /ask rule "write\(src\/\*\*\)" \(tools\.file\.rules\.ask\[1\], from \/p\/configs\/app\.json\): match example "lib\/a\.ts"/,
    );
  });

  it("keeps an untrusted project's deny rule with examples, without calling it replaced", () => {
    const user = {
      source: "user",
      trusted: true,
      value: { tools: { file: { rules: { deny: ["read(x)"] } } } },
    };
    const entry = { rule: "read(secrets/**)", match: ["secrets/a"] };
    const project = {
      source: "project",
      trusted: false,
      value: { tools: { file: { rules: { deny: [entry] } } } },
    };
    const { config, ignored } = mergeLayers([user, project] as never);
    expect(config.tools.file?.rules?.deny).toEqual(["read(x)", entry]);
    expect(ignored).toEqual([]);
    expect(collectRules(["file"], config).map((r) => r.layer)).toEqual(["user", "project"]);
  });

  it("rejects an entry with an unknown field or a malformed rule when the config is read", () => {
    expect(() => cfg({ file: { rules: { deny: [{ rule: "read(a)", matches: ["a"] }] } } })).toThrow(
      /matches/,
    );
    expect(() => cfg({ file: { rules: { deny: [{ rule: "read(a" }] } } })).toThrow(/rule/);
  });
});
