import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { ENV, readEnv } from "@toolbelt/core/internal";

/**
 * A cgroup per command: membership is something a process cannot shed (a sandboxed command cannot
 * write to /sys/fs/cgroup, so it cannot move itself out), and `pids.max` caps a fork bomb for root
 * too, where RLIMIT_NPROC is not enforced.
 */
export interface CgroupSupport {
  /** Where command cgroups are created, when they can be. */
  base: string | undefined;
  /** "v2" (unified hierarchy, cgroup.kill) or "v1-pids" (the pids controller's own hierarchy). */
  kind: "v2" | "v1-pids" | undefined;
  /** Whether `pids.max` is available in the created cgroups. */
  pidsMax: boolean;
  /** Why none can be created, or what is missing. */
  reason: string | undefined;
}

/** Our own cgroup paths, by controller list ("" for the unified hierarchy). */
function ownCgroups(): Map<string, string> {
  const map = new Map<string, string>();
  try {
    for (const line of readFileSync("/proc/self/cgroup", "utf8").split("\n")) {
      const m = /^\d+:([^:]*):(.*)$/.exec(line);
      if (m) for (const controller of (m[1] ?? "").split(",")) map.set(controller, m[2] ?? "/");
    }
  } catch {
    // No /proc: no cgroups.
  }
  return map;
}

function exists(file: string): boolean {
  try {
    readFileSync(file);
    return true;
  } catch {
    return false;
  }
}

/** Tries to create and remove a child cgroup under `base`; returns whether it has pids.max. */
function tryBase(base: string): { ok: boolean; pidsMax: boolean; why?: string } {
  const probe = path.join(base, `toolbelt-probe-${process.pid}`);
  try {
    mkdirSync(probe);
  } catch (error) {
    return { ok: false, pidsMax: false, why: `${base}: ${(error as NodeJS.ErrnoException).code}` };
  }
  const pidsMax = exists(path.join(probe, "pids.max"));
  try {
    rmdirSync(probe);
  } catch {
    // Left for the next probe to fail on mkdir EEXIST; harmless.
  }
  return { ok: true, pidsMax };
}

let cached: CgroupSupport | undefined;

/** Where this process may create command cgroups; probed once per process. */
export function cgroupSupport(): CgroupSupport {
  if (cached) return cached;
  if (process.platform !== "linux" || readEnv(ENV.TOOLBELT_SHELL_CGROUPS) === false) {
    cached = { base: undefined, kind: undefined, pidsMax: false, reason: "cgroups not used here" };
    return cached;
  }
  const own = ownCgroups();
  const unified = own.get("");
  const candidates: Array<{ base: string; kind: "v2" | "v1-pids" }> = [];
  if (unified !== undefined) {
    if (exists("/sys/fs/cgroup/cgroup.controllers"))
      candidates.push({ base: path.join("/sys/fs/cgroup", unified), kind: "v2" });
    else if (exists("/sys/fs/cgroup/unified/cgroup.controllers"))
      candidates.push({ base: path.join("/sys/fs/cgroup/unified", unified), kind: "v2" });
  }
  const pids = own.get("pids");
  if (pids !== undefined) candidates.push({ base: path.join("/sys/fs/cgroup/pids", pids), kind: "v1-pids" });
  const failures: string[] = [];
  let fallback: CgroupSupport | undefined;
  for (const candidate of candidates) {
    const tried = tryBase(candidate.base);
    if (!tried.ok) {
      failures.push(tried.why ?? candidate.base);
      continue;
    }
    const support: CgroupSupport = { ...candidate, pidsMax: tried.pidsMax, reason: undefined };
    // A cgroup with pids.max beats one without: it is what contains a fork bomb.
    if (tried.pidsMax) {
      cached = support;
      return support;
    }
    fallback ??= {
      ...support,
      reason: "no pids controller in the writable cgroup: the process cap relies on RLIMIT_NPROC",
    };
  }
  cached = fallback ?? {
    base: undefined,
    kind: undefined,
    pidsMax: false,
    reason: candidates.length
      ? `no writable cgroup (${failures.join("; ")})`
      : "no cgroup hierarchy found in /proc/self/cgroup",
  };
  return cached;
}

/** Creates the cgroup for one command, capped at `maxProcesses` tasks where pids.max exists. */
export function createCommandCgroup(name: string, maxProcesses: number | "max"): string | undefined {
  const support = cgroupSupport();
  if (!support.base) return undefined;
  const dir = path.join(support.base, `toolbelt-${name.replace(/[^A-Za-z0-9_.-]/g, "_")}`);
  try {
    mkdirSync(dir);
    if (support.pidsMax) writeFileSync(path.join(dir, "pids.max"), String(maxProcesses));
    return dir;
  } catch {
    removeCgroup(dir);
    return undefined;
  }
}

/** The pids in a command's cgroup (empty when it is gone). */
export function cgroupMembers(dir: string): number[] {
  try {
    return readFileSync(path.join(dir, "cgroup.procs"), "latin1")
      .split("\n")
      .filter(Boolean)
      .map(Number)
      .filter((pid) => Number.isInteger(pid) && pid > 0 && pid !== process.pid);
  } catch {
    return [];
  }
}

/** cgroup v2 ends every member at once, forks in flight included; v1 is signalled pid by pid. */
export function killCgroup(dir: string): boolean {
  try {
    writeFileSync(path.join(dir, "cgroup.kill"), "1");
    return true;
  } catch {
    return false;
  }
}

/** Removes an empty cgroup; a cgroup still holding processes stays (its watcher removes it later). */
export function removeCgroup(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // Busy or gone.
  }
}

/** Where a command's memory can be capped: in its own cgroup (v2) or a cgroup of the v1 memory hierarchy. */
export interface MemorySupport {
  kind: "v2" | "v1" | undefined;
  /** v1: where memory cgroups are created. */
  base: string | undefined;
  reason: string | undefined;
}

let memoryCached: MemorySupport | undefined;

/** Whether commands can get a memory limit here, and how; probed once per process. */
export function memorySupport(): MemorySupport {
  if (memoryCached) return memoryCached;
  const support = cgroupSupport();
  if (support.kind === "v2" && support.base) {
    const probe = path.join(support.base, `toolbelt-probe-mem-${process.pid}`);
    try {
      mkdirSync(probe);
      const ok = exists(path.join(probe, "memory.max"));
      rmdirSync(probe);
      if (ok) {
        memoryCached = { kind: "v2", base: undefined, reason: undefined };
        return memoryCached;
      }
    } catch {
      // Fall through to the v1 hierarchy.
    }
  }
  const own = ownCgroups().get("memory");
  if (process.platform === "linux" && readEnv(ENV.TOOLBELT_SHELL_CGROUPS) !== false && own !== undefined) {
    const base = path.join("/sys/fs/cgroup/memory", own);
    const probe = path.join(base, `toolbelt-probe-mem-${process.pid}`);
    try {
      mkdirSync(probe);
      const ok = exists(path.join(probe, "memory.limit_in_bytes"));
      rmdirSync(probe);
      if (ok) {
        memoryCached = { kind: "v1", base, reason: undefined };
        return memoryCached;
      }
    } catch (error) {
      memoryCached = {
        kind: undefined,
        base: undefined,
        reason: `no writable memory cgroup (${base}: ${(error as NodeJS.ErrnoException).code})`,
      };
      return memoryCached;
    }
  }
  memoryCached = {
    kind: undefined,
    base: undefined,
    reason: support.reason ?? "no cgroup with the memory controller can be created here",
  };
  return memoryCached;
}

/**
 * Caps one command's memory at `bytes`: in its own cgroup `tracking` (v2), or in a cgroup of the v1
 * memory hierarchy made for it (returned: the command joins it too). Swap counts against the limit
 * where the kernel accounts it, so the cap is not a way into swap. Undefined when no cap applies.
 */
export function capMemory(name: string, bytes: number, tracking: string | undefined): string | undefined {
  const support = memorySupport();
  const limit = String(Math.floor(bytes));
  if (support.kind === "v2" && tracking) {
    try {
      writeFileSync(path.join(tracking, "memory.max"), limit);
      try {
        writeFileSync(path.join(tracking, "memory.swap.max"), "0");
      } catch {
        // No swap accounting: nothing to keep out of.
      }
      return tracking;
    } catch {
      return undefined;
    }
  }
  if (support.kind === "v1" && support.base) {
    const dir = path.join(support.base, `toolbelt-${name.replace(/[^A-Za-z0-9_.-]/g, "_")}`);
    try {
      mkdirSync(dir);
      writeFileSync(path.join(dir, "memory.limit_in_bytes"), limit);
      try {
        writeFileSync(path.join(dir, "memory.memsw.limit_in_bytes"), limit);
      } catch {
        // No swap accounting (or none configured).
      }
      return dir;
    } catch {
      removeCgroup(dir);
    }
  }
  return undefined;
}

/** How many times the kernel killed a process of this memory cgroup for going over its limit. */
export function oomKills(dir: string): number {
  for (const file of ["memory.events", "memory.oom_control"]) {
    try {
      const m = /^oom_kill (\d+)$/m.exec(readFileSync(path.join(dir, file), "utf8"));
      if (m) return Number(m[1]);
    } catch {
      // The other hierarchy's file, or the cgroup is gone.
    }
  }
  return 0;
}
