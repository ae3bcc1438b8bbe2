import { StringDecoder } from "node:string_decoder";
import { AnsiStripper } from "./ansi.js";
import { removeCgroup } from "./cgroup.js";
import type { ExitStatus, Launched } from "./launch.js";
import type { NetworkProxy } from "./network-proxy.js";
import { EventCoalescer } from "./output-events.js";
import { OutputLog } from "./output-log.js";
import type { OutputSaver } from "./output-saver.js";
import { type TerminateResult, terminate, untrack } from "./process-group.js";
import type { ProtectedLayout } from "./protected-layout.js";
import { type ProtectedSnapshot, protectedChanges, snapshotProtected } from "./protected-watch.js";
import type { SandboxStatus } from "./sandbox.js";
import type { NetworkLimit } from "./sandbox-denials.js";

export type ShellStatus = "running" | "exited" | "killed";

/** Characters of output a background session keeps (older output is dropped and reported as missed). */
export const BACKGROUND_LOG_CHARS = 1024 * 1024;

/** The quiet time after which a burst of output counts as the whole reply. */
const SETTLE_MS = 120;

export interface BackgroundShellInit {
  id: string;
  command: string;
  cwd: string;
  mark: string;
  /** The command's cgroup, when it has one. */
  cgroup?: string | undefined;
  /** Its memory cgroup when that is another one (cgroup v1). */
  memoryCgroup?: string | undefined;
  /** The project root, whose protected paths are compared before and after. */
  root?: string;
  /** The protected paths as the command was planned with (walked again when absent). */
  layout?: ProtectedLayout;
  sandbox: SandboxStatus;
  /** How the command's network is limited (agent.shell_network off, or its allow list). */
  network?: NetworkLimit | undefined;
  /** The allow list's proxy, closed when the session ends (kill, eviction, the session's close). */
  proxy?: NetworkProxy | undefined;
  tty: boolean;
  logChars?: number;
  /** Keeps the whole output on disk once it is longer than a reply shows. */
  saver?: OutputSaver;
  /** Receives coalesced output for `shell_output` events. */
  emit?: (data: string) => void;
}

/** One command started with run_in_background: its process, status and bounded output log. */
export class BackgroundShell {
  readonly id: string;
  readonly command: string;
  readonly cwd: string;
  readonly mark: string;
  readonly cgroup: string | undefined;
  readonly memoryCgroup: string | undefined;
  readonly sandbox: SandboxStatus;
  readonly network: NetworkLimit | undefined;
  readonly proxy: NetworkProxy | undefined;
  /** Protected paths changed between start and exit. */
  protectedChanged: string[] = [];
  readonly #root: string | undefined;
  readonly #before: ProtectedSnapshot | undefined;
  readonly startedAt = Date.now();
  readonly log: OutputLog;
  /** The whole output on disk, past what the bounded log keeps. */
  readonly saver: OutputSaver | undefined;
  status: ShellStatus = "running";
  exitCode: number | null = null;
  signal: string | null = null;
  /** Last output or interaction: what idle reaping looks at. */
  lastActivity = Date.now();
  /** Where a read without an explicit cursor continues. */
  readCursor = 0;
  #launched: Launched | undefined;
  readonly #decoder = new StringDecoder("utf8");
  readonly #stripper: AnsiStripper | undefined;
  readonly tty: boolean;
  readonly #waiters = new Set<() => void>();
  /** shell_output events, coalesced: one per interval per session, bounded in size. */
  readonly #events: EventCoalescer | undefined;
  #killing: Promise<TerminateResult> | undefined;

  constructor(init: BackgroundShellInit) {
    this.id = init.id;
    this.command = init.command;
    this.cwd = init.cwd;
    this.mark = init.mark;
    this.cgroup = init.cgroup;
    this.memoryCgroup = init.memoryCgroup;
    this.#root = init.root;
    this.#before = init.root ? snapshotProtected(init.root, init.layout) : undefined;
    this.sandbox = init.sandbox;
    this.network = init.network;
    this.proxy = init.proxy;
    this.tty = init.tty;
    // Escapes are kept under a pseudo-terminal (the caller asked for one) and stripped otherwise.
    this.#stripper = init.tty ? undefined : new AnsiStripper();
    this.log = new OutputLog(init.logChars ?? BACKGROUND_LOG_CHARS);
    this.saver = init.saver;
    this.#events = init.emit
      ? new EventCoalescer(
          init.emit,
          (count) => `${count} characters not streamed; read them with shell_session`,
        )
      : undefined;
  }

  /** Wires the started process in (the data callback exists before the process does). */
  attach(launched: Launched): void {
    this.#launched = launched;
    void launched.exited.then((status) => this.#exited(status));
    void launched.drained.then(() => {
      this.#append(this.#decoder.end() + (this.#stripper?.flush() ?? ""));
      this.saver?.finish(false);
    });
  }

  get pid(): number {
    return this.#launched?.pid ?? -1;
  }

  get writable(): boolean {
    return this.status === "running" && !!this.#launched?.writable;
  }

  /** Raw output from the process. */
  receive(chunk: Buffer): void {
    this.saver?.push(chunk);
    let text = this.#decoder.write(chunk);
    if (this.#stripper) text = this.#stripper.push(text);
    this.#append(text);
  }

  #append(text: string): void {
    if (!text) return;
    this.log.append(text);
    this.lastActivity = Date.now();
    this.#events?.add(text);
    this.#wake();
  }

  #exited(status: ExitStatus): void {
    if (status.error) this.#append(`failed to start: ${status.error}\n`);
    if (this.status === "running") this.status = this.#killing ? "killed" : "exited";
    this.exitCode = status.code;
    this.signal = status.signal;
    if (this.#root && this.#before)
      this.protectedChanged = protectedChanges(this.#before, snapshotProtected(this.#root));
    // Empty once the command and what it started are gone (else terminate removes it).
    if (this.memoryCgroup && this.memoryCgroup !== this.cgroup) removeCgroup(this.memoryCgroup);
    // The relay died with the command, so nothing reaches the proxy any more (its refusals stay readable).
    void this.proxy?.close();
    this.lastActivity = Date.now();
    untrack(this.pid);
    this.#wake();
  }

  #wake(): void {
    for (const wake of this.#waiters) wake();
  }

  /** Resolves on the next output or exit, or after `ms`. */
  #next(ms: number): Promise<void> {
    if (ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#waiters.add(done);
    });
  }

  /**
   * Waits until output past `from` satisfies `ready` (by default: any output) or the process
   * exits, then until the output has been quiet for a moment, all within `waitMs`. Returns at once
   * when `windowChars` of output past `from` are there (a reply cannot hold more).
   */
  async waitForOutput(
    from: number,
    waitMs: number,
    options: { ready?: (from: number) => boolean; windowChars?: number } = {},
  ): Promise<void> {
    const { ready = () => true, windowChars = Number.POSITIVE_INFINITY } = options;
    const full = () => this.log.end - Math.max(from, this.log.start) >= windowChars;
    const deadline = Date.now() + waitMs;
    while (this.status === "running" && !(this.log.end > from && ready(from))) {
      const left = deadline - Date.now();
      if (left <= 0) return;
      await this.#next(left);
    }
    // Let the rest of a burst arrive: stop after SETTLE_MS without output, or at the deadline.
    for (;;) {
      const left = Math.min(SETTLE_MS, deadline - Date.now());
      if (left <= 0 || full()) return;
      const before = this.log.end;
      await this.#next(left);
      if (this.log.end === before) return;
    }
  }

  write(data: string): void {
    this.lastActivity = Date.now();
    this.#launched?.write(data);
  }

  /** Ends the process group (and marked escapees): SIGTERM, then SIGKILL after the grace period. */
  kill(graceMs?: number): Promise<TerminateResult> {
    if (this.status === "running") this.status = "killed";
    this.#killing ??= terminate(
      { pgid: this.pid, mark: this.mark, cgroup: this.cgroup, memoryCgroup: this.memoryCgroup },
      graceMs,
    ).finally(() => {
      untrack(this.pid);
      void this.proxy?.close();
    });
    return this.#killing;
  }

  /** Ends whatever the finished command left running, and stops event timers. */
  async dispose(): Promise<void> {
    if (this.pid > 0) await this.kill();
    this.#events?.cancel();
    this.saver?.finish(false);
  }
}
