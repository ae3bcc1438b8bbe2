/** A process a family is about to start: what runs, where, with which environment. */
export interface CommandSpec {
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string | undefined>;
}

/** Why a process starts; a wrapper may treat each differently. */
export type LaunchPurpose = "shell" | "language-server" | "mcp-server";

/**
 * Rewrites a command before it starts, for example to run it inside the shell family's Landlock
 * sandbox. Families that start processes call `session.wrapCommand`, so one sandbox serves them all
 * without one family importing another.
 */
export type CommandWrapper = (spec: CommandSpec, purpose: LaunchPurpose) => CommandSpec;
