import { statSync } from "node:fs";
import path from "node:path";
import {
  defineTool,
  type ProcessSlot,
  type ProfileInputContext,
  ToolbeltError,
  type ToolContext,
  z,
} from "@toolbelt/core";
import { collapseCarriageReturns, stripAnsi } from "./ansi.js";
import { BackgroundShell } from "./background-shell.js";
import { oomKills } from "./cgroup.js";
import { shellRuleSubjects } from "./command-rules.js";
import { networkMode } from "./contrib.js";
import { commandEnvironment, proxyEnvironment } from "./environment.js";
import { HeadTailCapture } from "./head-tail-capture.js";
import { type ExitStatus, type Launched, launch } from "./launch.js";
import { NetworkProxy } from "./network-proxy.js";
import { OutputEvents } from "./output-events.js";
import { OutputSaver, savedOutputFields } from "./output-saver.js";
import { type ShellResult, type ShellStarted, shellResultPayload, shellStartedPayload } from "./payloads.js";
import {
  anythingLeft,
  leftoverProcesses,
  type Target,
  type TerminateResult,
  terminate,
  track,
  untrack,
} from "./process-group.js";
import { type ProtectedLayout, protectedLayout } from "./protected-layout.js";
import { protectedChanges, snapshotProtected } from "./protected-watch.js";
import { loadPty, type PtyModule } from "./pty.js";
import { renderShellResult, renderShellStarted } from "./result-text.js";
import { planSandbox, releaseCgroups, type SandboxPlan } from "./sandbox.js";
import {
  describeWritable,
  noteNetwork,
  reportsDenial,
  sandboxDenials,
  writableSet,
} from "./sandbox-denials.js";
import { ShellState } from "./shell-state.js";

export const DEFAULT_TIMEOUT_SECONDS = 115;

/** After the command exits: how long output may keep arriving before what holds it open is ended. */
const DRAIN_MS = 250;

export const shellInput = z.object({
  command: z
    .string()
    .min(1)
    .refine((c) => !c.includes("\0"), "command must not contain NUL bytes")
    .describe("The command line, run by bash (or sh where bash is missing)."),
  cwd: z
    .string()
    .optional()
    .describe("Working directory, relative to the session's directory; must stay inside the project root."),
  timeout: z
    .number()
    .positive()
    .max(24 * 3600)
    .default(DEFAULT_TIMEOUT_SECONDS)
    .describe(
      "Seconds before the command and everything it started are ended (SIGTERM, then SIGKILL). Not applied to background sessions.",
    ),
  run_in_background: z
    .boolean()
    .default(false)
    .describe(
      "Start the command and return a shell_id at once (dev servers, watchers); use shell_session to read its output, write to it or kill it.",
    ),
  tty: z
    .boolean()
    .default(false)
    .describe(
      "Run under a pseudo-terminal (for programs that insist on one); output keeps its escape codes.",
    ),
});

export type ShellInput = z.output<typeof shellInput>;

const mewboInput = shellInput.extend({
  root: z
    .string()
    .optional()
    .describe("Directory the command runs in and `cwd` is relative to (inside the project root)."),
  cwd: z
    .string()
    .optional()
    .describe(
      "Working directory, relative to `root`; must stay inside `root` (a path validation error otherwise).",
    ),
});

/**
 * mewbo's `root` is where the command runs; a relative `cwd` is taken from there, like the edit tools'
 * paths. The root narrows the project root for the call: a `cwd` that leaves it (`..`, an absolute path
 * elsewhere, a symlink out) is EPATH_ESCAPE even inside the project, judged on real paths.
 */
function mewboToInput(input: Record<string, unknown>, at: ProfileInputContext): Record<string, unknown> {
  const { root, ...rest } = input as z.output<typeof mewboInput>;
  if (typeof root !== "string" || root === "") return rest;
  const cwd = rest.cwd && path.isAbsolute(rest.cwd) ? rest.cwd : path.join(root, rest.cwd ?? ".");
  const base = at.resolve(root);
  const target = at.resolve(cwd);
  if (target.abs !== base.abs && !target.abs.startsWith(`${base.abs}${path.sep}`))
    throw new ToolbeltError("EPATH_ESCAPE", `cwd ${rest.cwd} is outside the call's root ${root}`, {
      details: { cwd: rest.cwd, root },
    });
  return { ...rest, cwd };
}

interface Prepared {
  cwd: { abs: string; rel: string };
  /** The protected paths as they were when the command was planned (bound read-only, then compared). */
  layout: ProtectedLayout;
  tmpdir: string;
  plan: SandboxPlan;
  env: Record<string, string>;
  mark: string;
  pty: PtyModule | undefined;
  /** With agent.shell_network { allow }: the command's proxy (closed when the command is done). */
  proxy: NetworkProxy | undefined;
}

/** Where the command's own 127.0.0.1 leads to the proxy: a port of its fresh namespace, any will do. */
function proxyPort(): number {
  return 20_000 + Math.floor(Math.random() * 40_000);
}

/** The command's proxy when agent.shell_network lists the hosts it may reach. */
async function startProxy(ctx: ToolContext): Promise<NetworkProxy | undefined> {
  const network = networkMode(ctx.config);
  if (network.kind !== "allow") return undefined;
  return NetworkProxy.start({ entries: network.entries, hosts: network.hosts });
}

/** Gives back what `prepare` took when the command does not run after all. */
function unprepare(prep: Pick<Prepared, "plan" | "proxy">): void {
  releaseCgroups(prep.plan);
  void prep.proxy?.close();
}

async function prepare(input: ShellInput, ctx: ToolContext, state: ShellState): Promise<Prepared> {
  const cwd = ctx.resolve(input.cwd ?? ".");
  let isDir = false;
  try {
    isDir = statSync(cwd.abs).isDirectory();
  } catch {
    throw new ToolbeltError("ENOENT", `cwd does not exist: ${input.cwd}`, { details: { cwd: input.cwd } });
  }
  if (!isDir)
    throw new ToolbeltError("ENOTDIR", `cwd is not a directory: ${input.cwd}`, {
      details: { cwd: input.cwd },
    });
  const tmpdir = state.tmpdir();
  const mark = state.nextMark();
  const layout = protectedLayout(ctx.root);
  const proxy = await startProxy(ctx);
  const port = proxyPort();
  let plan: SandboxPlan;
  try {
    plan = planSandbox(ctx.config, {
      root: ctx.root,
      tmpdir,
      mark,
      layout,
      ...(proxy ? { proxy: { socket: proxy.socketPath, port } } : {}),
    });
  } catch (error) {
    void proxy?.close();
    throw error;
  }
  let pty: PtyModule | undefined;
  if (input.tty) {
    const loaded = await loadPty();
    if (!loaded.module) {
      unprepare({ plan, proxy });
      throw new ToolbeltError(
        "EUNAVAILABLE",
        `tty: true needs a pseudo-terminal, and none is available here: ${loaded.detail}`,
        {
          details: { tty: true },
        },
      );
    }
    pty = loaded.module;
  }
  const env = commandEnvironment(state.environment(), {
    tmpdir,
    mark,
    tty: input.tty,
    policy: ctx.config.agent.shell_env,
  });
  if (proxy) Object.assign(env, proxyEnvironment(port));
  return { cwd, layout, tmpdir, plan, env, mark, pty, proxy };
}

function startFailed(status: ExitStatus): ToolbeltError {
  return new ToolbeltError(
    "EUNAVAILABLE",
    `the command could not be started: ${status.error ?? "unknown error"}`,
  );
}

/** Waits for `promise` at most `ms`, leaving no timer behind (a pending timer would hold up exit). */
function within(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  return Promise.race([promise.then(() => undefined), timeout]).finally(() => clearTimeout(timer));
}

async function runForeground(
  input: ShellInput,
  ctx: ToolContext,
  state: ShellState,
  prep: Prepared,
): Promise<ShellResult> {
  const capture = new HeadTailCapture(ctx.limits.shellOutputMaxChars);
  // What the result cannot show is kept on disk, in full (up to the saved-output caps).
  const saver = new OutputSaver(ctx.session.savedOutputs, {
    label: "shell",
    threshold: ctx.limits.shellOutputMaxChars,
  });
  const before = snapshotProtected(ctx.root, prep.layout);
  const started = performance.now();
  // Output streams as shell_output events while the command runs (shell_id: the call's id), so a
  // person watching sees progress, not silence until the end.
  const session = ctx.session;
  const stream = new OutputEvents(
    (data) => {
      if (!session.closed) ctx.emit({ type: "shell_output", shell_id: ctx.callId, data });
    },
    { tty: !!prep.pty, droppedNote: "the result keeps the head and the tail" },
  );
  const launched: Launched = launch({
    command: input.command,
    cwd: prep.cwd.abs,
    env: prep.env,
    prefix: prep.plan.prefix,
    stdin: false,
    ...(prep.pty ? { pty: prep.pty } : {}),
    onData: (chunk) => {
      capture.push(chunk);
      stream.push(chunk);
      saver.push(chunk);
    },
  });
  if (launched.pid < 0) {
    unprepare(prep);
    saver.finish(false);
    throw startFailed(await launched.exited);
  }
  const target: Target = {
    pgid: launched.pid,
    mark: prep.mark,
    cgroup: prep.plan.cgroup,
    memoryCgroup: prep.plan.memoryCgroup,
  };
  track(launched.pid);
  const release = state.runningForeground(target);
  let timedOut = false;
  let cancelled = false;
  let ending: Promise<TerminateResult> | undefined;
  const end = () => {
    ending ??= terminate(target);
    return ending;
  };
  const timer = setTimeout(() => {
    timedOut = true;
    void end();
  }, input.timeout * 1000);
  const onAbort = () => {
    cancelled = true;
    void end();
  };
  ctx.signal.addEventListener("abort", onAbort, { once: true });
  if (ctx.signal.aborted) onAbort();
  let leftovers = 0;
  let memoryKills = 0;
  let status: ExitStatus;
  let durationMs: number;
  try {
    status = await launched.exited;
    durationMs = Math.round(performance.now() - started);
    // Read at once: the watcher removes the cgroup when nothing of the command is left.
    if (prep.plan.memoryCgroup) memoryKills = oomKills(prep.plan.memoryCgroup);
    clearTimeout(timer);
    if (status.error) {
      saver.finish(false);
      throw startFailed(status);
    }
    // Output still in the pipe arrives now; if something the command started keeps the pipe
    // open (or left the group), it is ended: a foreground command leaves nothing behind.
    await within(launched.drained, DRAIN_MS);
    if (ending) await ending;
    else if (anythingLeft(target)) {
      leftovers = leftoverProcesses(target).length;
      await end();
    }
    await within(launched.drained, DRAIN_MS);
  } finally {
    clearTimeout(timer);
    ctx.signal.removeEventListener("abort", onAbort);
    release();
    untrack(launched.pid);
    if (prep.plan.memoryCgroup) memoryKills = Math.max(memoryKills, oomKills(prep.plan.memoryCgroup));
    releaseCgroups(prep.plan);
    await prep.proxy?.close();
    stream.end();
  }
  const output = capture.finish(clean(launched.tty));
  saver.finish(output.elidedBytes > 0);
  const changed = protectedChanges(before, snapshotProtected(ctx.root));
  if (cancelled) {
    throw new ToolbeltError("ECANCELLED", "the call was cancelled; the command's process group was ended");
  }
  const result: ShellResult = {
    kind: "shell_result",
    command: input.command,
    cwd: prep.cwd.rel,
    stdout: output.text,
    exit_code: status.code,
    duration_ms: durationMs,
    output_bytes: output.totalBytes,
    tty: launched.tty,
    sandbox: prep.plan.status,
  };
  if (status.signal) result.signal = status.signal;
  if (timedOut) {
    result.timed_out = true;
    result.timeout_seconds = input.timeout;
  }
  if (output.elidedBytes > 0) result.elided_bytes = output.elidedBytes;
  Object.assign(result, savedOutputFields(saver));
  if (leftovers > 0) result.leftover_processes = leftovers;
  if (prep.plan.reason) result.sandbox_reason = prep.plan.reason;
  if (changed.length) result.protected_changed = changed;
  noteLimits(result, prep.plan, memoryKills, output.text);
  if (prep.plan.status === "landlock" && reportsDenial(output.text)) noteDenials(result, prep, ctx.root);
  noteNetwork(result, prep.plan.network, output.text, prep.proxy?.refused());
  return result;
}

/** How output is cleaned for the result: a pseudo-terminal's keeps its escape codes. */
function clean(tty: boolean): (text: string) => string {
  return tty
    ? (text: string) => collapseCarriageReturns(text)
    : (text: string) => collapseCarriageReturns(stripAnsi(text));
}

/** A line in which a shell or a program reports hitting RLIMIT_FSIZE (SIGXFSZ, or EFBIG). */
const FILE_TOO_LARGE = /File size limit exceeded|File too large/;

/** Says when the command hit its memory or file-size limit, and which setting raises it. */
function noteLimits(result: ShellResult, plan: SandboxPlan, memoryKills: number, output: string): void {
  const limits = plan.limits;
  if (!limits) return;
  const hit: Array<"memory" | "file_size"> = [];
  const notes: string[] = [];
  if (memoryKills > 0) {
    hit.push("memory");
    notes.push(
      `a process was killed for using more than ${limits.memoryMib} MiB of memory (agent.shell_max_memory_mib)`,
    );
  }
  if (result.signal === "SIGXFSZ" || FILE_TOO_LARGE.test(output)) {
    hit.push("file_size");
    notes.push(
      `a file reached the ${limits.fileMib} MiB a command may write to one file (agent.shell_max_file_mib)`,
    );
  }
  if (hit.length === 0) return;
  result.limits_hit = hit;
  result.limit_note = `${notes.join("; ")}; raise it in your own config if the command needs more`;
}

/** Says when a denied write in the output is the sandbox's doing, and what it lets commands write. */
function noteDenials(result: ShellResult, prep: Prepared, root: string): void {
  const set = writableSet(prep.plan.prefix, root, prep.tmpdir);
  const denied = sandboxDenials(result.stdout, prep.cwd.abs, set);
  const where = `sandboxed commands may write only under ${describeWritable(set)}`;
  if (denied.some((d) => d.why === "outside_readable")) {
    result.sandbox_denied = denied;
    result.sandbox_note = `sandboxed commands may read only the root, system and toolchain paths, and ${where.replace("sandboxed commands ", "")} (more with agent.shell_sandbox_read_paths or shell_sandbox_allowed_paths in your own config)`;
  } else if (denied.length) {
    result.sandbox_denied = denied;
    result.sandbox_note = `${where} (more with agent.shell_sandbox_allowed_paths in your own config)`;
  } else {
    result.sandbox_note = `the output reports a refused access; the command ran sandboxed, and ${where}`;
  }
}

async function startBackground(
  input: ShellInput,
  ctx: ToolContext,
  state: ShellState,
  prep: Prepared,
  slot: ProcessSlot,
): Promise<ShellStarted> {
  const room = await state.makeRoom();
  const id = state.nextId();
  const session = ctx.session;
  const shell = new BackgroundShell({
    id,
    command: input.command,
    cwd: prep.cwd.rel,
    mark: prep.mark,
    cgroup: prep.plan.cgroup,
    memoryCgroup: prep.plan.memoryCgroup,
    root: ctx.root,
    layout: prep.layout,
    sandbox: prep.plan.status,
    network: prep.plan.network,
    proxy: prep.proxy,
    tty: !!prep.pty,
    saver: new OutputSaver(ctx.session.savedOutputs, {
      label: id,
      threshold: ctx.limits.shellOutputMaxChars,
    }),
    emit: (data) => {
      if (!session.closed) session.emit({ type: "shell_output", shell_id: id, data });
    },
  });
  const launched = launch({
    command: input.command,
    cwd: prep.cwd.abs,
    env: prep.env,
    prefix: prep.plan.prefix,
    // A pipe that stays open so shell_session can write to the command (a pty is writable anyway).
    stdin: true,
    ...(prep.pty ? { pty: prep.pty } : {}),
    onData: (chunk) => shell.receive(chunk),
  });
  if (launched.pid < 0) {
    unprepare(prep);
    throw startFailed(await launched.exited);
  }
  shell.attach(launched);
  // The command holds its pool slot until it exits (killed, reaped with the session, or done).
  void launched.exited.then(() => slot.release());
  track(launched.pid);
  state.add(shell);
  const result: ShellStarted = {
    kind: "shell_started",
    shell_id: id,
    command: input.command,
    cwd: prep.cwd.rel,
    pid: launched.pid,
    status: shell.status,
    tty: launched.tty,
    sandbox: prep.plan.status,
  };
  if (prep.plan.reason) result.sandbox_reason = prep.plan.reason;
  if (room.evicted.length) result.evicted = room.evicted;
  if (room.reaped.length) result.reaped = room.reaped;
  return result;
}

export const shellTool = defineTool({
  name: "shell",
  family: "shell",
  access: "execute",
  description: [
    "Runs a shell command in the project and returns its output (stdout and stderr merged, in order), exit code and duration.",
    "Non-interactive: stdin is empty and pagers, editors and credential prompts are disabled, so nothing waits for input.",
    "The command and everything it starts end at the timeout (default 115 s) or when it exits; long output keeps its head and tail.",
    "Use run_in_background for servers and watchers, then shell_session to read, write or kill.",
  ].join(" "),
  input: shellInput,
  output: z.discriminatedUnion("kind", [shellResultPayload, shellStartedPayload]),
  profiles: { mewbo: { name: "aider_shell_tool", input: mewboInput, toInput: mewboToInput } },
  ruleSubjects: shellRuleSubjects,
  execute: async (input, ctx): Promise<ShellResult | ShellStarted> => {
    const state = ShellState.of(ctx.session);
    if (state.closed) throw new ToolbeltError("EUNAVAILABLE", "the session is closing");
    // A slot of the process pool, taken before anything is prepared: a foreground command's for the
    // call (its wait bounded by its timeout), a background one's for the command's life.
    const slot = await ctx.processSlot(
      input.run_in_background ? { longLived: true } : { waitMs: input.timeout * 1000 },
    );
    let prep: Prepared | undefined;
    let watch: Awaited<ReturnType<typeof ctx.session.checkpoints.watch>> | undefined;
    try {
      prep = await prepare(input, ctx, state);
      // What a foreground command changed in the root is recorded as a checkpoint (see checkpoints.md).
      if (!input.run_in_background) watch = await ctx.session.checkpoints.watch(ctx.calledAs, ctx.callId);
      return await (input.run_in_background
        ? startBackground(input, ctx, state, prep, slot)
        : runForeground(input, ctx, state, prep));
    } catch (error) {
      // Refused before it started (session cap, spawn failure): its cgroup is empty and goes now.
      if (prep) unprepare(prep);
      slot.release();
      throw error;
    } finally {
      if (!input.run_in_background) slot.release();
      await watch?.finish().catch(() => {});
    }
  },
  render: (payload: ShellResult | ShellStarted) =>
    payload.kind === "shell_result" ? renderShellResult(payload) : renderShellStarted(payload),
});
