/**
 * Every `TOOLBELT_*` environment variable, in one registry: what it does, the values it takes, who
 * reads it. Product code reads them only through `readEnv`, which parses the value and refuses one it
 * cannot use with `EINVAL_CONFIG` naming the variable (a misspelt value never silently does nothing).
 * The table in docs/configuration.md is rendered from here (`npm run docs:env`), and
 * env-vars.test.ts fails when the two differ or when code names a variable that is not here.
 *
 * Test harness switches (TOOLBELT_TEST_STALE_OK, TOOLBELT_CHROMIUM, TOOLBELT_CONSOLE_SCREENSHOTS) are
 * not product settings: they are read by tests only and described in CONTRIBUTING.md.
 *
 * No zod and nothing of core but errors.ts: config-paths.ts, a zod-free entry, reads through it.
 */
import os from "node:os";
import path from "node:path";
import { ToolbeltError } from "./errors.js";

export interface EnvVar<T> {
  name: string;
  /** What it does, one or two sentences for the docs table. */
  description: string;
  /** The values it takes, as the docs show them. */
  values: string;
  /** Who reads it (packages, or `toolbelt CLI`); empty for a name only kept away from commands. */
  readBy: readonly string[];
  /** Never passed to a command the shell or a hook runs, whatever `agent.shell_env.allow` says. */
  secret?: boolean;
  /** Set by toolbelt for processes it starts, rather than by a user. */
  setByToolbelt?: boolean;
  /** A non-empty value, parsed; throws an Error saying what was expected. */
  parse: (raw: string) => T;
}

function define<T>(spec: EnvVar<T>): EnvVar<T> {
  return spec;
}

const asText = (raw: string) => raw;

/** One of the keys of `map` (case and surrounding spaces ignored), read as its value. */
function oneOf<V>(map: Record<string, V>) {
  return (raw: string): V => {
    const key = raw.trim().toLowerCase();
    if (!Object.hasOwn(map, key)) throw new Error(`expected ${Object.keys(map).join(", ")}`);
    return map[key] as V;
  };
}

function positiveInteger(raw: string): number {
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value <= 0) throw new Error("expected a positive whole number");
  return value;
}

function wholeNumber(raw: string): number {
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 0) throw new Error("expected a whole number (0 or more)");
  return value;
}

export const ENV = {
  TOOLBELT_CONFIG_DIR: define({
    name: "TOOLBELT_CONFIG_DIR",
    description:
      "The user config folder (config.json, the trusted-project list), instead of `$XDG_CONFIG_HOME/toolbelt` or `~/.config/toolbelt`.",
    values: "a directory",
    readBy: ["core"],
    parse: asText,
  }),
  TOOLBELT_TRUST: define({
    name: "TOOLBELT_TRUST",
    description:
      "Trusts the project at the root, as `--trust` does: for a CI job that owns its checkout. `0` or `false` is the default (trust as marked with `toolbelt trust`).",
    values: "`1`, `true`, `0`, `false`",
    readBy: ["core"],
    parse: oneOf({ "1": true, true: true, "0": false, false: false }),
  }),
  TOOLBELT_HOME: define({
    name: "TOOLBELT_HOME",
    description: "toolbelt's own folder (state, user skills), instead of `~/.toolbelt`.",
    values: "a directory",
    readBy: ["core", "projects"],
    parse: asText,
  }),
  TOOLBELT_STATE_DIR: define({
    name: "TOOLBELT_STATE_DIR",
    description:
      "Where write journals, checkpoints and pending questions are kept, instead of `$TOOLBELT_HOME/state`.",
    values: "a directory",
    readBy: ["core"],
    parse: asText,
  }),
  TOOLBELT_SEARCH_ENGINE: define({
    name: "TOOLBELT_SEARCH_ENGINE",
    description: "Forces the search engine of search_files and list_files, over `tools.search.engine`.",
    values: "`ripgrep` (or `rg`), `js`",
    readBy: ["files", "toolbelt CLI"],
    parse: oneOf({ ripgrep: "ripgrep", rg: "ripgrep", js: "js" } as const),
  }),
  TOOLBELT_EXEC_MAX_LINE_BYTES: define({
    name: "TOOLBELT_EXEC_MAX_LINE_BYTES",
    description:
      "The longest line `toolbelt exec` reads from stdin (default: the larger of 64 MiB and 8× `limits.fileWriteMaxBytes`); a longer line is answered with an error and skipped.",
    values: "bytes",
    readBy: ["toolbelt CLI"],
    parse: positiveInteger,
  }),
  TOOLBELT_MCP_MAX_MESSAGE_BYTES: define({
    name: "TOOLBELT_MCP_MAX_MESSAGE_BYTES",
    description: "The largest JSON-RPC message `toolbelt serve --mcp` reads (a stdio line, an HTTP body).",
    values: "bytes",
    readBy: ["toolbelt CLI"],
    parse: positiveInteger,
  }),
  TOOLBELT_MCP_START_TIMEOUT_MS: define({
    name: "TOOLBELT_MCP_START_TIMEOUT_MS",
    description: "How long a project's MCP server may take to start and list its tools (default 20000).",
    values: "milliseconds",
    readBy: ["mcp"],
    parse: positiveInteger,
  }),
  TOOLBELT_MCP_CALL_TIMEOUT_MS: define({
    name: "TOOLBELT_MCP_CALL_TIMEOUT_MS",
    description:
      "How long one call to an MCP server's tool may take (default 120000); progress notifications extend it.",
    values: "milliseconds",
    readBy: ["mcp"],
    parse: positiveInteger,
  }),
  TOOLBELT_MCP_DEPTH: define({
    name: "TOOLBELT_MCP_DEPTH",
    description:
      "How many toolbelt MCP clients started this process: set for every stdio MCP server toolbelt starts, so a project that names toolbelt as its own server cannot recurse without end.",
    values: "a whole number",
    readBy: ["mcp"],
    setByToolbelt: true,
    parse: wholeNumber,
  }),
  TOOLBELT_LSP_FALLBACK: define({
    name: "TOOLBELT_LSP_FALLBACK",
    description:
      "The ts-morph fallback for TS/JS: `1` forces it, `0` disables it (default: only without a server binary).",
    values: "`1` (or `force`), `0` (or `off`)",
    readBy: ["lsp"],
    parse: oneOf({ "1": "force", force: "force", "0": "off", off: "off" } as const),
  }),
  TOOLBELT_LSP_TS_SERVER: define({
    name: "TOOLBELT_LSP_TS_SERVER",
    description: "The built-in TypeScript server: `tsgo` picks TypeScript 7's `tsgo --lsp`.",
    values: "`typescript-language-server`, `tsgo`",
    readBy: ["lsp"],
    parse: oneOf({ "typescript-language-server": "typescript-language-server", tsgo: "tsgo" } as const),
  }),
  TOOLBELT_SANDBOX_HELPER: define({
    name: "TOOLBELT_SANDBOX_HELPER",
    description:
      "Another sandbox helper binary instead of the one `@toolbelt/shell` builds; a missing one means no sandbox.",
    values: "a path",
    readBy: ["shell"],
    parse: asText,
  }),
  TOOLBELT_SANDBOX_NETWORK_VIA: define({
    name: "TOOLBELT_SANDBOX_NETWORK_VIA",
    description:
      "Restricts the sandbox helper to one mechanism for `agent.shell_network: off` (diagnosis): a network namespace or Landlock.",
    values: "`netns`, `landlock`",
    readBy: ["shell"],
    parse: oneOf({ netns: "netns", landlock: "landlock" } as const),
  }),
  TOOLBELT_SHELL_CGROUPS: define({
    name: "TOOLBELT_SHELL_CGROUPS",
    description:
      "`0` keeps commands out of cgroups (their process count is then not bounded by one); default: used where the process may create them.",
    values: "`1`, `0`",
    readBy: ["shell"],
    parse: oneOf({ "1": true, "0": false }),
  }),
  TOOLBELT_SHELL_MARK: define({
    name: "TOOLBELT_SHELL_MARK",
    description:
      "The tag every command the shell family starts carries, by which toolbelt finds what the command left running. Set by toolbelt; not a setting.",
    values: "set by toolbelt",
    readBy: ["shell"],
    setByToolbelt: true,
    parse: asText,
  }),
  TOOLBELT_TOKEN: define({
    name: "TOOLBELT_TOKEN",
    description:
      "The bearer token of `toolbelt serve --http` and `serve --mcp --transport http` (default: a random one printed at start).",
    values: "a token",
    readBy: ["toolbelt CLI"],
    secret: true,
    parse: asText,
  }),
  TOOLBELT_HTTP_TOKEN: define({
    name: "TOOLBELT_HTTP_TOKEN",
    description:
      "Not read by toolbelt: a name deployments keep the HTTP token under, so it is never passed to a command either.",
    values: "a token",
    readBy: [],
    secret: true,
    parse: asText,
  }),
} as const satisfies Record<string, EnvVar<unknown>>;

export type EnvName = keyof typeof ENV;

/**
 * The parsed value of `variable` in `env`, or undefined when it is unset or empty. A value the
 * variable cannot take is `EINVAL_CONFIG`, naming the variable and what it takes.
 */
export function readEnv<T>(variable: EnvVar<T>, env: NodeJS.ProcessEnv = process.env): T | undefined {
  const raw = env[variable.name];
  if (raw === undefined || raw === "") return undefined;
  try {
    return variable.parse(raw);
  } catch (error) {
    throw new ToolbeltError(
      "EINVAL_CONFIG",
      `${variable.name}=${JSON.stringify(raw)}: ${(error as Error).message} (or unset it)`,
      { details: { variable: variable.name } },
    );
  }
}

/** toolbelt's own folder: `$TOOLBELT_HOME`, else `~/.toolbelt`. */
export function toolbeltHome(env: NodeJS.ProcessEnv = process.env): string {
  return readEnv(ENV.TOOLBELT_HOME, env) ?? path.join(os.homedir(), ".toolbelt");
}

/** The names no command may inherit (see command-env.ts). */
export const SECRET_ENV_NAMES: readonly string[] = Object.values(ENV)
  .filter((v: EnvVar<unknown>) => v.secret === true)
  .map((v) => v.name);

/**
 * The docs table (docs/configuration.md, between its env-table markers), rendered from the registry
 * with its columns padded as the repository's formatter lays out a Markdown table.
 */
export function renderEnvTable(): string {
  const cell = (text: string) => text.replace(/\|/g, "\\|").replace(/\n/g, " ");
  const rows = [
    ["variable", "values", "what it does", "read by"],
    ...Object.values(ENV).map((v: EnvVar<unknown>) => {
      const by = v.readBy.length > 0 ? v.readBy.join(", ") : "(nobody)";
      const note = v.setByToolbelt ? " (set by toolbelt)" : v.secret ? " (never passed to commands)" : "";
      return [`\`${v.name}\``, cell(v.values), cell(v.description), `${by}${note}`];
    }),
  ];
  const width = (i: number) => Math.max(...rows.map((r) => [...(r[i] ?? "")].length));
  const widths = [0, 1, 2, 3].map(width);
  const line = (cells: string[]) =>
    `| ${cells.map((c, i) => c + " ".repeat((widths[i] ?? 0) - [...c].length)).join(" | ")} |`;
  const [head = [], ...body] = rows;
  return [line(head), line(widths.map((w) => "-".repeat(w))), ...body.map(line)].join("\n");
}
