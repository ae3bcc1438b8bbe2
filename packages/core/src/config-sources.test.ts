import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { parseConfig } from "./config.js";
import { loadTrustedConfig, mergeLayers, untrustedPart } from "./config-sources.js";
import { defineConfigSection, trustRules } from "./contributions.js";
import { addTrustedProject, listTrustedProjects, projectTrust, removeTrustedProject } from "./trust-store.js";

const dirs: string[] = [];
function temp(prefix = "tb-trust-unit-"): string {
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), prefix)));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const keys = (ignored: Array<{ key: string }>) => ignored.map((i) => i.key);

// The built-in families' keys and rules are tested with their contributions in the toolbelt package
// (packages/toolbelt/src/contributions.test.ts); here, core's own keys and a contributed stand-in.
const demo = defineConfigSection({
  owner: "demo",
  keys: {
    "agent.demo_level": { schema: z.number().optional(), trust: trustRules.atMost(5) },
    "tools.search.depth": { schema: z.number().optional(), trust: trustRules.neutral },
    demo_servers: {
      schema: z.record(z.string(), z.string()).default({}),
      trust: trustRules.eachEntry("starts a demo server"),
    },
    demo_secret: { schema: z.string().optional() },
  },
});

describe("untrustedPart", () => {
  const base = parseConfig({});

  it("keeps what tightens or is neutral", () => {
    const value = {
      agent: { tool_search: "on", mode: "plan" },
      tools: {
        shell: { mode: "deny" },
        files: { allowlist: ["^src/"], enabled: false },
        read_file: { mode: "ask" },
      },
      limits: { fileReadMaxLines: 50 },
    };
    const { allowed, ignored } = untrustedPart(value, base, "p");
    expect(ignored).toEqual([]);
    expect(allowed).toEqual(value);
  });

  it("drops what runs code or loosens policy, saying why", () => {
    const { allowed, ignored } = untrustedPart(
      {
        plugins: ["./evil.mjs"],
        agent: { workspace_mode: "auto", shell_env: { allow: ["AWS_*"], deny: ["FOO"] } },
        tools: { shell: { mode: "allow" } },
        limits: { fileWriteMaxBytes: 1e12 },
      },
      base,
      "configs/app.json",
    );
    expect(keys(ignored).sort()).toEqual(
      [
        "plugins",
        "agent.workspace_mode",
        "agent.shell_env.allow",
        "tools.shell.mode",
        "limits.fileWriteMaxBytes",
      ].sort(),
    );
    expect(ignored.every((i) => i.source === "configs/app.json" && i.why.length > 0)).toBe(true);
    // deny in shell_env tightens, so it stays.
    expect(allowed.agent).toEqual({ shell_env: { deny: ["FOO"] } });
  });

  it("applies each contributed key's own rule: agent, tools field and section alike", () => {
    const user = parseConfig({ agent: { demo_level: 3 } }, "config", [demo]);
    const value = {
      agent: { demo_level: 2, mode: "plan" },
      tools: { search: { depth: 9 } },
      demo_servers: { a: "x", b: "y" },
      demo_secret: "s",
    };
    const { allowed, ignored } = untrustedPart(value, user, "p", [demo]);
    expect(allowed).toEqual({ agent: { demo_level: 2, mode: "plan" }, tools: { search: { depth: 9 } } });
    expect(keys(ignored)).toEqual(["demo_servers.a", "demo_servers.b", "demo_secret"]);
    // Weighed against the user's value, not the rule's fallback.
    expect(keys(untrustedPart({ agent: { demo_level: 4 } }, user, "p", [demo]).ignored)).toEqual([
      "agent.demo_level",
    ]);
    // A key declared without a rule is not known to be safe.
    expect(ignored.at(-1)?.why).toMatch(/not known to be safe/);
  });

  it("without the contribution, a contributed key is unknown and dropped", () => {
    expect(keys(untrustedPart({ demo_servers: { a: "x" } }, base, "p").ignored)).toEqual(["demo_servers"]);
  });
});

describe("mergeLayers", () => {
  it("merges in order; a later trusted layer may loosen what an untrusted one could not", () => {
    const { config, ignored } = mergeLayers([
      { value: { limits: { fileReadMaxLines: 100 } }, source: "user", trusted: true },
      {
        value: { limits: { fileReadMaxLines: 500 }, tools: { shell: { mode: "allow" } } },
        source: "p",
        trusted: false,
      },
      { value: { tools: { shell: { mode: "allow" } } }, source: "--config", trusted: true },
    ]);
    expect(config.limits.fileReadMaxLines).toBe(100);
    expect(config.tools.shell?.mode).toBe("allow");
    expect(keys(ignored)).toEqual(["limits.fileReadMaxLines", "tools.shell.mode"]);
  });

  it("still refuses an invalid untrusted file with the key named", () => {
    expect(() => mergeLayers([{ value: { agent: { nope: 1 } }, source: "p", trusted: false }])).toThrow(
      /agent\.nope/,
    );
  });
});

describe("loadTrustedConfig and the trust store", () => {
  function project(config: unknown, mcp?: unknown): string {
    const root = temp();
    mkdirSync(path.join(root, "configs"));
    writeFileSync(path.join(root, "configs/app.json"), JSON.stringify(config));
    if (mcp) writeFileSync(path.join(root, ".mcp.json"), JSON.stringify(mcp));
    return root;
  }

  it("reads the user's config.json as trusted and lists what a contribution reports from the project's other files", () => {
    const userDir = temp("tb-trust-user-");
    writeFileSync(path.join(userDir, "config.json"), JSON.stringify({ plugins: ["./mine.mjs"] }));
    const root = project(
      { plugins: ["./evil.mjs"] },
      { mcpServers: { a: { command: "a" }, b: { command: "b", disabled: true } } },
    );
    // The mcp family reports .mcp.json this way (tested with it in the toolbelt package).
    const servers = defineConfigSection({
      owner: "servers",
      keys: {},
      untrustedFiles: (dir) => [
        { key: "servers.a", source: path.relative(dir, path.join(dir, ".mcp.json")), why: "starts it" },
      ],
    });
    const { config, trust } = loadTrustedConfig(root, { userDir, env: {}, contributions: [servers] });
    expect(trust.trusted).toBe(false);
    expect(config.plugins).toEqual([path.join(userDir, "mine.mjs")]);
    expect(trust.ignored.map((i) => `${i.source}:${i.key}`)).toEqual([
      "configs/app.json:plugins",
      ".mcp.json:servers.a",
    ]);
    // Trusted, the project's files are its to use: nothing is reported.
    expect(
      loadTrustedConfig(root, { userDir, env: {}, trust: true, contributions: [servers] }).trust.ignored,
    ).toEqual([]);
  });

  it("applies a trusted project in full, whichever way it is trusted", () => {
    const userDir = temp("tb-trust-user-");
    const root = project({ plugins: ["./p.mjs"] });
    expect(loadTrustedConfig(root, { userDir, env: {}, trust: true }).config.plugins).toEqual(["./p.mjs"]);
    expect(loadTrustedConfig(root, { userDir, env: { TOOLBELT_TRUST: "1" } }).trust.trusted).toBe(true);
    expect(loadTrustedConfig(root, { userDir, env: { TOOLBELT_TRUST: "0" } }).trust.trusted).toBe(false);
  });

  it("records trust by real path, covers subdirectories, and forgets on remove", async () => {
    const userDir = temp("tb-trust-user-");
    const root = temp();
    mkdirSync(path.join(root, "sub"));
    const link = path.join(temp(), "link");
    symlinkSync(root, link);
    expect(await addTrustedProject(link, userDir)).toBe(root);
    expect(listTrustedProjects(userDir).map((p) => p.path)).toEqual([root]);
    expect(projectTrust(path.join(root, "sub"), { userDir, env: {} }).trusted).toBe(true);
    expect(projectTrust(`${root}-sibling`, { userDir, env: {} }).trusted).toBe(false);
    expect(projectTrust(root, { userDir, env: {}, trust: false }).trusted).toBe(false);
    expect(await removeTrustedProject(root, userDir)).toBe(true);
    expect(projectTrust(root, { userDir, env: {} }).trusted).toBe(false);
  });
});

describe("a user config folder inside the root", () => {
  it("is no trusted source: its trust list is not honoured and its config.json counts as the project's", async () => {
    const root = temp();
    const userDir = path.join(root, ".config", "toolbelt");
    mkdirSync(userDir, { recursive: true });
    await addTrustedProject(root, userDir);
    writeFileSync(path.join(userDir, "config.json"), JSON.stringify({ tools: { shell: { mode: "allow" } } }));
    const { config, trust } = loadTrustedConfig(root, { userDir, env: {} });
    expect(trust.trusted).toBe(false);
    expect(trust.reason).toMatch(/inside the root/);
    expect(config.tools.shell?.mode).toBeUndefined();
    expect(trust.ignored.map((i) => i.key)).toEqual(["tools.shell.mode"]);
    // Trusting the root explicitly makes the whole folder's content apply again.
    expect(loadTrustedConfig(root, { userDir, env: {}, trust: true }).config.tools.shell?.mode).toBe("allow");
    // A folder not created yet is placed by its parent.
    expect(loadTrustedConfig(root, { userDir: path.join(root, "new", "dir"), env: {} }).trust.reason).toMatch(
      /inside the root/,
    );
  });
});
