import { spawn } from "node:child_process";
import { accessSync, constants as fsConstants } from "node:fs";
import { constants as osConstants } from "node:os";
import path from "node:path";
import { ToolbeltError } from "@toolbelt/core";
import type { PtyModule } from "./pty.js";

export interface ExitStatus {
  code: number | null;
  signal: string | null;
  /** Set when the process could not be started at all. */
  error?: string;
}

export interface LaunchOptions {
  command: string;
  cwd: string;
  env: Record<string, string>;
  /** argv before the shell (the sandbox helper and its rules), or empty. */
  prefix: string[];
  /** Keep a writable stdin (background sessions); otherwise stdin is /dev/null. */
  stdin: boolean;
  /** Run under this pseudo-terminal module instead of pipes. */
  pty?: PtyModule;
  onData: (chunk: Buffer) => void;
}

/** A started command, whichever way it was started. */
export interface Launched {
  readonly pid: number;
  readonly tty: boolean;
  /** Resolves when the command's own process exits (never rejects). */
  readonly exited: Promise<ExitStatus>;
  /** Resolves when no process holds the output open any more (pipes) or with `exited` (pty). */
  readonly drained: Promise<void>;
  /** Whether `write` reaches the command. */
  readonly writable: boolean;
  write(data: string): void;
}

let shellPath: string | undefined;

/** bash where there is one (models write bash), else the POSIX sh. */
export function shell(): string {
  if (shellPath) return shellPath;
  for (const candidate of ["/bin/bash", "/usr/bin/bash", "/bin/sh"]) {
    try {
      accessSync(candidate, fsConstants.X_OK);
      shellPath = candidate;
      return candidate;
    } catch {
      // next
    }
  }
  shellPath = "/bin/sh";
  return shellPath;
}

/**
 * The shell's argv for one command. bash gets `--norc`: a non-interactive bash whose stdin is a
 * socket (a background command's input pipe is a socketpair) or that sees SSH_CLIENT believes sshd
 * started it and sources ~/.bashrc when SHLVL is unset, as it is under CI runners, services and
 * containers. The user's rc file would then run inside every such command (or, confined, print
 * "Permission denied" into its output).
 */
export function shellArgv(command: string): string[] {
  const sh = shell();
  return path.basename(sh) === "bash" ? [sh, "--norc", "-c", command] : [sh, "-c", command];
}

const signalNames = new Map<number, string>(
  Object.entries(osConstants.signals).map(([name, number]) => [number, name]),
);

export function launch(options: LaunchOptions): Launched {
  return options.pty ? launchPty(options, options.pty) : launchPipes(options);
}

function launchPipes(options: LaunchOptions): Launched {
  // stderr joins stdout on the command's own line, so line numbers in error messages stay right; a
  // syntax error that stops the redirection from running still arrives through the stderr pipe.
  const argv = [...options.prefix, ...shellArgv(`exec 2>&1; ${options.command}`)];
  // detached: a new session and process group, so no controlling terminal and one group to kill.
  const child = spawn(argv[0] as string, argv.slice(1), {
    cwd: options.cwd,
    env: options.env,
    detached: true,
    stdio: [options.stdin ? "pipe" : "ignore", "pipe", "pipe"],
  });
  let failure: string | undefined;
  const exited = new Promise<ExitStatus>((resolve) => {
    child.once("error", (error) => {
      failure = error.message;
      resolve({ code: null, signal: null, error: error.message });
    });
    child.once("exit", (code, signal) => resolve({ code, signal }));
  });
  const drained = new Promise<void>((resolve) => {
    child.once("close", () => resolve());
    child.once("error", () => resolve());
  });
  if (child.pid === undefined) {
    // spawn failed synchronously; 'error' follows on the next tick.
    return {
      pid: -1,
      tty: false,
      exited,
      drained,
      writable: false,
      write: () => {},
    };
  }
  child.stdout?.on("data", options.onData);
  child.stderr?.on("data", options.onData);
  child.stdin?.on("error", () => {
    // EPIPE after the command closed its input: the write simply goes nowhere.
  });
  return {
    pid: child.pid,
    tty: false,
    exited,
    drained,
    get writable() {
      return !!child.stdin && !child.stdin.destroyed && failure === undefined;
    },
    write: (data) => {
      child.stdin?.write(data);
    },
  };
}

function launchPty(options: LaunchOptions, pty: PtyModule): Launched {
  const argv = [...options.prefix, ...shellArgv(options.command)];
  let proc: ReturnType<PtyModule["spawn"]>;
  try {
    proc = pty.spawn(argv[0] as string, argv.slice(1), {
      name: options.env.TERM ?? "xterm-256color",
      cols: 160,
      rows: 48,
      cwd: options.cwd,
      env: options.env,
      // Raw bytes, decoded by the caller like pipe output.
      encoding: null,
    });
  } catch (error) {
    throw new ToolbeltError(
      "EUNAVAILABLE",
      `could not start a pseudo-terminal: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  }
  let done = false;
  proc.onData((data) => options.onData(typeof data === "string" ? Buffer.from(data) : data));
  const exited = new Promise<ExitStatus>((resolve) => {
    proc.onExit(({ exitCode, signal }) => {
      done = true;
      const name = signal ? (signalNames.get(signal) ?? String(signal)) : null;
      resolve({ code: name ? null : exitCode, signal: name });
    });
  });
  return {
    pid: proc.pid,
    tty: true,
    exited,
    drained: exited.then(() => undefined),
    get writable() {
      return !done;
    },
    write: (data) => {
      if (!done) proc.write(data);
    },
  };
}
