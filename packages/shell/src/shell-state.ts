import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { type Session, ToolbeltError } from "@toolbelt/core";
import type { BackgroundShell } from "./background-shell.js";
import { snapshotEnvironment } from "./environment.js";
import { type Target, terminate } from "./process-group.js";

/** A running session untouched (no output, no read or write) this long may be reaped for a new one. */
export const DEFAULT_IDLE_REAP_MS = 10 * 60 * 1000;

// Temporary directories of sessions not closed yet: removed at process exit if their session
// never closes (a host that exits without session.close()).
const liveTmpdirs = new Set<string>();
let exitCleanupInstalled = false;

function registerTmpdir(dir: string): void {
  liveTmpdirs.add(dir);
  if (exitCleanupInstalled) return;
  exitCleanupInstalled = true;
  process.once("exit", () => {
    for (const d of liveTmpdirs) rmSync(d, { recursive: true, force: true });
  });
}

export interface RoomMade {
  /** Finished sessions dropped to make room. */
  evicted: string[];
  /** Idle running sessions ended to make room. */
  reaped: string[];
}

/**
 * The shell family's state in one toolbelt session: background sessions, foreground commands in
 * flight and the per-session temporary directory. Everything ends when the toolbelt session closes.
 */
export class ShellState {
  readonly #session: Session;
  readonly #shells = new Map<string, BackgroundShell>();
  readonly #foreground = new Set<Target>();
  /** How long a running session may sit idle before a full cap reaps it (in-process callers may shorten it). */
  idleMs = DEFAULT_IDLE_REAP_MS;
  #counter = 0;
  #marks = 0;
  readonly #markPrefix = randomBytes(6).toString("base64url");
  #tmpdir: string | undefined;
  #environment: Record<string, string> | undefined;
  #closed = false;

  constructor(session: Session) {
    this.#session = session;
  }

  static of(session: Session): ShellState {
    return session.state("shell", () => {
      const state = new ShellState(session);
      session.onClose(() => state.close());
      return state;
    });
  }

  get cap(): number {
    return this.#session.limits.shellMaxSessions;
  }

  /** The per-session TMPDIR, created on first use and removed at close. */
  tmpdir(): string {
    if (!this.#tmpdir) {
      this.#tmpdir = mkdtempSync(path.join(os.tmpdir(), "toolbelt-shell-"));
      registerTmpdir(this.#tmpdir);
    }
    return this.#tmpdir;
  }

  /** The host environment as of this session's first command. */
  environment(): Record<string, string> {
    this.#environment ??= snapshotEnvironment();
    return this.#environment;
  }

  /** A fresh value for TOOLBELT_SHELL_MARK: unique per command, unguessable across sessions. */
  nextMark(): string {
    this.#marks += 1;
    return `${this.#markPrefix}${process.pid.toString(36)}.${this.#marks}`;
  }

  nextId(): string {
    this.#counter += 1;
    return `sh-${this.#counter}`;
  }

  get(id: string): BackgroundShell {
    const shell = this.#shells.get(id);
    if (!shell) {
      const known = [...this.#shells.keys()];
      throw new ToolbeltError(
        "ENOENT",
        `no shell session ${JSON.stringify(id)}${known.length ? `; sessions: ${known.join(", ")}` : " (there are none)"}`,
        { details: { shell_id: id } },
      );
    }
    return shell;
  }

  list(): BackgroundShell[] {
    return [...this.#shells.values()];
  }

  /**
   * Frees a slot for a new background session when all `cap` are taken: first a finished session
   * (read ones before unread ones, oldest first), then a running one idle for `idleMs`; when every
   * slot holds a running command that is not idle, refuses with ESESSION_CAP naming the cap.
   */
  async makeRoom(): Promise<RoomMade> {
    const made: RoomMade = { evicted: [], reaped: [] };
    while (this.#shells.size >= this.cap) {
      const finished = this.list()
        .filter((s) => s.status !== "running")
        .sort((a, b) => unread(a) - unread(b) || a.lastActivity - b.lastActivity);
      const victim = finished[0];
      if (victim) {
        this.#shells.delete(victim.id);
        made.evicted.push(victim.id);
        void victim.dispose();
        continue;
      }
      const now = Date.now();
      const idle = this.list()
        .filter((s) => now - s.lastActivity >= this.idleMs)
        .sort((a, b) => a.lastActivity - b.lastActivity)[0];
      if (idle) {
        this.#shells.delete(idle.id);
        made.reaped.push(idle.id);
        await idle.dispose();
        continue;
      }
      const cap = this.cap;
      throw new ToolbeltError(
        "ESESSION_CAP",
        `all ${cap} background shell sessions are running (limits.shellMaxSessions = ${cap}); end one with shell_session {"operation":"kill","shell_id":"…"} or raise limits.shellMaxSessions`,
        { details: { cap, sessions: this.list().map((s) => s.id) } },
      );
    }
    return made;
  }

  add(shell: BackgroundShell): void {
    if (this.#closed) throw new ToolbeltError("EUNAVAILABLE", "the session is closing");
    this.#shells.set(shell.id, shell);
  }

  /** Registers a foreground command so a session close ends it too. */
  runningForeground(target: Target): () => void {
    this.#foreground.add(target);
    return () => this.#foreground.delete(target);
  }

  get closed(): boolean {
    return this.#closed;
  }

  async close(): Promise<void> {
    this.#closed = true;
    const endings: Array<Promise<unknown>> = [];
    for (const shell of this.#shells.values()) endings.push(shell.dispose());
    for (const target of this.#foreground) endings.push(terminate(target));
    await Promise.allSettled(endings);
    this.#shells.clear();
    this.#foreground.clear();
    if (this.#tmpdir) {
      rmSync(this.#tmpdir, { recursive: true, force: true });
      liveTmpdirs.delete(this.#tmpdir);
    }
  }
}

function unread(shell: BackgroundShell): number {
  return shell.log.end > shell.readCursor ? 1 : 0;
}
