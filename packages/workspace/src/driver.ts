import type { Readable, Writable } from "node:stream";
import { ToolbeltError } from "@toolbelt/core";

/**
 * A process running inside the workspace, as a byte stream each way. `ended` settles (never
 * rejects) when the process or the connection to it is gone, with what is known about why.
 */
export interface Channel {
  stdin: Writable;
  stdout: Readable;
  /** The last lines the process wrote to stderr. */
  stderrTail(): string;
  ended: Promise<{ code?: number | null; reason: string }>;
  /** Cuts the connection (the process sees its stdin close; a driver that can also stops it). */
  destroy(): void;
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** How toolbelt gets into a container that has none: the host's Node and installation, mounted read-only. */
export interface HostToolbelt {
  /** This process's Node binary (real path). */
  node: string;
  /** toolbelt's CLI entry (real path), run by that Node. */
  bin: string;
  /** The directory holding the CLI and every package it loads (real path), mounted at the same path. */
  installRoot: string;
}

/** What a backend gives the link: processes started inside the workspace, and its end. */
export interface WorkspaceDriver {
  /** Names the workspace in messages (`docker container web`, `ssh me@box`). */
  readonly label: string;
  /** How toolbelt is started there (argv prefix), and why (for doctor). */
  readonly toolbelt: { command: string[]; how: string };
  /** Starts `argv` in the workspace, working directory `cwd`. */
  start(argv: string[], cwd: string): Promise<Channel>;
  /** Runs `argv` to its end and collects its output (bounded). */
  run(argv: string[], cwd: string): Promise<RunResult>;
  /** Ends what the driver made for the session (a container or pod per session); idempotent. */
  close(): Promise<void>;
}

export function workspaceError(message: string, details: Record<string, unknown> = {}, cause?: unknown) {
  return new ToolbeltError("EWORKSPACE", message, { details, ...(cause !== undefined ? { cause } : {}) });
}

const TAIL_CHARS = 4_000;
const RUN_OUTPUT_CHARS = 1_000_000;

/** Keeps the last characters written to a stream (a crash report needs the end, not all of it). */
export class Tail {
  #text = "";
  constructor(readonly max = TAIL_CHARS) {}
  push(chunk: Buffer | string): void {
    this.#text = (this.#text + chunk.toString()).slice(-this.max);
  }
  get text(): string {
    return this.#text.trim();
  }
}

/** Reads a channel to its end: for short commands (probes, doctor, kill). Output past a bound is cut. */
export async function collect(channel: Channel): Promise<RunResult> {
  const out = new Tail(RUN_OUTPUT_CHARS);
  channel.stdout.on("data", (chunk: Buffer) => out.push(chunk));
  channel.stdin.end();
  const { code } = await channel.ended;
  return { code: code ?? null, stdout: out.text, stderr: channel.stderrTail() };
}

/** The last lines of a stderr tail, on one line, for a message. */
export function lastLines(text: string, lines = 5): string {
  return text.split("\n").slice(-lines).join(" | ");
}
