import { describe, expect, it } from "vitest";
import { parseConfig } from "./config.js";
import { decide, type PolicySubject } from "./permissions.js";

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
