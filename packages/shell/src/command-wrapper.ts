import { realpathSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { CommandSpec, CommandWrapper, Session } from "@toolbelt/core";
import { MARK_VARIABLE } from "./environment.js";
import { planSandbox } from "./sandbox.js";
import { planSearch } from "./search-sandbox.js";
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
    if (purpose === "search") return searchCommand(session, spec);
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

/**
 * A search process (ripgrep, for the files family) under Landlock: reads beneath the root only (plus
 * the ignore files above it that the caller lists, and its own binary), no writes, so a name swapped
 * for a symlink to outside resolves to a file the kernel refuses. Marked `confined` only then; else
 * the reason is passed on and the caller verifies what it shows instead.
 */
function searchCommand(session: Session, spec: CommandSpec): CommandSpec {
  const plan = planSearch(session.config, spec);
  if (!plan.confined) return { ...spec, unconfinedReason: plan.reason };
  const [helper, ...rules] = plan.prefix;
  return { ...spec, file: helper as string, args: [...rules, spec.file, ...spec.args], confined: true };
}
