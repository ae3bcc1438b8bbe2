// End to end through the built bin: a command never runs the user's shell rc files, whatever
// environment started toolbelt (CI runners, services and containers often leave SHLVL unset).
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, cli, jsonLines, tempRoot } from "../../toolbelt/test/cli-harness.js";

let home: string;
let root: string;
let config: string;

beforeAll(() => {
  assertBuilt();
  home = tempRoot("tb-rc-home-");
  root = tempRoot("tb-rc-root-");
  // bash sources ~/.bashrc when it believes sshd started it: stdin a socket, or SSH_CLIENT set.
  writeFileSync(path.join(home, ".bashrc"), "echo RC-SOURCED\n");
  writeFileSync(path.join(home, ".bash_profile"), "echo PROFILE-SOURCED\n");
  mkdirSync(path.join(home, "cfg"));
  config = path.join(home, "cfg", "sandbox-off.json");
  writeFileSync(config, JSON.stringify({ agent: { shell_sandbox: "off" } }));
});

afterAll(() => {
  rmSync(home, { recursive: true, force: true });
  rmSync(root, { recursive: true, force: true });
});

// No SHLVL (as a service or container starts us), SSH_CLIENT set (as an ssh session does).
const env = (): NodeJS.ProcessEnv => ({
  HOME: home,
  SHLVL: undefined,
  SSH_CLIENT: "203.0.113.7 50000 22",
  TOOLBELT_CONFIG_DIR: path.join(home, "cfg-empty"),
});

const calls = [
  { id: "fg", tool: "shell", input: { command: "echo fg" } },
  { id: "bg", tool: "shell", input: { command: "echo bg", run_in_background: true } },
  { id: "read", tool: "shell_session", input: { operation: "read", shell_id: "sh-1", wait_ms: 5000 } },
];

describe.each([
  ["sandboxed (the default)", [] as string[]],
  ["with the sandbox off", ["--config", "CONFIG"]],
])("a shell %s", (_name, extra) => {
  it("does not source ~/.bashrc in foreground or background commands", async () => {
    const args = [
      "exec",
      "--root",
      root,
      "--allow",
      "shell",
      ...extra.map((a) => (a === "CONFIG" ? config : a)),
    ];
    const out = await cli(args, { input: `${calls.map((c) => JSON.stringify(c)).join("\n")}\n`, env: env() });
    const answers = jsonLines(out.stdout);
    const result = (id: string) => answers.find((a) => a.id === id)?.result as Record<string, unknown>;
    expect(result("fg"), out.stdout + out.stderr).toMatchObject({ kind: "shell_result", exit_code: 0 });
    expect(result("fg").stdout).toBe("fg\n");
    expect(result("read"), out.stdout + out.stderr).toMatchObject({
      kind: "shell_session",
      status: "exited",
    });
    expect(result("read").output).toBe("bg\n");
  });
});
