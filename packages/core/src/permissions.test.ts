import { describe, expect, it } from "vitest";
import { parseConfig } from "./config.js";
import { checkToolKeys, decide, listingDecision, type PolicySubject, toolEnabled } from "./permissions.js";

const shell: PolicySubject = { tool: "shell", family: "shell", access: "execute", paths: [] };
const write: PolicySubject = { tool: "write_file", family: "files", access: "write", paths: ["src/a.ts"] };
const none = new Set<string>();

describe("permission policy", () => {
  it("asks for execute access and allows reads and writes inside the root by default", () => {
    expect(decide(shell, parseConfig({}), none).mode).toBe("ask");
    expect(decide(write, parseConfig({}), none).mode).toBe("allow");
  });

  it("turns ask into allow with --allow for the tool or its family", () => {
    expect(decide(shell, parseConfig({}), new Set(["shell"])).mode).toBe("allow");
    expect(
      decide(
        { ...shell, tool: "aider_shell_tool", calledAs: "aider_shell_tool" },
        parseConfig({}),
        new Set(["shell"]),
      ).mode,
    ).toBe("allow");
  });

  it("never turns deny into allow", () => {
    const config = parseConfig({ tools: { shell: { mode: "deny" } } });
    const decision = decide(shell, config, new Set(["shell"]));
    expect(decision).toMatchObject({ mode: "deny", source: "tools.shell.mode" });
  });

  it("lets a per-tool mode override the family mode", () => {
    const config = parseConfig({ tools: { files: { mode: "ask" }, write_file: { mode: "allow" } } });
    expect(decide(write, config, none).mode).toBe("allow");
    expect(decide({ ...write, tool: "read_file", access: "read" }, config, none).mode).toBe("ask");
  });

  it("enforces path allowlists as regexes over root-relative paths", () => {
    const config = parseConfig({ tools: { files: { allowlist: ["^src/"] } } });
    expect(decide(write, config, none).mode).toBe("allow");
    const denied = decide({ ...write, paths: ["secrets/.env"] }, config, none);
    expect(denied).toMatchObject({ mode: "deny" });
    expect(denied.mode === "deny" && denied.reason).toContain("secrets/.env");
  });
});

describe("tools.file: one key for every file tool", () => {
  const edit: PolicySubject = { tool: "edit_file", family: "edit", access: "write", paths: ["top.txt"] };
  const config = parseConfig({ tools: { file: { allowlist: ["^src/"] } } });

  it("holds edit_file and the files family to tools.file.allowlist", () => {
    expect(decide(edit, config, none)).toMatchObject({ mode: "deny", source: "tools.file.allowlist" });
    expect(decide(write, config, none).mode).toBe("allow");
    expect(decide({ ...write, paths: ["docs/a.md"] }, config, none).mode).toBe("deny");
  });

  it("does not reach the shell", () => {
    const shellDeny = parseConfig({ tools: { file: { mode: "deny" } } });
    expect(decide(shell, shellDeny, none).mode).toBe("ask");
    expect(decide(edit, shellDeny, none)).toMatchObject({ mode: "deny", source: "tools.file.mode" });
  });

  it("a more specific mode outranks it, and enabled: false on it unbinds edit_file", () => {
    const c = parseConfig({ tools: { file: { mode: "deny" }, edit_file: { mode: "allow" } } });
    expect(decide(edit, c, none).mode).toBe("allow");
    const off = parseConfig({ tools: { file: { enabled: false } } });
    expect(toolEnabled({ tool: "edit_file", family: "edit" }, off)).toBe(false);
    expect(toolEnabled({ tool: "shell", family: "shell" }, off)).toBe(true);
  });
});

describe("listingDecision: a directory under an allowlist", () => {
  const lister = { tool: "list_files", family: "files" };
  const at = (allowlist: string[], rel: string, directory = true) =>
    listingDecision(lister, parseConfig({ tools: { file: { allowlist } } }), { rel, directory });

  it("admits a directory some allowed file could lie beneath, with a filter for the results", () => {
    const d = at(["^src/.*\\.ts$"], ".");
    expect(d.denied).toBeUndefined();
    expect(d.filter?.(["src/a.ts", "top.txt", "src/b.md"])).toEqual([true, false, false]);
    expect(at(["^src/.*\\.ts$"], "src").denied).toBeUndefined();
    expect(at(["^src/.*\\.ts$"], "src/deep").denied).toBeUndefined();
    expect(at(["^packages/core/"], "packages").denied).toBeUndefined();
    expect(at(["\\.ts$"], "docs").denied).toBeUndefined();
  });

  it("refuses a directory no allowed file can lie beneath", () => {
    expect(at(["^src/.*\\.ts$"], "docs").denied).toContain("tools.file.allowlist");
    expect(at(["^src\\/"], "srcx").denied).toBeDefined();
  });

  it("judges a file argument as itself", () => {
    expect(at(["^src/"], "top.txt", false).denied).toContain("top.txt is not in tools.file.allowlist");
    expect(at(["^src/"], "src/a.ts", false).denied).toBeUndefined();
  });

  it("has no filter when no allowlist applies", () => {
    expect(listingDecision(lister, parseConfig({}), { rel: ".", directory: true })).toEqual({});
  });
});

describe("checkToolKeys", () => {
  const tools = [{ name: "echo", family: "demo", profiles: { mouaif: { name: "echo_tool" } } }];

  it("admits built-in, granted, profile, plugin, file and mcp__ keys", () => {
    const c = parseConfig({
      tools: { file: {}, shell: {}, echo: {}, echo_tool: {}, demo: {}, "my-plugin": {}, mcp__srv__x: {} },
    });
    // `shell` is known only as a contributed name (createToolbelt passes every built-in family's).
    expect(() => checkToolKeys(c, tools, ["my-plugin"], ["shell"])).not.toThrow();
    expect(() => checkToolKeys(c, tools, ["my-plugin"])).toThrow(/unknown key tools\.shell\b/);
  });

  it("refuses an unknown key with EINVAL_CONFIG listing the known keys", () => {
    const c = parseConfig({ tools: { flies: { mode: "deny" } } });
    expect(() => checkToolKeys(c, tools)).toThrow(/unknown key tools\.flies .*known here: .*\bfile, /);
    expect(() => checkToolKeys(c, tools)).toThrow(expect.objectContaining({ code: "EINVAL_CONFIG" }));
  });
});
