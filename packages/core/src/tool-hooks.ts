/**
 * Hooks before and after each tool call: SDK functions on the session and commands named in config.
 * A before hook may deny the call (the model reads its message), let it go on without the approval the
 * policy would ask for, or change its input; an after hook may replace the payload or add a note.
 *
 * What a hook cannot do: lift a deny by policy, skip the approval a protected path needs, or hand the
 * tool an input its schema refuses or a path outside the root (the new input goes through validation,
 * path resolution and policy like the model's own). A before hook that fails or overruns denies the
 * call (fail closed); an after hook that fails leaves the payload as it was and says so in a note.
 */
import { existsSync, realpathSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { scrubCommandEnv } from "./command-env.js";
import type { ToolbeltConfig } from "./config.js";
import { type ErrorPayload, errorPayload, ToolbeltError } from "./errors.js";
import { findExecutable } from "./executables.js";
import { trackProcessGroup, untrackProcessGroup } from "./process-tracking.js";
import { isProtectedPath } from "./protected-paths.js";
import type { Session } from "./session.js";
import type { Access, Payload } from "./tool.js";

/** What a hook learns about the call. `input` is in the tool's own schema (after a profile's mapping). */
export interface ToolCallInfo {
  /** The tool's own name (`shell`), whatever the profile calls it. */
  tool: string;
  /** The name the model called it by (`aider_shell_tool` in the mewbo profile). */
  calledAs: string;
  family: string;
  access: Access;
  input: unknown;
  callId: string;
  root: string;
  session: string;
}

export interface AfterToolCallInfo extends ToolCallInfo {
  payload: Payload;
}

/** A before hook's answer: a decision, a new input, or both. Returning nothing means go on. */
export interface BeforeToolCallAnswer {
  decision?: "allow" | "deny";
  /** What the model reads when the call is denied. */
  message?: string;
  /** The input to run with instead, in the tool's own schema. */
  input?: unknown;
}

/** An after hook's answer: a replacement payload, a note for the model, or both. Nothing keeps the payload. */
export interface AfterToolCallAnswer {
  payload?: Payload;
  note?: string;
}

export type BeforeToolCallHook = (
  call: ToolCallInfo,
  signal: AbortSignal,
) => BeforeToolCallAnswer | undefined | void | Promise<BeforeToolCallAnswer | undefined> | Promise<void>;

export type AfterToolCallHook = (
  call: AfterToolCallInfo,
  signal: AbortSignal,
) => AfterToolCallAnswer | undefined | void | Promise<AfterToolCallAnswer | undefined> | Promise<void>;

/** The SDK's `hooks` option. */
export interface ToolCallHooks {
  beforeToolCall?: BeforeToolCallHook[];
  afterToolCall?: AfterToolCallHook[];
}

/** How long an SDK function hook may take before the call is denied (before) or noted (after). */
export const FUNCTION_HOOK_TIMEOUT_MS = 60_000;
export const DEFAULT_COMMAND_HOOK_TIMEOUT_MS = 5_000;
/** The most a command hook may print on stdout (its JSON answer); more is a failed hook. */
export const HOOK_OUTPUT_MAX_BYTES = 1024 * 1024;
/** What of a hook's stderr is kept for messages. */
const HOOK_STDERR_KEEP = 2_000;
/** Exit status a command hook uses to deny, its stderr (or JSON `message`) being the reason. */
export const HOOK_DENY_EXIT = 2;

const hookEntrySchema = z
  .strictObject({
    /** Tool names (own or profile name); `*` for every tool. */
    tools: z.array(z.string()).optional(),
    /** Family names; `*` for every family. */
    families: z.array(z.string()).optional(),
    /** A program (PATH lookup for a bare name, relative paths from the root); run without a shell. */
    command: z.string().min(1),
    args: z.array(z.string()).default([]),
    timeout_ms: z.number().int().positive().max(600_000).default(DEFAULT_COMMAND_HOOK_TIMEOUT_MS),
    /** Shown in messages and doctor; defaults to the command's file name and its first argument's. */
    name: z.string().optional(),
  })
  .refine((e) => e.tools !== undefined || e.families !== undefined, {
    message: 'give "tools" or "families" (["*"] for every tool)',
  });
export type HookEntry = z.infer<typeof hookEntrySchema>;

/** The config's top-level `hooks` key. */
export const toolHooksConfigSchema = z
  .strictObject({
    before: z.array(hookEntrySchema).default([]),
    after: z.array(hookEntrySchema).default([]),
  })
  .default({ before: [], after: [] });
export type ToolHooksConfig = z.infer<typeof toolHooksConfigSchema>;

// Strict: a misspelt key (`decison: "deny"`) must not read as "go on".
const beforeAnswer = z.strictObject({
  decision: z.enum(["allow", "deny"]).optional(),
  message: z.string().optional(),
  input: z.unknown().optional(),
});
const afterAnswer = z.strictObject({
  payload: z.looseObject({ kind: z.string() }).optional(),
  note: z.string().optional(),
});

function answerProblem(error: z.ZodError): string {
  return error.issues
    .map((issue) =>
      issue.code === "unrecognized_keys"
        ? `unknown key ${issue.keys.join(", ")}`
        : `${issue.path.join(".") || "(answer)"}: ${issue.message}`,
    )
    .join("; ");
}

type Stage = "before" | "after";

interface RunnableHook {
  name: string;
  run(info: ToolCallInfo | AfterToolCallInfo, signal: AbortSignal): Promise<unknown>;
}

/** `name`, else the command's file name and its first argument's (`node guard.mjs`). */
export function hookName(entry: HookEntry): string {
  if (entry.name) return entry.name;
  const first = entry.args[0];
  const program = path.basename(entry.command);
  return first && !first.startsWith("-") ? `${program} ${path.basename(first)}` : program;
}

function matches(entry: HookEntry, call: ToolCallInfo): boolean {
  const tools = entry.tools ?? [];
  const families = entry.families ?? [];
  return (
    tools.includes("*") ||
    tools.includes(call.tool) ||
    tools.includes(call.calledAs) ||
    families.includes("*") ||
    families.includes(call.family)
  );
}

/** Config hooks first (in file order), then SDK functions from the root session down to this one. */
function hooksFor(session: Session, stage: Stage, call: ToolCallInfo): RunnableHook[] {
  const out: RunnableHook[] = [];
  const hooks = session.config.hooks;
  for (const entry of hooks?.[stage] ?? []) {
    if (!matches(entry, call)) continue;
    out.push({
      name: hookName(entry),
      run: (info, signal) => runCommandHook(entry, stage, info, session, signal),
    });
  }
  const chain: Session[] = [];
  for (let s: Session | undefined = session; s; s = s.parent) chain.unshift(s);
  for (const s of chain) {
    const fns = stage === "before" ? s.hooks.beforeToolCall : s.hooks.afterToolCall;
    for (const fn of fns)
      out.push({ name: fn.name || "function", run: (info, signal) => runFunctionHook(fn, info, signal) });
  }
  return out;
}

async function runFunctionHook(
  fn: BeforeToolCallHook | AfterToolCallHook,
  info: ToolCallInfo | AfterToolCallInfo,
  signal: AbortSignal,
): Promise<unknown> {
  const controller = new AbortController();
  const onAbort = () => controller.abort(signal.reason);
  signal.addEventListener("abort", onAbort, { once: true });
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      Promise.resolve().then(() => (fn as AfterToolCallHook)(info as AfterToolCallInfo, controller.signal)),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`did not answer within ${FUNCTION_HOOK_TIMEOUT_MS} ms`)),
          FUNCTION_HOOK_TIMEOUT_MS,
        );
        timer.unref?.();
      }),
      new Promise<never>((_, reject) => {
        controller.signal.addEventListener("abort", () => reject(new Error("the call was cancelled")), {
          once: true,
        });
      }),
    ]);
  } finally {
    clearTimeout(timer);
    signal.removeEventListener("abort", onAbort);
    controller.abort();
  }
}

/**
 * Runs one command hook: the call as JSON on stdin, the answer as JSON on stdout. No shell; cwd is
 * the root; the environment is scrubbed like any started command's; time and output are bounded and
 * the whole process group is killed when either runs out (or the call is cancelled).
 */
async function runCommandHook(
  entry: HookEntry,
  stage: Stage,
  info: ToolCallInfo | AfterToolCallInfo,
  session: Session,
  signal: AbortSignal,
): Promise<unknown> {
  const { spawn } = await import("node:child_process");
  const problem = hookCommandProblem(entry.command, entry.args, session.root);
  if (problem) throw new Error(`not run: ${problem}`);
  const env = scrubCommandEnv(process.env, session.config.agent.shell_env ?? {});
  // A bare name is looked up on PATH here, never by spawn: spawn would honour relative PATH entries
  // (".", "node_modules/.bin") against the cwd, the root, and run a file of the checkout unsandboxed.
  const file = entry.command.includes("/")
    ? path.resolve(session.root, entry.command)
    : findExecutable(entry.command, { outside: session.root, env });
  if (file === undefined)
    throw new Error(
      `not run: ${entry.command} is not on PATH outside the root (relative PATH entries and programs inside the root are not used)`,
    );
  return new Promise((resolve, reject) => {
    let settled = false;
    const child = spawn(file, entry.args, {
      cwd: session.root,
      env,
      detached: true,
      stdio: ["pipe", "pipe", "pipe"],
    });
    // If toolbelt itself exits mid-hook, the hook's group goes with it.
    if (child.pid !== undefined) trackProcessGroup(child.pid);
    const chunks: Buffer[] = [];
    let outBytes = 0;
    let stderr = "";
    const killGroup = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
      } catch {
        // Already gone.
      }
    };
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      // Whatever the hook left behind in its group (a backgrounded child holding the pipes) goes too.
      killGroup();
      if (child.pid !== undefined) untrackProcessGroup(child.pid);
      child.stdout?.destroy();
      child.stderr?.destroy();
      fn();
    };
    const fail = (message: string) => finish(() => reject(new Error(message)));
    const timer = setTimeout(
      () => fail(`did not answer within ${entry.timeout_ms} ms (killed)`),
      entry.timeout_ms,
    );
    const onAbort = () => fail("the call was cancelled");
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });

    child.on("error", (error) => fail(`cannot start ${entry.command}: ${error.message}`));
    child.stdout.on("data", (chunk: Buffer) => {
      outBytes += chunk.length;
      if (outBytes > HOOK_OUTPUT_MAX_BYTES) fail(`printed more than ${HOOK_OUTPUT_MAX_BYTES} bytes (killed)`);
      else chunks.push(chunk);
    });
    child.stderr.on("data", (chunk: Buffer) => {
      if (stderr.length < HOOK_STDERR_KEEP) stderr += chunk.toString("utf8");
    });
    // A hook that does not read its stdin must not fail the write with EPIPE.
    child.stdin.on("error", () => {});
    child.stdin.end(`${JSON.stringify({ hook: stage, ...info })}\n`);
    child.on("exit", (code, sig) => {
      // Whatever it left running in its group would hold the pipes open: it goes now.
      killGroup();
      // stdout may still hold data after exit: read it once the pipe is drained.
      const decide = () =>
        finish(() => {
          const out = Buffer.concat(chunks).toString("utf8").trim();
          const reason = stderr.trim().slice(0, HOOK_STDERR_KEEP);
          if (sig) return reject(new Error(`was killed by ${sig}${reason ? `: ${reason}` : ""}`));
          let answer: unknown;
          if (out.startsWith("{")) {
            try {
              answer = JSON.parse(out);
            } catch {
              return reject(new Error(`printed something that is not JSON: ${out.slice(0, 200)}`));
            }
          }
          if (code === HOOK_DENY_EXIT && stage === "before") {
            const message =
              (answer as { message?: unknown } | undefined)?.message ?? (reason || `exited ${code}`);
            return resolve({ decision: "deny", message: String(message) });
          }
          if (code !== 0) return reject(new Error(`exited ${code}${reason ? `: ${reason}` : ""}`));
          resolve(answer);
        });
      if (child.stdout.readableEnded) decide();
      else child.stdout.once("end", decide).once("close", decide);
    });
  });
}

export interface BeforeOutcome {
  /** The refusal to return instead of running the tool. */
  denied?: ErrorPayload;
  /** The input to run with (the hooks' last change, validated). */
  input: unknown;
  /** A hook said `allow`: the policy's `ask` is answered yes (its `deny` and protected paths still hold). */
  allowed: boolean;
  /** The call as hooks saw it last, for the after hooks. */
  call: ToolCallInfo;
}

/** The call's identity, as hooks see it. */
export interface HookedTool {
  name: string;
  tool: { name: string; family: string; access: Access };
}

/**
 * Runs the before hooks in order; the first deny wins. `revalidate` parses a changed input with the
 * tool's schema (throwing EINVAL_INPUT), so what a hook hands on is held to what the model's is.
 */
export async function beforeToolCall(
  session: Session,
  binding: HookedTool,
  input: unknown,
  callId: string,
  revalidate: (input: unknown) => unknown,
  signal: AbortSignal = new AbortController().signal,
): Promise<BeforeOutcome> {
  const call: ToolCallInfo = {
    tool: binding.tool.name,
    calledAs: binding.name,
    family: binding.tool.family,
    access: binding.tool.access,
    input,
    callId,
    root: session.root,
    session: session.id,
  };
  const hooks = hooksFor(session, "before", call);
  let allowed = false;
  for (const hook of hooks) {
    const deny = (message: string): BeforeOutcome => ({
      denied: errorPayload("EDENIED", `${binding.name}: ${message}`, { tool: binding.name, hook: hook.name }),
      input: call.input,
      allowed: false,
      call,
    });
    let raw: unknown;
    try {
      // A copy: a hook that edits the input in place must not slip it past validation.
      raw = await hook.run({ ...call, input: structuredClone(call.input) }, signal);
    } catch (error) {
      return deny(`before hook ${hook.name} failed, so the call was not run: ${(error as Error).message}`);
    }
    if (raw === undefined || raw === null) continue;
    const parsed = beforeAnswer.safeParse(raw);
    if (!parsed.success)
      return deny(
        `before hook ${hook.name} answered something that is not a hook answer (${answerProblem(parsed.error)}), so the call was not run`,
      );
    const answer = parsed.data;
    if (answer.decision === "deny") return deny(answer.message ?? `denied by hook ${hook.name}`);
    if (answer.input !== undefined) {
      try {
        call.input = revalidate(answer.input);
      } catch (error) {
        const message = (error as Error).message;
        throw ToolbeltError.isInstance(error)
          ? new ToolbeltError(error.code, `input from before hook ${hook.name}: ${message}`, {
              details: { ...error.details, hook: hook.name },
            })
          : error;
      }
    }
    if (answer.decision === "allow") allowed = true;
  }
  return { input: call.input, allowed, call };
}

/** Runs the after hooks in order on the payload the tool produced; never throws. */
export async function afterToolCall(
  session: Session,
  call: ToolCallInfo,
  payload: Payload,
  signal: AbortSignal = new AbortController().signal,
): Promise<Payload> {
  const hooks = hooksFor(session, "after", call);
  if (hooks.length === 0) return payload;
  let current = payload;
  const notes: string[] = [];
  for (const hook of hooks) {
    let raw: unknown;
    try {
      raw = await hook.run({ ...call, input: structuredClone(call.input), payload: current }, signal);
    } catch (error) {
      notes.push(`after hook ${hook.name} failed (result kept): ${(error as Error).message}`);
      continue;
    }
    if (raw === undefined || raw === null) continue;
    const parsed = afterAnswer.safeParse(raw);
    if (!parsed.success) {
      notes.push(
        `after hook ${hook.name} answered something that is not a hook answer (${answerProblem(parsed.error)}; ignored)`,
      );
      continue;
    }
    if (parsed.data.payload) current = parsed.data.payload as Payload;
    if (parsed.data.note) notes.push(`${hook.name}: ${parsed.data.note}`);
  }
  return notes.length ? { ...current, hook_notes: notes } : current;
}

/** The model-facing text with the after hooks' notes under it (they are not part of any tool's renderer). */
export function withHookNotes(text: string, payload: Payload): string {
  const notes = payload.hook_notes;
  if (!Array.isArray(notes) || notes.length === 0) return text;
  return `${text}\n\n${notes.map((n) => `[hook] ${String(n)}`).join("\n")}`;
}

/**
 * Why a hook may not run: a program inside the root outside the protected paths (on the path given or
 * its real path) is one any tool or sandboxed command could rewrite, and the hook runs it outside the
 * sandbox. The same holds for an argument naming an existing file there (`node scripts/guard.mjs`).
 * Bare command names are looked up on absolute PATH entries outside the root only (runCommandHook).
 */
export function hookCommandProblem(
  command: string,
  args: readonly string[],
  root: string,
): string | undefined {
  const candidates: string[] = [];
  if (command.includes("/")) candidates.push(command);
  for (const arg of args) candidates.push(...argumentPaths(arg, root));
  let realRoot = root;
  try {
    realRoot = realpathSync(root);
  } catch {
    // The root is checked when the session starts.
  }
  for (const candidate of candidates) {
    const given = path.resolve(root, candidate);
    let real = given;
    try {
      real = realpathSync(given);
    } catch {
      // A missing file fails when it is started, with its own message.
    }
    for (const [abs, base] of [
      [given, path.resolve(root)],
      [real, realRoot],
    ] as const) {
      const rel = path.relative(base, abs);
      if (rel === "" || rel.startsWith("..") || path.isAbsolute(rel)) continue;
      const slashed = rel.split(path.sep).join("/");
      if (!isProtectedPath(slashed))
        return `${slashed} is inside the root and not protected, so a tool could rewrite it; move it under .toolbelt/ (protected) or outside the root`;
    }
  }
  return undefined;
}

/**
 * The existing files an argument names: the argument itself, and every path-like part of it — the
 * value of `--require=./x.cjs`, a `file:` URL, an item of a `a.js,b.js` or `a:b` list, a script named
 * inside `-c "…"` text. A part counts when it looks like a path (has a `/` or a `.`) and exists.
 */
function argumentPaths(arg: string, root: string): string[] {
  const out: string[] = [];
  const exists = (p: string) => existsSync(path.resolve(root, p));
  if (!arg.startsWith("-") && exists(arg)) out.push(arg);
  const text = arg.replace(/file:\/\/(?:localhost)?(\/[^\s,;'"`()<>|&]*)/gi, (_url, p: string) => {
    try {
      return decodeURIComponent(p);
    } catch {
      return p;
    }
  });
  for (const part of text.match(/[^\s=,:;'"`()<>|&{}[\]]+/g) ?? []) {
    if (part === arg || part.startsWith("-") || !/[/.]/.test(part)) continue;
    if (exists(part)) out.push(part);
  }
  return out;
}

export interface HookReport {
  name: string;
  status: "ok" | "unavailable";
  detail: string;
}

/** The configured command hooks, for `toolbelt doctor`, with any that would be refused. */
export function describeHooks(config: ToolbeltConfig, root: string): HookReport[] {
  const hooks = config.hooks;
  const out: HookReport[] = [];
  for (const stage of ["before", "after"] as const) {
    for (const entry of hooks?.[stage] ?? []) {
      const scope = [
        ...(entry.tools ?? []).map((t) => `tool ${t}`),
        ...(entry.families ?? []).map((f) => `family ${f}`),
      ].join(", ");
      const problem = hookCommandProblem(entry.command, entry.args, root);
      out.push({
        name: `${stage} ${hookName(entry)}`,
        status: problem ? "unavailable" : "ok",
        detail: `${[entry.command, ...entry.args].join(" ")} for ${scope} (timeout ${entry.timeout_ms} ms)${problem ? `; refused: ${problem}` : ""}`,
      });
    }
  }
  return out;
}
