import type { ArgumentsCamelCase, Argv } from "yargs";

/** The parsed arguments a command's builder declares, as its handler receives them. */
export type ArgsOf<Builder extends (y: Argv) => Argv<unknown>> =
  ReturnType<Builder> extends Argv<infer T> ? ArgumentsCamelCase<T> : never;

export const trustOption = {
  type: "boolean",
  describe:
    "trust the project: its configs/app.json and .mcp.json may run code and loosen policy (--no-trust refuses)",
  defaultDescription: "when marked with `toolbelt trust` or TOOLBELT_TRUST=1",
} as const;

export const failOnCommandOption = {
  type: "boolean",
  default: true,
  describe:
    "a shell command that exits non-zero, is killed by a signal or times out makes the CLI exit 1 (the payload is printed all the same)",
} as const;

/** The options every session-opening command (run, exec, tools, serve) takes. */
export function sessionOptions<T>(y: Argv<T>) {
  return y
    .option("root", {
      type: "string",
      describe: "project root (every path stays inside it); in a remote workspace, the path there",
      defaultDescription: "current directory",
    })
    .option("workspace", workspaceOption)
    .option("config", { type: "string", describe: "config file layered over <root>/configs/app.json" })
    .option("profile", { type: "string", describe: "tool profile: default, mewbo, mouaif" })
    .option("model", {
      type: "string",
      describe: "model id (picks the edit backend unless agent.edit_tool pins one)",
    })
    .option("allow", {
      type: "string",
      array: true,
      describe:
        "allow a tool or family the policy would ask about (repeatable), e.g. --allow shell; --allow protected lets tools write protected paths (configs/app.json, .mcp.json, .toolbelt/, .git/, node_modules/.bin/)",
    })
    .option("trust", trustOption);
}

export const workspaceOption = {
  type: "string",
  describe:
    "where the tools run: local, docker:CONTAINER[:/path], docker-image:IMAGE (the root mounted), ssh:[user@]host[:/path], k8s:[namespace/]pod[:/path], k8s-template:FILE[:/path] (docs/workspaces.md)",
  defaultDescription: "local",
} as const;

/** What {@link sessionOptions} parses to. */
export interface SessionArgs {
  /** Undefined: the current directory (locally), or the path the workspace names. */
  root?: string | undefined;
  workspace?: string | undefined;
  config?: string | undefined;
  profile?: string | undefined;
  allow?: string[] | undefined;
  model?: string | undefined;
  /** --trust / --no-trust; undefined: the user's trust list and TOOLBELT_TRUST decide. */
  trust?: boolean | undefined;
}
