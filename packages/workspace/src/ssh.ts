import { spawn } from "node:child_process";
import {
  type Channel,
  collect,
  type RunResult,
  Tail,
  type WorkspaceDriver,
  workspaceError,
} from "./driver.js";
import type { SshWorkspace } from "./spec.js";

/** An argument for a POSIX shell: single-quoted, so the remote login shell passes it on as it is. */
export function shellQuote(arg: string): string {
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

// ssh's options for a link that must never wait on a person or on a dead peer: no password or host-key
// prompt (BatchMode), no tty, and a peer that stops answering is given up after a minute.
const LINK_OPTIONS = [
  "-T",
  "-o",
  "BatchMode=yes",
  "-o",
  "ServerAliveInterval=15",
  "-o",
  "ServerAliveCountMax=4",
];

/**
 * An SSH workspace: toolbelt is started on the host by the user's own `ssh` (their keys, config
 * and agent). The remote command line goes through the login shell, every argument quoted.
 */
export class SshDriver implements WorkspaceDriver {
  readonly label: string;
  readonly toolbelt: { command: string[]; how: string };
  readonly #spec: SshWorkspace;

  constructor(spec: SshWorkspace) {
    this.#spec = spec;
    this.label = `ssh ${spec.destination}${spec.port ? ` port ${spec.port}` : ""}`;
    this.toolbelt = spec.command
      ? { command: spec.command, how: "the workspace's command option" }
      : { command: ["toolbelt"], how: "toolbelt on the PATH of a non-interactive ssh session" };
  }

  async start(argv: string[], cwd: string): Promise<Channel> {
    const spec = this.#spec;
    const remote = `cd ${shellQuote(cwd)} && exec ${argv.map(shellQuote).join(" ")}`;
    const args = [
      ...LINK_OPTIONS,
      ...(spec.port ? ["-p", String(spec.port)] : []),
      ...(spec.sshArgs ?? []),
      "--",
      spec.destination,
      remote,
    ];
    const child = spawn(spec.ssh ?? "ssh", args, { stdio: ["pipe", "pipe", "pipe"] });
    const stderr = new Tail();
    child.stderr.on("data", (chunk: Buffer) => stderr.push(chunk));
    // Writes after the far end is gone fail with EPIPE: the channel's end says why, not a crash.
    child.stdin.on("error", () => {});
    const ended = new Promise<{ code?: number | null; reason: string }>((resolve) => {
      child.once("error", (error: NodeJS.ErrnoException) =>
        resolve({
          code: null,
          reason:
            error.code === "ENOENT"
              ? `there is no ${spec.ssh ?? "ssh"} program here`
              : `${spec.ssh ?? "ssh"} failed to start: ${error.message}`,
        }),
      );
      child.once("close", (code, signal) =>
        resolve({
          code,
          reason:
            code === 255
              ? `ssh could not reach or log in to ${spec.destination}`
              : signal
                ? `ssh ended by ${signal}`
                : `the remote command exited (${code})`,
        }),
      );
    });
    await new Promise<void>((resolve, reject) => {
      child.once("spawn", resolve);
      child.once("error", (error) =>
        reject(
          workspaceError(`cannot run ${spec.ssh ?? "ssh"}: ${error.message}`, { workspace: "ssh" }, error),
        ),
      );
    });
    return {
      stdin: child.stdin,
      stdout: child.stdout,
      stderrTail: () => stderr.text,
      ended,
      destroy: () => child.kill("SIGKILL"),
    };
  }

  async run(argv: string[], cwd: string): Promise<RunResult> {
    return collect(await this.start(argv, cwd));
  }

  async close(): Promise<void> {}
}
