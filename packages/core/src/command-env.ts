/**
 * The environment a started command (shell command, language server, MCP server) inherits: the
 * host's, minus what would hand it credentials. A command an agent runs is as trustworthy as the text
 * that made the model write it, so toolbelt's own token (which approves calls over the HTTP API),
 * cloud keys and API tokens stay with toolbelt unless the user lets a name through.
 */
import { ENV, SECRET_ENV_NAMES } from "./env-vars.js";

/** Names a command needs for ordinary work; kept even where a deny pattern would match them. */
export const COMMAND_ENV_KEEP: readonly string[] = [
  "PATH",
  "HOME",
  "USER",
  "LOGNAME",
  "SHELL",
  "LANG",
  "LANGUAGE",
  "LC_*",
  "TZ",
  "TERM",
  "PWD",
  "TMPDIR",
  // ssh-agent holds the keys itself and answers signing requests; the socket path reveals no key.
  "SSH_AUTH_SOCK",
  // The shell family's process tag: every command must carry it (see the shell package).
  ENV.TOOLBELT_SHELL_MARK.name,
];

/**
 * Removed by default (names or `*` globs, matched case-insensitively). Broad on purpose: a build
 * that needs one of these gets it through `agent.shell_env.allow`.
 */
export const COMMAND_ENV_DENY: readonly string[] = [
  // toolbelt's own settings and secrets (the HTTP token, trust switches, helper overrides).
  "TOOLBELT_*",
  // Generic secret shapes.
  "*TOKEN",
  "*TOKEN_*",
  "*SECRET*",
  "*_KEY",
  "*_KEY_*",
  "*_KEYS",
  "*APIKEY*",
  "*API_KEY*",
  "*PASSWORD*",
  "*PASSWD*",
  "*_PASS",
  "*CREDENTIAL*",
  "*_AUTH",
  "*_AUTH_*",
  "*_PAT",
  "*COOKIE*",
  "*PRIVATE*",
  // Cloud and registry credentials whose names do not follow the shapes above.
  "AWS_*",
  "AZURE_*",
  "ARM_CLIENT_*",
  "GOOGLE_APPLICATION_CREDENTIALS",
  "GOOGLE_CLOUD_*",
  "GCLOUD_*",
  "CLOUDSDK_*",
  "DIGITALOCEAN_*",
  "HEROKU_*",
  "VAULT_*",
  "KUBECONFIG",
  "DOCKER_AUTH_CONFIG",
  "NPM_CONFIG__AUTH*",
  "npm_config__auth*",
  "NODE_AUTH_TOKEN",
  "CI_JOB_JWT*",
  "ACTIONS_ID_TOKEN_*",
  "ACTIONS_RUNTIME_*",
  "OPENAI_*",
  "ANTHROPIC_*",
  "DATABASE_URL",
  "*_DATABASE_URL",
  "*_DSN",
  "SENTRY_DSN",
];

/**
 * Never passed on, whatever `allow` says: with it a command could approve its own calls over the
 * HTTP API.
 */
export const COMMAND_ENV_NEVER: readonly string[] = SECRET_ENV_NAMES;

/** `agent.shell_env`: names or `*` globs to let through (`allow`) or to remove too (`deny`). */
export interface CommandEnvPolicy {
  allow?: readonly string[];
  deny?: readonly string[];
}

const globCache = new Map<string, RegExp>();

function globRegex(pattern: string): RegExp {
  let re = globCache.get(pattern);
  if (!re) {
    const body = pattern
      .split("*")
      .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
      .join(".*");
    re = new RegExp(`^${body}$`, "i");
    globCache.set(pattern, re);
  }
  return re;
}

/** Whether `name` matches one of the names or `*` globs (case-insensitively). */
export function envNameMatches(name: string, patterns: readonly string[]): boolean {
  for (const pattern of patterns) {
    if (pattern.includes("*") ? globRegex(pattern).test(name) : pattern.toLowerCase() === name.toLowerCase())
      return true;
  }
  return false;
}

/** What happens to a variable: removed (`never`, `denied`) or passed on (`allowed`, `kept`). */
export function commandEnvVerdict(
  name: string,
  policy: CommandEnvPolicy = {},
): "never" | "denied" | "allowed" | "kept" {
  if (envNameMatches(name, COMMAND_ENV_NEVER)) return "never";
  // An explicit allow beats every deny, the defaults and the user's own.
  if (policy.allow && envNameMatches(name, policy.allow)) return "allowed";
  if (policy.deny && envNameMatches(name, policy.deny)) return "denied";
  if (envNameMatches(name, COMMAND_ENV_KEEP)) return "kept";
  if (envNameMatches(name, COMMAND_ENV_DENY)) return "denied";
  return "kept";
}

/**
 * The environment for a started command: `base` without the variables the policy removes (see
 * `COMMAND_ENV_DENY`), and never the HTTP server's token. Undefined values are dropped.
 */
export function scrubCommandEnv(
  base: Readonly<Record<string, string | undefined>>,
  policy: CommandEnvPolicy = {},
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of Object.keys(base)) {
    const value = base[name];
    if (value === undefined) continue;
    const verdict = commandEnvVerdict(name, policy);
    if (verdict === "kept" || verdict === "allowed") env[name] = value;
  }
  return env;
}

/** The names `scrubCommandEnv` would remove from `base` (for doctor and docs; values never shown). */
export function scrubbedNames(
  base: Readonly<Record<string, string | undefined>>,
  policy: CommandEnvPolicy = {},
): string[] {
  return Object.keys(base)
    .filter((name) => {
      if (base[name] === undefined) return false;
      const verdict = commandEnvVerdict(name, policy);
      return verdict === "never" || verdict === "denied";
    })
    .sort();
}
