import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { type CommandSpec, type LaunchPurpose, parseConfig } from "@toolbelt/core";
import { UNTRUSTED } from "@toolbelt/core/internal";
import { afterEach, describe, expect, it } from "vitest";
import { hostForRoot, type LaunchHost, serverCommand } from "./launch.js";
import type { ServerSpec } from "./servers.js";

const saved = { ...process.env };
const dirs: string[] = [];
afterEach(() => {
  process.env = { ...saved };
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function temp(): string {
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), "tb-lsp-launch-")));
  dirs.push(dir);
  return dir;
}

const spec: ServerSpec = {
  name: "node",
  command: process.execPath,
  args: ["server.js"],
  extensions: [".txt"],
  env: { FROM_CONFIG: "1" },
  builtin: false,
  diagnostics: "standard",
  origin: "config",
};

describe("starting a server", () => {
  it("goes through the host's wrappers as a language server, with the scrubbed environment plus the entry's env", () => {
    const root = temp();
    process.env.GITHUB_TOKEN = "secret";
    process.env.PLAIN_SETTING = "kept";
    const seen: Array<{ spec: CommandSpec; purpose: LaunchPurpose }> = [];
    const host: LaunchHost = {
      trust: UNTRUSTED,
      config: parseConfig({ agent: { shell_env: { allow: ["GITHUB_TOKEN"] } } }),
      wrapCommand: (s, purpose) => {
        seen.push({ spec: s, purpose });
        return { ...s, file: "/wrapped", args: [s.file, ...s.args] };
      },
    };
    const plain = serverCommand(spec, root, { ...host, config: parseConfig({}) });
    expect(plain.file).toBe("/wrapped");
    expect(seen[0]?.purpose).toBe("language-server");
    expect(seen[0]?.spec).toMatchObject({ file: process.execPath, args: ["server.js"], cwd: root });
    expect(plain.env.GITHUB_TOKEN).toBeUndefined();
    expect(plain.env).toMatchObject({ PLAIN_SETTING: "kept", FROM_CONFIG: "1" });
    // agent.shell_env.allow lets a name through, as it does for shell commands.
    expect(serverCommand(spec, root, host).env.GITHUB_TOKEN).toBe("secret");
  });

  it("keeps the session's trust for the root it was given for, not for a project switched into", () => {
    const home = temp();
    const other = temp();
    process.env.TOOLBELT_CONFIG_DIR = temp();
    delete process.env.TOOLBELT_TRUST;
    const host: LaunchHost = {
      trust: { trusted: true, reason: "--trust", ignored: [] },
      root: home,
      wrapCommand: (s) => s,
    };
    expect(hostForRoot(host, home, home).trust.trusted).toBe(true);
    expect(hostForRoot(host, home, other).trust.trusted).toBe(false);
    process.env.TOOLBELT_TRUST = "1";
    expect(hostForRoot(host, home, other).trust.trusted).toBe(true);
    expect(hostForRoot({ ...host, trust: UNTRUSTED }, home, other).trust.trusted).toBe(false);
  });
});
