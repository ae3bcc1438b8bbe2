/** A process a family is about to start: what runs, where, with which environment. */
export interface CommandSpec {
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string | undefined>;
  /**
   * Files outside `cwd` the process has to read (for purpose "search": the ignore files ripgrep reads
   * in the directories above the root). A wrapper that confines reads grants reading these files and
   * nothing else outside `cwd`.
   */
  reads?: string[];
  /**
   * Set only by a wrapper that confined the process, kernel-enforced, to reading beneath `cwd` (plus
   * `reads` and its own executable) and writing nothing: whatever name the process opens, a symlink
   * swapped in to point elsewhere is refused at the open. Today the shell family's Landlock wrapper
   * sets it for purpose "search". Absent: nothing vouches for what the process reads.
   */
  confined?: true;
  /** Why a wrapper that would have confined the process did not (no Landlock, a dynamic binary, ...). */
  unconfinedReason?: string;
}

/**
 * Why a process starts; a wrapper may treat each differently. `search`: a read-only process (ripgrep)
 * that must read nothing outside its `cwd` (the root) and `reads`, and write nothing.
 */
export type LaunchPurpose = "shell" | "language-server" | "mcp-server" | "search";

/**
 * Rewrites a command before it starts, for example to run it inside the shell family's Landlock
 * sandbox. Families that start processes call `session.wrapCommand`, so one sandbox serves them all
 * without one family importing another.
 */
export type CommandWrapper = (spec: CommandSpec, purpose: LaunchPurpose) => CommandSpec;
