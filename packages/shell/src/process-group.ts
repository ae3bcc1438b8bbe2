import { readdirSync, readFileSync } from "node:fs";
import { cgroupMembers, killCgroup, removeCgroup } from "./cgroup.js";
import { MARK_SEPARATOR, MARK_VARIABLE } from "./environment.js";

/** How long a process group gets between SIGTERM and SIGKILL. */
export const KILL_GRACE_MS = 2000;

const POLL_MS = 40;

export interface Target {
  /** The process group (the command runs detached, so its pid). */
  pgid: number;
  /** The value of TOOLBELT_SHELL_MARK every process of the command inherited. */
  mark: string;
  /** The command's own cgroup, when one could be created: what a process cannot leave. */
  cgroup?: string | undefined;
  /** Its memory cgroup when that is another one (cgroup v1), removed with it. */
  memoryCgroup?: string | undefined;
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
 * Live (non-zombie) members of a process group and the descendants of its leader, from /proc (the
 * sandbox helper makes the command a child subreaper, so what double-forks stays beneath it while it
 * runs). Without /proc (macOS) the group counts as alive while it can be signalled.
 */
function groupMembers(pgid: number): number[] {
  if (!HAS_PROC) return [pgid];
  const members = new Set<number>();
  const children = new Map<number, number[]>();
  for (const pid of numericEntries()) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    } catch {
      continue;
    }
    // Fields after the parenthesised command name: state ppid pgrp ...
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (fields[0] === "Z" || fields[0] === "X") continue;
    const ppid = Number(fields[1]);
    if (Number(fields[2]) === pgid) members.add(pid);
    const siblings = children.get(ppid);
    if (siblings) siblings.push(pid);
    else children.set(ppid, [pid]);
  }
  const queue = [pgid, ...members];
  for (let next = queue.pop(); next !== undefined; next = queue.pop()) {
    for (const child of children.get(next) ?? []) {
      if (members.has(child) || child === process.pid) continue;
      members.add(child);
      queue.push(child);
    }
  }
  return [...members];
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
  if (target.cgroup) for (const pid of cgroupMembers(target.cgroup)) pids.add(pid);
  return [...pids];
}

/** The kernel's 15-character name of the sandbox helper (its pid-namespace init stays to reap leftovers). */
const HELPER_COMM = "toolbelt-sandbox".slice(0, 15);

function isSandboxHelper(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    return stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")) === HELPER_COMM;
  } catch {
    return false;
  }
}

/** The processes a command left running, not counting the sandbox helper's own init that reaps them. */
export function leftoverProcesses(target: Target): number[] {
  return liveProcesses(target).filter((pid) => !isSandboxHelper(pid));
}

/** Quick check after a normal exit: anything of the command still running? */
export function anythingLeft(target: Target): boolean {
  if (target.cgroup && cgroupMembers(target.cgroup).length > 0) return true;
  if (groupSignalable(target.pgid) && groupMembers(target.pgid).length > 0) return true;
  return markedProcesses(target.mark, target.pgid).length > 0;
}

function signalAll(target: Target, signal: NodeJS.Signals): void {
  try {
    process.kill(-target.pgid, signal);
  } catch {
    // The group is gone already.
  }
  if (target.cgroup && signal === "SIGKILL") killCgroup(target.cgroup);
  const others = new Set(markedProcesses(target.mark));
  if (target.cgroup) for (const pid of cgroupMembers(target.cgroup)) others.add(pid);
  for (const pid of others) {
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
  const result = await terminateNow(target, graceMs);
  if (result.survivors === 0) {
    if (target.cgroup) removeCgroup(target.cgroup);
    if (target.memoryCgroup) removeCgroup(target.memoryCgroup);
  }
  return result;
}

async function terminateNow(target: Target, graceMs: number): Promise<TerminateResult> {
  if (liveProcesses(target).length === 0) return { signal: null, survivors: 0 };
  signalAll(target, "SIGTERM");
  if (await waitGone(target, graceMs)) return { signal: "SIGTERM", survivors: 0 };
  // A fork bomb refills its group between two signals; a few rounds of SIGKILL drain it.
  for (let round = 0; round < 5; round++) {
    signalAll(target, "SIGKILL");
    if (await waitGone(target, 200)) return { signal: "SIGKILL", survivors: 0 };
  }
  await waitGone(target, 1000);
  return { signal: "SIGKILL", survivors: liveProcesses(target).length };
}

// Safety net: if the host process exits without closing its sessions, take the groups along (core's
// one registry, shared with the language servers).
export { trackProcessGroup as track, untrackProcessGroup as untrack } from "@toolbelt/core/internal";
