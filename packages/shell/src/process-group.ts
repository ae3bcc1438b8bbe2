import { readdirSync, readFileSync } from "node:fs";
import { MARK_SEPARATOR, MARK_VARIABLE } from "./environment.js";

/** How long a process group gets between SIGTERM and SIGKILL. */
export const KILL_GRACE_MS = 2000;

const POLL_MS = 40;

export interface Target {
  /** The process group (the command runs detached, so its pid). */
  pgid: number;
  /** The value of TOOLBELT_SHELL_MARK every process of the command inherited. */
  mark: string;
}

export interface TerminateResult {
  /** The last signal that had to be sent, or null when nothing was left to signal. */
  signal: "SIGTERM" | "SIGKILL" | null;
  /** Processes that survived SIGKILL too (uninterruptible sleep); normally 0. */
  survivors: number;
}

/** Above this many pids allocated since the command started, listing /proc is cheaper. */
const MAX_PID_RANGE = 512;

/**
 * The pids allocated after `pid`, from the kernel's last allocated pid: trying a few hundred
 * /proc entries directly is cheaper than listing /proc on a busy machine. Undefined when the
 * range is large, wrapped around, or the kernel does not say.
 */
function pidsAfter(pid: number): number[] | undefined {
  let last: number;
  try {
    last = Number.parseInt(readFileSync("/proc/sys/kernel/ns_last_pid", "latin1"), 10);
  } catch {
    return undefined;
  }
  if (!Number.isInteger(last) || last < pid || last - pid > MAX_PID_RANGE) return undefined;
  const pids: number[] = [];
  for (let next = pid + 1; next <= last; next++) pids.push(next);
  return pids;
}

function numericEntries(): number[] {
  try {
    return readdirSync("/proc")
      .filter((name) => name.charCodeAt(0) <= 57)
      .map(Number)
      .filter((n) => Number.isInteger(n) && n > 0);
  } catch {
    return [];
  }
}

const HAS_PROC = (() => {
  try {
    readdirSync("/proc/self");
    return true;
  } catch {
    return false;
  }
})();

/**
 * Live (non-zombie) members of a process group, from /proc. Without /proc (macOS) the group
 * counts as alive while it can be signalled.
 */
function groupMembers(pgid: number): number[] {
  if (!HAS_PROC) return [pgid];
  const members: number[] = [];
  for (const pid of numericEntries()) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    } catch {
      continue;
    }
    // Fields after the parenthesised command name: state ppid pgrp ...
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(fields[2]) === pgid && fields[0] !== "Z" && fields[0] !== "X") members.push(pid);
  }
  return members;
}

/**
 * Processes carrying the mark in their environment, wherever they are: this finds what left the
 * group (`setsid`, `nohup … &` with a new session, daemons that double-fork). A zombie's environ
 * reads empty, so zombies are never listed. `newerThan` limits the scan to larger pids (cheap
 * check after a normal exit, since descendants are created after the command).
 */
export function markedProcesses(mark: string, newerThan = 0): number[] {
  const found: number[] = [];
  for (const pid of newerThan > 0 ? (pidsAfter(newerThan) ?? numericEntries()) : numericEntries()) {
    if (pid <= newerThan || pid === process.pid) continue;
    try {
      if (environCarries(readFileSync(`/proc/${pid}/environ`), mark)) found.push(pid);
    } catch {
      // Gone, or another user's process: not ours either way.
    }
  }
  return found;
}

const VARIABLE = Buffer.from(`${MARK_VARIABLE}=`);

/** Whether a NUL-separated environment block carries `mark` among the marks of its variable. */
function environCarries(environ: Buffer, mark: string): boolean {
  let at = environ.indexOf(VARIABLE);
  while (at > 0 && environ[at - 1] !== 0) at = environ.indexOf(VARIABLE, at + 1);
  if (at < 0) return false;
  const start = at + VARIABLE.length;
  const end = environ.indexOf(0, start);
  const value = environ.toString("latin1", start, end < 0 ? environ.length : end);
  return value.split(MARK_SEPARATOR).includes(mark);
}

function groupSignalable(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Every live process of the command: its group and the marked processes that left it. */
export function liveProcesses(target: Target, newerThan = 0): number[] {
  const pids = new Set(markedProcesses(target.mark, newerThan));
  // kill(-pgid, 0) also succeeds for zombies nobody reaped yet, so confirm through /proc.
  if (groupSignalable(target.pgid)) for (const pid of groupMembers(target.pgid)) pids.add(pid);
  return [...pids];
}

/** Quick check after a normal exit: anything of the command still running? */
export function anythingLeft(target: Target): boolean {
  if (groupSignalable(target.pgid) && groupMembers(target.pgid).length > 0) return true;
  return markedProcesses(target.mark, target.pgid).length > 0;
}

function signalAll(target: Target, signal: NodeJS.Signals): void {
  try {
    process.kill(-target.pgid, signal);
  } catch {
    // The group is gone already.
  }
  for (const pid of markedProcesses(target.mark)) {
    try {
      process.kill(pid, signal);
    } catch {
      // Exited in between.
    }
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function waitGone(target: Target, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (liveProcesses(target).length === 0) return true;
    if (Date.now() >= deadline) return false;
    await sleep(POLL_MS);
  }
}

/**
 * Ends a command and everything it started: SIGTERM to the group and to marked processes, then
 * SIGKILL to whatever is left after the grace period.
 */
export async function terminate(target: Target, graceMs = KILL_GRACE_MS): Promise<TerminateResult> {
  if (liveProcesses(target).length === 0) return { signal: null, survivors: 0 };
  signalAll(target, "SIGTERM");
  if (await waitGone(target, graceMs)) return { signal: "SIGTERM", survivors: 0 };
  signalAll(target, "SIGKILL");
  await waitGone(target, 1000);
  return { signal: "SIGKILL", survivors: liveProcesses(target).length };
}

// Safety net: if the host process exits without closing its sessions, take the groups along.
const tracked = new Set<number>();
let exitHookInstalled = false;

export function track(pgid: number): void {
  tracked.add(pgid);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once("exit", () => {
    for (const group of tracked) {
      try {
        process.kill(-group, "SIGKILL");
      } catch {
        // Already gone.
      }
    }
  });
}

export function untrack(pgid: number): void {
  tracked.delete(pgid);
}
