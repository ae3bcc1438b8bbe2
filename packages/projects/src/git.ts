import { execFile } from "node:child_process";
import { findExecutable, scrubCommandEnv } from "@toolbelt/core/internal";

// The environment any started command gets (no credentials; git pinned to explicit bare
// repositories, so a HEAD/config/objects/refs a tool wrote into a project is never taken for one).
const GIT_ENV = { ...scrubCommandEnv(process.env), GIT_TERMINAL_PROMPT: "0", GIT_PAGER: "cat", LC_ALL: "C" };

/** Runs git and resolves to its stdout, or undefined when git is missing or the command fails. */
export function git(args: string[], cwd: string, timeoutMs = 5000): Promise<string | undefined> {
  // An absolute git from PATH, never one inside the directory it is asked about (a relative PATH entry
  // would resolve against `cwd`, a project the model may have written into).
  const program = findExecutable("git", { outside: cwd });
  if (!program) return Promise.resolve(undefined);
  return new Promise((resolve) => {
    execFile(
      program,
      args,
      { cwd, env: GIT_ENV, timeout: timeoutMs, maxBuffer: 4 * 1024 * 1024 },
      (error, stdout) => resolve(error ? undefined : stdout),
    );
  });
}

export type Worktree = {
  path: string;
  head?: string;
  branch?: string;
  detached: boolean;
  bare: boolean;
  /** git says the directory is gone (`prunable`). */
  prunable: boolean;
};

/** Parses `git worktree list --porcelain`: blocks separated by blank lines, one `key value` per line. */
export function parseWorktrees(porcelain: string): Worktree[] {
  const out: Worktree[] = [];
  for (const block of porcelain.split(/\n\s*\n/)) {
    const lines = block.split("\n").filter(Boolean);
    const first = lines[0];
    if (!first?.startsWith("worktree ")) continue;
    const tree: Worktree = {
      path: first.slice("worktree ".length),
      detached: false,
      bare: false,
      prunable: false,
    };
    for (const line of lines.slice(1)) {
      const [key, ...rest] = line.split(" ");
      const value = rest.join(" ");
      if (key === "HEAD") tree.head = value;
      else if (key === "branch") tree.branch = value.replace(/^refs\/heads\//, "");
      else if (key === "detached") tree.detached = true;
      else if (key === "bare") tree.bare = true;
      else if (key === "prunable") tree.prunable = true;
    }
    out.push(tree);
  }
  return out;
}

export async function listWorktrees(dir: string): Promise<Worktree[]> {
  const text = await git(["worktree", "list", "--porcelain"], dir);
  return text ? parseWorktrees(text) : [];
}

/** `owner/name` from a remote URL (scp-like, ssh, https), or undefined when it has no such shape. */
export function repositorySlug(url: string): string | undefined {
  const m = /^(?:[a-z+]+:\/\/)?(?:[^@/]+@)?[^/:]+[:/](.+?)(?:\.git)?\/?$/i.exec(url.trim());
  const parts = m?.[1]?.split("/").filter(Boolean) ?? [];
  if (parts.length < 2) return undefined;
  return parts.slice(-2).join("/");
}

/** The branch checked out in `dir` and the slug of its `origin`, when git knows them. */
export async function gitInfo(dir: string): Promise<{ branch?: string; repository?: string }> {
  const [head, remote] = await Promise.all([
    git(["rev-parse", "--abbrev-ref", "HEAD"], dir),
    git(["config", "--get", "remote.origin.url"], dir),
  ]);
  const branch = head?.trim();
  const repository = remote ? repositorySlug(remote) : undefined;
  return {
    ...(branch && branch !== "HEAD" ? { branch } : {}),
    ...(repository ? { repository } : {}),
  };
}
