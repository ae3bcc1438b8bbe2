import { realpathSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { CommandSpec, CommandWrapper, Session } from "@toolbelt/core";
import { MARK_VARIABLE } from "./environment.js";
import { planSandbox } from "./sandbox.js";
import { ShellState } from "./shell-state.js";

/**
 * Runs the language servers other families start through the shell's sandbox helper, with the
 * shell's policy: writes confined to the root and the session TMPDIR, protected paths read-only, the
 * process cap, and a watcher that ends the server when toolbelt dies. The environment is the
 * caller's (the lsp family scrubs it with core's scrubCommandEnv); only the mark and TMPDIR are set.
 * MCP servers are the user's own configuration and run as configured.
 */
/**
 * With reads confined, a configured server must still read itself: the folders of its executable and
 * of the script files its arguments name (never `/` or the home folder as a whole).
 */
function serverHome(spec: CommandSpec): string[] {
  const out = new Set<string>();
  for (const arg of [spec.file, ...spec.args]) {
    if (!path.isAbsolute(arg)) continue;
    try {
      const real = realpathSync(arg);
      if (!statSync(real).isFile()) continue;
      const dir = path.dirname(real);
      if (dir !== path.parse(dir).root && dir !== os.homedir()) out.add(dir);
    } catch {
      // Not a file: an option or a path that does not exist grants nothing.
    }
  }
  return [...out];
}

export function sandboxWrapper(session: Session): CommandWrapper {
  return (spec: CommandSpec, purpose): CommandSpec => {
    if (purpose !== "language-server") return spec;
    const state = ShellState.of(session);
    const mark = state.nextMark();
    const tmpdir = state.tmpdir();
    const plan = planSandbox(session.config, { root: session.root, tmpdir, mark, reads: serverHome(spec) });
    const env = { ...spec.env, [MARK_VARIABLE]: mark, TMPDIR: tmpdir };
    const [helper, ...rules] = plan.prefix;
    if (!helper) return { ...spec, env };
    return { file: helper, args: [...rules, spec.file, ...spec.args], cwd: spec.cwd, env };
  };
}
