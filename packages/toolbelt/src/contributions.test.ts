import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseConfig } from "@toolbelt/core";
import { eventTypes, loadTrustedConfig, untrustedPart } from "@toolbelt/core/internal";
import { afterEach, describe, expect, it } from "vitest";
import { BUILTIN_TOOL_KEYS, configContributions, eventContributions } from "./contributions.js";
import { createToolbelt } from "./create.js";
import { loadFamilies } from "./families.js";

const C = configContributions();
const keys = (ignored: Array<{ key: string }>) => ignored.map((i) => i.key);

const dirs: string[] = [];
function tempRoot(config?: unknown): string {
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), "tb-contrib-")));
  dirs.push(dir);
  if (config !== undefined) {
    mkdirSync(path.join(dir, "configs"));
    writeFileSync(path.join(dir, "configs", "app.json"), JSON.stringify(config));
  }
  return dir;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

// The trust rules the built-in families contribute, with the cases core used to hold itself:
// the same keys, the same verdicts, the same reasons.
describe("untrustedPart with the built-in families' trust rules", () => {
  const base = parseConfig({}, "config", C);

  it("keeps what tightens or is neutral", () => {
    const value = {
      agent: { edit_tool: "structured_patch", shell_sandbox: "required", tool_search: "on", mode: "plan" },
      tools: {
        shell: { mode: "deny" },
        files: { allowlist: ["^src/"], enabled: false },
        read_file: { mode: "ask" },
      },
      limits: { fileReadMaxLines: 50 },
    };
    const { allowed, ignored } = untrustedPart(value, base, "p", C);
    expect(ignored).toEqual([]);
    expect(allowed).toEqual(value);
  });

  it("drops what runs code or loosens policy, saying why", () => {
    const { allowed, ignored } = untrustedPart(
      {
        plugins: ["./evil.mjs"],
        mcpServers: { x: { command: "x" } },
        lsp: { y: { command: "y" } },
        projects: [{ path: "/" }],
        agent: {
          shell_sandbox: "off",
          shell_sandbox_allowed_paths: ["/home"],
          workspace_mode: "auto",
          shell_env: { allow: ["AWS_*"], deny: ["FOO"] },
          shell_max_processes: 100_000,
        },
        tools: { shell: { mode: "allow" }, search: { engine: "js" } },
        limits: { fileWriteMaxBytes: 1e12 },
      },
      base,
      "configs/app.json",
      C,
    );
    expect(keys(ignored).sort()).toEqual(
      [
        "plugins",
        "mcpServers.x",
        "lsp.y",
        "projects",
        "agent.shell_sandbox",
        "agent.shell_sandbox_allowed_paths",
        "agent.workspace_mode",
        "agent.shell_env.allow",
        "agent.shell_max_processes",
        "tools.shell.mode",
        "tools.search.engine",
        "limits.fileWriteMaxBytes",
      ].sort(),
    );
    expect(ignored.every((i) => i.source === "configs/app.json" && i.why.length > 0)).toBe(true);
    // deny in shell_env tightens, so it stays.
    expect(allowed.agent).toEqual({ shell_env: { deny: ["FOO"] } });
  });

  it("weighs each key against what the user set, not against the defaults", () => {
    const user = parseConfig(
      {
        agent: { shell_sandbox: "off", shell_sandbox_allowed_paths: ["/a", "/b"] },
        tools: { shell: { mode: "allow" }, files: { allowlist: ["^src/"] }, lsp: { mode: "deny" } },
      },
      "config",
      C,
    );
    const { allowed, ignored } = untrustedPart(
      {
        agent: { shell_sandbox: "best-effort", shell_sandbox_allowed_paths: ["/a"] },
        tools: { shell: { mode: "allow" }, files: { allowlist: [".*"] }, lsp_hover: { mode: "ask" } },
      },
      user,
      "p",
      C,
    );
    // Tighter than the user's own choice, or the same: kept.
    expect(allowed.agent).toEqual({ shell_sandbox: "best-effort", shell_sandbox_allowed_paths: ["/a"] });
    expect((allowed.tools as Record<string, unknown>).shell).toEqual({ mode: "allow" });
    // Replacing the user's allowlist, or asking on a tool whose family the user denied: dropped.
    expect(keys(ignored)).toEqual(["tools.files.allowlist", "tools.lsp_hover.mode"]);
  });

  it("true and false shell_sandbox mean best-effort and off", () => {
    expect(
      keys(untrustedPart({ agent: { shell_sandbox: false } }, parseConfig({}, "config", C), "p", C).ignored),
    ).toEqual(["agent.shell_sandbox"]);
    const required = parseConfig({ agent: { shell_sandbox: "required" } }, "config", C);
    expect(keys(untrustedPart({ agent: { shell_sandbox: true } }, required, "p", C).ignored)).toEqual([
      "agent.shell_sandbox",
    ]);
  });

  it("ignores an untrusted shell_sandbox_confine_reads: false (reads are confined by default) and extra read paths", () => {
    const loosen = { agent: { shell_sandbox_confine_reads: false, shell_sandbox_read_paths: ["/home"] } };
    const { allowed, ignored } = untrustedPart(loosen, parseConfig({}, "config", C), "p", C);
    expect(keys(ignored)).toEqual(["agent.shell_sandbox_confine_reads", "agent.shell_sandbox_read_paths"]);
    expect(allowed.agent).toEqual({});
    // The user already opted out: the project saying the same loosens nothing.
    const user = parseConfig({ agent: { shell_sandbox_confine_reads: false } }, "config", C);
    expect(untrustedPart(loosen, user, "p", C).allowed.agent).toEqual({ shell_sandbox_confine_reads: false });
    expect(untrustedPart({ agent: { shell_sandbox_confine_reads: true } }, user, "p", C).ignored).toEqual([]);
  });
});

describe("the built-in contributions", () => {
  it("compose one strict schema: every family's keys validate, unknown keys still name themselves", () => {
    const config = parseConfig(
      {
        agent: { edit_tool: "structured_patch", shell_sandbox: "required", shell_network: "off" },
        tools: { search: { engine: "js" }, edit: { diagnostics: "all", diagnostics_timeout_ms: 2000 } },
        lsp: { ts: { command: "tsls" } },
        mcpServers: { s: { command: "srv" } },
        projects: [{ path: "/tmp" }],
      },
      "config",
      C,
    );
    expect(config.lsp.ts?.args).toEqual([]);
    expect(config.tools.search?.engine).toBe("js");
    expect(config.tools.edit?.diagnostics).toBe("all");
    expect(() => parseConfig({ agent: { edit_tool: "vim" } }, "config", C)).toThrow(/agent\.edit_tool/);
    expect(() => parseConfig({ tools: { edit: { diagnostics: "some" } } }, "config", C)).toThrow(
      /tools\.edit\.diagnostics/,
    );
    // The old switch is gone, not silently ignored.
    expect(() => parseConfig({ lsp_diagnostics_after_edit: true }, "config", C)).toThrow(
      /unknown key lsp_diagnostics_after_edit/,
    );
    expect(() => parseConfig({ tools: { search: { engin: "js" } } }, "config", C)).toThrow(
      /tools\.search\.engin/,
    );
    expect(() => parseConfig({ lsp: { ts: { command: "x", cmd: 1 } } }, "config", C)).toThrow(/lsp\.ts\.cmd/);
  });

  it("a run that loads one family still accepts another family's section", async () => {
    const root = tempRoot({ lsp: { ts: { command: "tsls" } }, agent: { shell_sandbox: "off" } });
    const session = await createToolbelt({
      root,
      families: ["files"],
      trustProject: true,
      userConfig: false,
    });
    expect(session.config.lsp.ts?.command).toBe("tsls");
    await session.close();
    const typo = tempRoot({ lps: {} });
    await expect(createToolbelt({ root: typo, families: ["files"], userConfig: false })).rejects.toThrow(
      /unknown key lps/,
    );
  });

  it("the mcp family reports an untrusted project's .mcp.json servers as ignored (disabled ones not)", () => {
    const root = tempRoot({});
    writeFileSync(
      path.join(root, ".mcp.json"),
      JSON.stringify({ mcpServers: { a: { command: "a" }, b: { command: "b", disabled: true } } }),
    );
    const userDir = tempRoot();
    const { trust } = loadTrustedConfig(root, { userDir, env: {}, contributions: C });
    expect(trust.ignored.map((i) => `${i.source}:${i.key}`)).toEqual([".mcp.json:mcpServers.a"]);
    writeFileSync(path.join(root, ".mcp.json"), "{ nope");
    expect(
      loadTrustedConfig(root, { userDir, env: {}, contributions: C }).trust.ignored.map((i) => i.key),
    ).toEqual([".mcp.json"]);
  });

  it("list every event the families emit", () => {
    expect(eventTypes(eventContributions())).toEqual(
      expect.arrayContaining([
        "todos",
        "generative_ui",
        "question",
        "question_answered",
        "shell_output",
        "search_progress",
        "lsp_server",
        "tool_call",
      ]),
    );
  });

  // tools.* keys of families a run does not load are still known: each family lists its names.
  it("list every family, tool and profile name of the built-in families", async () => {
    const names = new Set<string>(["tool_search"]);
    for (const family of await loadFamilies()) {
      names.add(family.name);
      for (const tool of family.tools ?? []) {
        names.add(tool.name);
        names.add(tool.family);
        for (const variant of Object.values(tool.profiles ?? {}))
          if (variant && variant.name !== undefined) names.add(variant.name);
      }
    }
    expect([...BUILTIN_TOOL_KEYS].sort()).toEqual([...names].sort());
  });
});
