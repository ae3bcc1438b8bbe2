/**
 * The process groups families start (shell commands, language servers), killed if the host process
 * exits without closing its sessions. One registry per process: every session and family shares it,
 * since the exit hook is per process too. Families start their processes detached (a group of their
 * own), so the group's id is the leader's pid.
 */
const tracked = new Set<number>();
let exitHookInstalled = false;

function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, "SIGKILL");
  } catch {
    // No such group (a leader that never became one): try the process itself.
    try {
      process.kill(pgid, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
}

/** Kills the group `pgid` with SIGKILL when this process exits, unless untracked first. */
export function trackProcessGroup(pgid: number): void {
  if (!Number.isInteger(pgid) || pgid <= 0) return;
  tracked.add(pgid);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once("exit", () => {
    for (const group of tracked) killGroup(group);
  });
}

/** The group ended (or was ended): a later process reusing the id must not be killed. */
export function untrackProcessGroup(pgid: number): void {
  tracked.delete(pgid);
}

/** The groups that would be killed on exit now. */
export function trackedProcessGroups(): number[] {
  return [...tracked];
}
