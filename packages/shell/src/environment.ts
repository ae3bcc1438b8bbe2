import { type CommandEnvPolicy, ENV, scrubCommandEnv } from "@toolbelt/core/internal";

/** The name of the variable that tags every process a command starts (see process-group.ts). */
export const MARK_VARIABLE = ENV.TOOLBELT_SHELL_MARK.name;
/**
 * A command run by a toolbelt that itself runs under a toolbelt shell keeps the outer marks too,
 * so the outer one still finds it: the value is a list of marks.
 */
export const MARK_SEPARATOR = ":";

export interface EnvironmentOptions {
  /** The per-session temporary directory (TMPDIR). */
  tmpdir: string;
  /** The tag inherited by the command and everything it starts. */
  mark: string;
  tty: boolean;
  /** `agent.shell_env`: what to let through or remove on top of the default scrub. */
  policy?: CommandEnvPolicy | undefined;
}

/**
 * The environment of a command: the caller's without credentials (core's scrubCommandEnv), made
 * non-interactive so that pagers, editors and credential prompts return at once instead of waiting
 * for a human who is not there.
 */
export function commandEnvironment(
  base: Readonly<Record<string, string | undefined>>,
  options: EnvironmentOptions,
): Record<string, string> {
  const env = scrubCommandEnv(base, options.policy ?? {});
  Object.assign(env, {
    PAGER: "cat",
    GIT_PAGER: "cat",
    GH_PAGER: "cat",
    MANPAGER: "cat",
    SYSTEMD_PAGER: "cat",
    // `git commit` without -m gets an empty message and aborts instead of opening an editor.
    GIT_EDITOR: "true",
    GIT_SEQUENCE_EDITOR: "true",
    EDITOR: "true",
    VISUAL: "true",
    GIT_TERMINAL_PROMPT: "0",
    // Empty askpass programs make git skip asking altogether (and not fall back to SSH_ASKPASS).
    GIT_ASKPASS: "",
    SSH_ASKPASS: "",
    GCM_INTERACTIVE: "Never",
    DEBIAN_FRONTEND: "noninteractive",
    PIP_NO_INPUT: "1",
    TMPDIR: options.tmpdir,
    TMP: options.tmpdir,
    TEMP: options.tmpdir,
    [MARK_VARIABLE]: env[MARK_VARIABLE]
      ? `${env[MARK_VARIABLE]}${MARK_SEPARATOR}${options.mark}`
      : options.mark,
  });
  if (options.tty) {
    env.TERM = "xterm-256color";
  } else {
    env.TERM = "dumb";
    env.NO_COLOR = "1";
    delete env.FORCE_COLOR;
    delete env.CLICOLOR_FORCE;
  }
  return env;
}

/**
 * A plain copy of the host environment. Reading `process.env` goes through a native interceptor
 * per variable, so a session copies it once and builds each command's environment from the copy.
 */
export function snapshotEnvironment(): Record<string, string> {
  const copy: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) if (value !== undefined) copy[key] = value;
  return copy;
}

/**
 * What points a command at the allow list's proxy (agent.shell_network: { allow }): the variables
 * curl, wget, git, npm, pip and most HTTP clients read, in both spellings. The command's own loopback
 * stays direct (a server it starts itself).
 */
export function proxyEnvironment(port: number): Record<string, string> {
  const url = `http://127.0.0.1:${port}`;
  const direct = "localhost,127.0.0.1,::1";
  return {
    HTTP_PROXY: url,
    HTTPS_PROXY: url,
    ALL_PROXY: url,
    http_proxy: url,
    https_proxy: url,
    all_proxy: url,
    NO_PROXY: direct,
    no_proxy: direct,
  };
}
