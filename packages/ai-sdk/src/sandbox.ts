import { existsSync } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { readdir, stat } from "node:fs/promises";
import { constants } from "node:os";
import { isErrorPayload, type Session, ToolbeltError } from "@toolbelt/core";
import { readStreamBounded } from "@toolbelt/core/internal";
import type {
  Experimental_SandboxDirectoryEntry as SandboxDirectoryEntry,
  Experimental_SandboxFileStat as SandboxFileStat,
  Experimental_SandboxProcess as SandboxProcess,
  Experimental_SandboxSession as SandboxSession,
} from "ai";

type RunOptions = Parameters<SandboxSession["run"]>[0];

// What the sandbox reads of the shell family's results (this package does not depend on the family,
// so the session's results are not typed by its tool names here).
interface ShellResult {
  kind: "shell_result";
  stdout: string;
  exit_code: number | null;
  signal?: string;
}
interface ShellStarted {
  kind: "shell_started";
  shell_id: string;
  pid: number;
}
interface ShellSessionView {
  kind: "shell_session";
  output: string;
  cursor: number;
  status: "running" | "exited" | "killed";
  exit_code: number | null;
  signal?: string;
  remaining_characters?: number;
}

/** Calls a tool and returns its result of `kind`; an error payload rejects with its code. */
async function callFor<T extends { kind: string }>(
  session: Session,
  name: string,
  input: unknown,
  kind: T["kind"],
  signal?: AbortSignal,
): Promise<T> {
  const payload = await session.call(name, input, signal ? { signal } : {});
  if (isErrorPayload(payload)) throw new ToolbeltError(payload.code, payload.message);
  if (payload.kind !== kind) throw new ToolbeltError("EINTERNAL", `${name} answered ${payload.kind}`);
  return payload as unknown as T;
}

/** Bytes a `readFile` stream reads at a time. */
const CHUNK = 64 * 1024;
/** The longest shell_session read waits for output (its own bound). */
const READ_WAIT_MS = 30_000;

/**
 * The AI SDK's sandbox interface (`Experimental_SandboxSession`, the `experimental_sandbox` option)
 * backed by a toolbelt session, so tools written against it get toolbelt's guarantees:
 *
 * - commands run through the session's `shell` tool: its permission policy (an `ask` goes to the
 *   session's approver, or is refused with EDENIED when there is none), its Landlock sandbox, its
 *   timeout and process-group cleanup, its events; `spawn` starts it in the background and follows it
 *   with `shell_session`;
 * - files are read through the session's checked opens and written or deleted through its write path
 *   (root, `tools.file` mode and allowlist, size limit, protected paths, checkpoints);
 * - every path resolves against the session's directory at creation and must stay inside the root
 *   (EPATH_ESCAPE), absolute paths included.
 *
 * Where toolbelt differs from the interface, it says so rather than pretending: stdout and stderr
 * arrive merged on `stdout` (`stderr` is empty), long output keeps its head and tail, `env` is refused
 * (commands get toolbelt's controlled environment), `spawn` with `stdin: true` is refused, and deleting
 * through a symbolic link removes the file it points to (the write path judges real paths).
 * Failures reject with a `ToolbeltError` carrying toolbelt's `code`.
 */
export function createToolbeltSandbox(session: Session): SandboxSession {
  const base = session.cwd;
  const resolve = (p: string) => session.resolver.resolve(p, base);

  /** The read policy of files, as read_file's: the root, `tools.file` mode and allowlist. */
  const mayRead = async (p: string, tool: "read_file" | "list_dir") => {
    const check = await session.checkCall(tool, { path: resolve(p).rel });
    if (check.decision !== "allow")
      throw new ToolbeltError(check.decision === "deny" ? check.code : "EDENIED", check.summary);
  };

  /** Opens a file for reading with the check held at the open; null when there is none. */
  const openRead = async (p: string): Promise<FileHandle | null> => {
    await mayRead(p, "read_file");
    try {
      return await session.openFile(resolve(p).abs);
    } catch (error) {
      if ((error as { code?: string }).code === "ENOENT") return null;
      throw error;
    }
  };

  const readAll = async (p: string): Promise<Uint8Array | null> => {
    const handle = await openRead(p);
    if (!handle) return null;
    try {
      if ((await handle.stat()).isDirectory())
        throw new ToolbeltError("EISDIR", `${resolve(p).rel} is a directory`);
      return new Uint8Array(await handle.readFile());
    } finally {
      await handle.close();
    }
  };

  const write = async (p: string, data: string | Uint8Array) => {
    await session.writeFile(resolve(p).abs, data, { tool: "write_file" });
  };

  const cwdOf = (workingDirectory: string | undefined) => resolve(workingDirectory ?? ".").abs;

  // With stdin: true it is refused before anything starts, as the interface asks of an implementation
  // without a closable input.
  function spawn(options: RunOptions & { stdin: true }): Promise<never>;
  function spawn(options: RunOptions & { stdin?: boolean }): Promise<SandboxProcess>;
  async function spawn(options: RunOptions & { stdin?: boolean }): Promise<SandboxProcess> {
    refuseEnv(options.env);
    if (options.stdin)
      throw new ToolbeltError(
        "EINVAL_INPUT",
        "stdin: true is not supported: toolbelt cannot close a background command's input",
      );
    const input = { command: options.command, cwd: cwdOf(options.workingDirectory), run_in_background: true };
    const started = await callFor<ShellStarted>(session, "shell", input, "shell_started");
    return follow(session, started.shell_id, started.pid, options.abortSignal);
  }

  return {
    description: [
      `A toolbelt session in ${session.root}; relative paths start at ${base}, and no path may leave the root.`,
      "Commands run through toolbelt's shell tool: its permission policy, its sandbox and timeout; stdout and stderr arrive merged on stdout, long output as head and tail.",
    ].join(" "),

    run: async (options) => {
      refuseEnv(options.env);
      const input = { command: options.command, cwd: cwdOf(options.workingDirectory) };
      const payload = await callFor<ShellResult>(
        session,
        "shell",
        input,
        "shell_result",
        options.abortSignal,
      );
      return { exitCode: exitCode(payload.exit_code, payload.signal), stdout: payload.stdout, stderr: "" };
    },

    spawn,

    readFile: async (options) => {
      const handle = await openRead(options.path);
      if (!handle) return null;
      return streamOf(handle);
    },
    readBinaryFile: (options) => readAll(options.path),
    readTextFile: async (options) => {
      const bytes = await readAll(options.path);
      if (!bytes) return null;
      const text = new TextDecoder(options.encoding ?? "utf-8").decode(bytes);
      if (options.startLine === undefined && options.endLine === undefined) return text;
      // Lines keep their terminators, so the range reads back exactly as it is in the file.
      const lines = text.split(/(?<=\n)/);
      return lines.slice(Math.max((options.startLine ?? 1) - 1, 0), options.endLine ?? lines.length).join("");
    },

    writeFile: async (options) => {
      await write(options.path, await collect(options.content, session.limits.fileWriteMaxBytes));
    },
    writeBinaryFile: (options) => write(options.path, options.content),
    writeTextFile: async (options) => write(options.path, encode(options.content, options.encoding)),

    stat: async (options): Promise<SandboxFileStat | null> => {
      const target = resolve(options.path);
      await mayRead(options.path, target.rel === "." ? "list_dir" : "read_file");
      if (!target.exists) return null;
      const info = await statHeld(session, target);
      if (!info) return null;
      return { type: info.isFile() ? "file" : info.isDirectory() ? "directory" : "other", size: info.size };
    },

    listDirectory: async (options): Promise<SandboxDirectoryEntry[] | null> => {
      const target = resolve(options.path);
      await mayRead(options.path, "list_dir");
      if (!target.exists) return null;
      const entries = await listHeld(session, target);
      return entries.map((e) => ({
        name: e.name,
        type: e.isSymbolicLink() ? "symlink" : e.isFile() ? "file" : e.isDirectory() ? "directory" : "other",
      }));
    },

    deleteFile: async (options) => session.removeFile(resolve(options.path).abs, { tool: "write_file" }),
  };
}

function refuseEnv(env: Record<string, string> | undefined): void {
  if (env && Object.keys(env).length > 0)
    throw new ToolbeltError(
      "EINVAL_INPUT",
      "env is not supported: toolbelt runs commands in its own controlled environment",
    );
}

/** A command's exit code; ended by a signal, 128 + its number, as a shell reports it. */
function exitCode(code: number | null, signal: string | undefined): number {
  if (code !== null) return code;
  const number = signal ? constants.signals[signal as keyof typeof constants.signals] : undefined;
  return 128 + (number ?? 0);
}

function encode(content: string, encoding: string | undefined): Uint8Array {
  const name = (encoding ?? "utf-8").toLowerCase();
  if (name === "utf-8" || name === "utf8") return new TextEncoder().encode(content);
  if (!Buffer.isEncoding(name))
    throw new ToolbeltError("EINVAL_INPUT", `unknown encoding ${JSON.stringify(encoding)}`);
  return new Uint8Array(Buffer.from(content, name));
}

/** A stream's bytes, refused past `max` (the write limit) without reading the rest. */
async function collect(stream: ReadableStream<Uint8Array>, max: number): Promise<Uint8Array> {
  const bytes = await readStreamBounded(stream, max);
  if (bytes === undefined)
    throw new ToolbeltError("ETOO_LARGE", `the content is over ${max} bytes (limits.fileWriteMaxBytes)`, {
      details: { limit: max },
    });
  return new Uint8Array(bytes);
}

function streamOf(handle: FileHandle): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const buffer = new Uint8Array(CHUNK);
      const { bytesRead } = await handle.read(buffer, 0, CHUNK, null);
      if (bytesRead === 0) {
        await handle.close();
        controller.close();
      } else controller.enqueue(buffer.subarray(0, bytesRead));
    },
    cancel: () => handle.close(),
  });
}

// The root is the anchor every check starts from; anything under it is opened with the check held
// (session.openFile), then listed or measured through that descriptor, so a directory swapped for a
// link between the check and the listing lists nothing outside the root.
const PROC_FD = "/proc/self/fd";

async function statHeld(session: Session, target: { abs: string; rel: string }) {
  if (target.rel === ".") return stat(target.abs);
  const handle = await session.openFile(target.abs).catch((error: { code?: string }) => {
    if (error.code === "ENOENT") return null;
    throw error;
  });
  if (!handle) return null;
  try {
    return await handle.stat();
  } finally {
    await handle.close();
  }
}

async function listHeld(session: Session, target: { abs: string; rel: string }) {
  if (target.rel === ".") return readdir(target.abs, { withFileTypes: true });
  const handle = await session.openFile(target.abs);
  try {
    if (!(await handle.stat()).isDirectory())
      throw new ToolbeltError("ENOTDIR", `${target.rel} is not a directory`);
    const held = `${PROC_FD}/${handle.fd}`;
    return await readdir(existsSync(PROC_FD) ? held : target.abs, { withFileTypes: true });
  } finally {
    await handle.close();
  }
}

/** A background command as a sandbox process: its output read through shell_session until it ends. */
function follow(
  session: Session,
  shellId: string,
  pid: number,
  signal: AbortSignal | undefined,
): SandboxProcess {
  const encoder = new TextEncoder();
  let push: ReadableStreamDefaultController<Uint8Array> | undefined;
  const stdout = new ReadableStream<Uint8Array>({
    start(controller) {
      push = controller;
    },
  });
  const stderr = new ReadableStream<Uint8Array>({ start: (controller) => controller.close() });
  const kill = async () => {
    const out = await session.call("shell_session", { operation: "kill", shell_id: shellId });
    // Killing a command that already ended is no error: kill is idempotent.
    if (isErrorPayload(out) && out.code !== "ENOENT" && !/is (exited|killed)/.test(out.message))
      throw new ToolbeltError(out.code, out.message);
  };
  const onAbort = () => {
    void kill().catch(() => {});
  };
  signal?.addEventListener("abort", onAbort, { once: true });
  const ended = (async () => {
    let cursor = 0;
    try {
      for (;;) {
        const read = { operation: "read", shell_id: shellId, cursor, wait_ms: READ_WAIT_MS };
        const view = await callFor<ShellSessionView>(session, "shell_session", read, "shell_session");
        if (view.output) push?.enqueue(encoder.encode(view.output));
        cursor = view.cursor;
        if (view.status !== "running" && !view.remaining_characters) {
          push?.close();
          return { exitCode: exitCode(view.exit_code, view.signal) };
        }
      }
    } catch (error) {
      push?.error(error);
      throw error;
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
  })();
  // wait() is optional for a caller that only reads stdout: its rejection must not go unhandled.
  ended.catch(() => {});
  return {
    pid,
    stdout,
    stderr,
    wait: async () => {
      const result = await ended;
      if (signal?.aborted) throw signal.reason;
      return result;
    },
    kill,
  };
}
