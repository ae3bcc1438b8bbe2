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
export function sandboxWrapper(session: Session): CommandWrapper {
  return (spec: CommandSpec, purpose): CommandSpec => {
    if (purpose !== "language-server") return spec;
    const state = ShellState.of(session);
    const mark = state.nextMark();
    const tmpdir = state.tmpdir();
    const plan = planSandbox(session.config, { root: session.root, tmpdir, mark });
    const env = { ...spec.env, [MARK_VARIABLE]: mark, TMPDIR: tmpdir };
    const [helper, ...rules] = plan.prefix;
    if (!helper) return { ...spec, env };
    return { file: helper, args: [...rules, spec.file, ...spec.args], cwd: spec.cwd, env };
  };
}
