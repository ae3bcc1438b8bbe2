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
  "*_PWD",
  "*PASSPHRASE*",
  "*CREDENTIAL*",
  "*_AUTH",
  "*_AUTH_*",
  "*_PAT",
  "*COOKIE*",
  "*PRIVATE*",
  "*JWT*",
  "*_SK",
  "*WEBHOOK*",
  "*CONNECTION_STRING*",
  "*CONN_STR*",
  "NETRC",
  // `git -c` settings passed down (an http.extraheader with a token, typically).
  "GIT_CONFIG_PARAMETERS",
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
 * Proxy variables: a command needs the proxy to reach the network, so they stay, without the
 * `user:password@` part.
 */
export const COMMAND_ENV_PROXIES: readonly string[] = [
  "HTTP_PROXY",
  "HTTPS_PROXY",
  "FTP_PROXY",
  "ALL_PROXY",
  "RSYNC_PROXY",
  "npm_config_proxy",
  "npm_config_https_proxy",
];

/** `scheme://user:password@`, anywhere in a value (`redis://:pw@h`, `-Dproxy=http://u:pw@h`). */
const URL_CREDENTIALS = /[a-z][a-z0-9+.-]*:\/\/[^/\s@:]*:[^/\s@]*@/gi;
/** An ADO/ODBC connection string's password (`Server=db;User Id=sa;Password=…;`). */
const CONNECTION_PASSWORD = /(?:^|;)\s*(?:password|pwd)\s*=/i;

/** Whether a value carries a credential whatever its name: a URL with a password, a connection string's. */
export function valueHasCredentials(value: string): boolean {
  URL_CREDENTIALS.lastIndex = 0;
  return URL_CREDENTIALS.test(value) || CONNECTION_PASSWORD.test(value);
}

/** A proxy URL without its credentials (`http://u:pw@proxy:3128` → `http://proxy:3128`). */
function withoutCredentials(value: string): string {
  return value.replace(URL_CREDENTIALS, (m) => m.slice(0, m.indexOf("://") + 3));
}

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

/**
 * What happens to a variable: removed (`never`, `denied`), passed on (`allowed`, `kept`), or passed on
 * without the credentials in its value (`stripped`: a proxy). With `value`, a credential in it (a URL
 * with a password, a connection string's password) removes a variable whatever its name.
 */
export function commandEnvVerdict(
  name: string,
  policy: CommandEnvPolicy = {},
  value?: string,
): "never" | "denied" | "allowed" | "kept" | "stripped" {
  if (envNameMatches(name, COMMAND_ENV_NEVER)) return "never";
  // An explicit allow beats every deny, the defaults and the user's own.
  if (policy.allow && envNameMatches(name, policy.allow)) return "allowed";
  if (policy.deny && envNameMatches(name, policy.deny)) return "denied";
  if (envNameMatches(name, COMMAND_ENV_KEEP)) return "kept";
  if (envNameMatches(name, COMMAND_ENV_DENY)) return "denied";
  if (value !== undefined && valueHasCredentials(value))
    return envNameMatches(name, COMMAND_ENV_PROXIES) ? "stripped" : "denied";
  return "kept";
}

/**
 * The environment for a started command: `base` without the variables the policy removes (see
 * `COMMAND_ENV_DENY`, and any value carrying a credential), proxies without their credentials, and
 * never the HTTP server's token. git's settings from the environment (`GIT_CONFIG_COUNT` pairs) keep
 * only pairs that carry no credential, and git is pinned to explicit bare repositories (see
 * `pinGitDiscovery`). Undefined values are dropped.
 */
export function scrubCommandEnv(
  base: Readonly<Record<string, string | undefined>>,
  policy: CommandEnvPolicy = {},
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of Object.keys(base)) {
    const value = base[name];
    if (value === undefined || GIT_CONFIG_PAIR.test(name)) continue;
    const verdict = commandEnvVerdict(name, policy, value);
    if (verdict === "kept" || verdict === "allowed") env[name] = value;
    else if (verdict === "stripped") env[name] = withoutCredentials(value);
  }
  return pinGitDiscovery(env, gitConfigPairs(base, policy));
}

/** `GIT_CONFIG_COUNT`, `GIT_CONFIG_KEY_<n>`, `GIT_CONFIG_VALUE_<n>`: git settings as numbered pairs. */
const GIT_CONFIG_PAIR = /^GIT_CONFIG_(COUNT|KEY_\d+|VALUE_\d+)$/;
/** git settings that carry credentials (`http.<url>.extraHeader: Authorization: …`). */
const GIT_SECRET_KEY = /extraheader|^credential\.|password|token|secret/i;

/** The host's `GIT_CONFIG_COUNT` pairs a command may keep: none that carries a credential. */
function gitConfigPairs(
  base: Readonly<Record<string, string | undefined>>,
  policy: CommandEnvPolicy,
): Array<[string, string]> {
  const count = Number.parseInt(base.GIT_CONFIG_COUNT ?? "", 10);
  if (!(count > 0) || commandEnvVerdict("GIT_CONFIG_COUNT", policy) === "denied") return [];
  const pairs: Array<[string, string]> = [];
  for (let i = 0; i < Math.min(count, 1000); i++) {
    const key = base[`GIT_CONFIG_KEY_${i}`];
    const value = base[`GIT_CONFIG_VALUE_${i}`];
    if (key === undefined || value === undefined) continue;
    if (GIT_SECRET_KEY.test(key) || valueHasCredentials(key) || valueHasCredentials(value)) continue;
    pairs.push([key, value]);
  }
  return pairs;
}

/**
 * git, run by a command, finds its repository by looking for one in the working directory and each
 * directory above it, bare repositories included: a `HEAD`, `config`, `objects/` and `refs/` that a
 * tool wrote into the root would make `git diff` there read that `config` and run its
 * `core.fsmonitor`. `safe.bareRepository=explicit` (git 2.38+, as a `GIT_CONFIG_COUNT` pair, so the
 * user's git config is not touched) makes git use a bare repository only when named (`--git-dir`,
 * `GIT_DIR`); a worktree's `.git` and submodules work as before. A pair the user set for it stays.
 */
export function pinGitDiscovery(
  env: Record<string, string>,
  pairs: ReadonlyArray<[string, string]> = [],
): Record<string, string> {
  const all = [...pairs];
  if (!all.some(([key]) => key.toLowerCase() === "safe.barerepository"))
    all.push(["safe.bareRepository", "explicit"]);
  all.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key;
    env[`GIT_CONFIG_VALUE_${i}`] = value;
  });
  env.GIT_CONFIG_COUNT = String(all.length);
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
      const verdict = commandEnvVerdict(name, policy, base[name]);
      return verdict === "never" || verdict === "denied";
    })
    .sort();
}
