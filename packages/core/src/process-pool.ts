/**
 * The processes tools start, bounded per host process: every session of a server (or of an SDK host)
 * shares one pool. Two lanes, each with its own bound:
 *
 * - **calls**: processes that live for one call (a search's ripgrep, a foreground shell command);
 * - **long-lived**: processes that outlive the call that started them (a background shell, a
 *   language server), holding their slot until they exit.
 *
 * Long-lived processes never take a call slot, so they cannot starve short calls: a session whose
 * language servers and background shells fill their lane still runs its searches and shell commands,
 * and no call ever waits on a slot only its own session could free. A request beyond a lane's bound
 * waits in a queue per session, and freed slots go round-robin across the sessions waiting, so one
 * busy session cannot hold the others back. Every wait is bounded (the call's timeout, else the
 * pool's `maxWaitMs`) and cancellable by the call's signal; running out of time is `EBUSY`.
 */
import os from "node:os";
import { ToolbeltError } from "./errors.js";

export interface ProcessPoolOptions {
  /** Processes of one call (searches, shell commands) running at once. Default: from the machine. */
  max?: number;
  /** Long-lived processes (background shells, language servers) at once. Default: from the machine. */
  maxLongLived?: number;
  /** The longest wait for a slot when the call has no timeout of its own (default 120 s). */
  maxWaitMs?: number;
}

export interface ProcessSlotRequest {
  /** Whose queue the request waits in: the root session's id (forks share their parent's). */
  owner: string;
  /** A process that outlives the call (background shell, language server). */
  longLived?: boolean;
  /** The call's signal: aborting it gives up the wait (ECANCELLED). */
  signal?: AbortSignal;
  /** The longest wait (the call's timeout); the pool's `maxWaitMs` when absent. */
  waitMs?: number;
}

/** A slot held for one process: release it when the process has exited (releasing twice is harmless). */
export interface ProcessSlot {
  /** How long the request waited for the slot (0 when one was free). */
  readonly waitedMs: number;
  release(): void;
}

/** What a pool holds now (for a health report). */
export interface ProcessPoolUsage {
  max: number;
  running: number;
  queued: number;
  long_lived: { max: number; running: number; queued: number };
  /** Sessions with at least one request waiting, in either lane. */
  sessions_waiting: number;
}

const DEFAULT_MAX_WAIT_MS = 120_000;
const MIB = 1024 * 1024;

/**
 * The bounds a pool takes when not told: per core four call processes (commands wait on I/O as
 * often as they compute), no more than one per 256 MiB of memory; one long-lived process per
 * 512 MiB (a language server easily takes that much). Memory is the container's limit when it has one.
 */
export function machineProcessLimits(): { max: number; maxLongLived: number } {
  const cores = typeof os.availableParallelism === "function" ? os.availableParallelism() : os.cpus().length;
  const total = os.totalmem();
  const constrained = (process as { constrainedMemory?: () => number | undefined }).constrainedMemory?.();
  const memory = constrained && constrained > 0 && constrained < total ? constrained : total;
  return {
    max: clamp(Math.min(Math.max(1, cores) * 4, Math.floor(memory / (256 * MIB))), 4, 256),
    maxLongLived: clamp(Math.floor(memory / (512 * MIB)), 4, 256),
  };
}

function clamp(n: number, low: number, high: number): number {
  return Math.min(high, Math.max(low, n));
}

type Waiter = {
  owner: string;
  grant: () => void;
  fail: (error: ToolbeltError) => void;
};

/** One lane: a bound, the slots taken, and the waiting requests queued per owner. */
class Lane {
  running = 0;
  queued = 0;
  /** Owners with waiting requests, in the order they get the next slot (Map order). */
  readonly queues = new Map<string, Waiter[]>();

  constructor(
    readonly max: number,
    readonly label: string,
  ) {}

  take(request: ProcessSlotRequest, maxWaitMs: number): Promise<ProcessSlot> {
    const started = Date.now();
    if (this.running < this.max && this.queued === 0) {
      this.running++;
      return Promise.resolve(this.#slot(0));
    }
    const signal = request.signal;
    const waitMs = request.waitMs ?? maxWaitMs;
    return new Promise<ProcessSlot>((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const settle = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
      };
      const waiter: Waiter = {
        owner: request.owner,
        grant: () => {
          settle();
          resolve(this.#slot(Date.now() - started));
        },
        fail: (error) => {
          settle();
          this.#drop(waiter);
          reject(error);
        },
      };
      const waited = () => Math.round(Date.now() - started);
      const onAbort = () =>
        waiter.fail(
          new ToolbeltError("ECANCELLED", `the call was cancelled while it waited for a ${this.label} slot`, {
            details: { queued_ms: waited() },
          }),
        );
      if (signal?.aborted) {
        reject(
          new ToolbeltError("ECANCELLED", "the call was cancelled before it started a process", {
            details: { queued_ms: 0 },
          }),
        );
        return;
      }
      signal?.addEventListener("abort", onAbort, { once: true });
      timer = setTimeout(() => {
        const ms = waited();
        waiter.fail(
          new ToolbeltError(
            "EBUSY",
            `every ${this.label} slot stayed busy for ${formatSeconds(ms)} (${this.max} at a time, ${this.running} running, ${this.queued} waiting): try again later`,
            { details: { queued_ms: ms, pool: this.label, max: this.max } },
          ),
        );
      }, waitMs);
      const queue = this.queues.get(request.owner);
      if (queue) queue.push(waiter);
      else this.queues.set(request.owner, [waiter]);
      this.queued++;
    });
  }

  #slot(waitedMs: number): ProcessSlot {
    let held = true;
    return {
      waitedMs: Math.round(waitedMs),
      release: () => {
        if (!held) return;
        held = false;
        this.running--;
        this.#grantNext();
      },
    };
  }

  /** Hands free slots out, one owner at a time: the owner served goes to the back of the line. */
  #grantNext(): void {
    while (this.running < this.max && this.queued > 0) {
      const [owner, queue] = this.queues.entries().next().value as [string, Waiter[]];
      const waiter = queue.shift() as Waiter;
      this.queues.delete(owner);
      if (queue.length > 0) this.queues.set(owner, queue);
      this.queued--;
      this.running++;
      waiter.grant();
    }
  }

  #drop(waiter: Waiter): void {
    const queue = this.queues.get(waiter.owner);
    const at = queue?.indexOf(waiter) ?? -1;
    if (!queue || at === -1) return;
    queue.splice(at, 1);
    this.queued--;
    if (queue.length === 0) this.queues.delete(waiter.owner);
  }
}

function formatSeconds(ms: number): string {
  return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
}

/** A bound on the processes tools start, shared by the sessions given it (see the file comment). */
export class ProcessPool {
  readonly max: number;
  readonly maxLongLived: number;
  readonly maxWaitMs: number;
  readonly #calls: Lane;
  readonly #longLived: Lane;

  constructor(options: ProcessPoolOptions = {}) {
    const machine = machineProcessLimits();
    this.max = positiveInt(options.max, "max") ?? machine.max;
    this.maxLongLived = positiveInt(options.maxLongLived, "maxLongLived") ?? machine.maxLongLived;
    this.maxWaitMs = positiveInt(options.maxWaitMs, "maxWaitMs") ?? DEFAULT_MAX_WAIT_MS;
    this.#calls = new Lane(this.max, "process");
    this.#longLived = new Lane(this.maxLongLived, "long-lived process");
  }

  /**
   * A slot for one process about to start; resolves once one is free (at once, usually). Rejects
   * with EBUSY when the wait runs out, ECANCELLED when the signal aborts; either carries `queued_ms`.
   */
  acquire(request: ProcessSlotRequest): Promise<ProcessSlot> {
    return (request.longLived ? this.#longLived : this.#calls).take(request, this.maxWaitMs);
  }

  usage(): ProcessPoolUsage {
    const owners = new Set([...this.#calls.queues.keys(), ...this.#longLived.queues.keys()]);
    return {
      max: this.max,
      running: this.#calls.running,
      queued: this.#calls.queued,
      long_lived: {
        max: this.maxLongLived,
        running: this.#longLived.running,
        queued: this.#longLived.queued,
      },
      sessions_waiting: owners.size,
    };
  }
}

function positiveInt(value: number | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isInteger(value) || value < 1)
    throw new ToolbeltError("EINVAL_CONFIG", `ProcessPool ${name} must be a whole number of at least 1`, {
      details: { [name]: value },
    });
  return value;
}

let shared: ProcessPool | undefined;

/** The pool every session of this process uses unless it was given another (created on first use). */
export function defaultProcessPool(): ProcessPool {
  shared ??= new ProcessPool();
  return shared;
}

/** The model-facing note under a result whose call waited for a process slot. */
export function withQueueNote(text: string, payload: { kind: string; queued_ms?: unknown }): string {
  const ms = payload.queued_ms;
  if (typeof ms !== "number" || ms <= 0) return text;
  return `${text}\n\n[queued] this call waited ${formatSeconds(ms)} for a free process slot (all of them were in use)`;
}
