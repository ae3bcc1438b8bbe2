/**
 * One tool call, from the name the model sent to the payload and text it reads: find the binding,
 * validate the input, run the before hooks, decide the policy (asking when it says ask, and for
 * protected paths), run the tool with its context, run the after hooks, render. Nothing a caller
 * sends makes it throw: every failure becomes an error payload, and `tool_call`/`tool_result` are
 * emitted for each call whatever happens.
 */

import { randomUUID } from "node:crypto";
import { askApproval, summarise } from "./approval.js";
import { type ErrorPayload, errorPayload, normaliseError, ToolbeltError } from "./errors.js";
import type { EventEmitter } from "./events.js";
import type { ResolvedPath } from "./paths.js";
import {
  type Decision,
  decide,
  explainDecision,
  type PolicyExplanation,
  type PolicySubject,
  ruleNote,
  ruleRefusal,
  ruleSubjectsFor,
} from "./permissions.js";
import { withQueueNote } from "./process-pool.js";
import { isProtectedPath, PROTECTED_ALLOW } from "./protected-paths.js";
import { renderPayload } from "./render.js";
import type { CallCheck, CallOptions, Session } from "./session.js";
import type { AnyTool, Payload, ToolContext } from "./tool.js";
import type { Binding } from "./tool-bindings.js";
import { afterToolCall, beforeToolCall, withHookNotes } from "./tool-hooks.js";
import { validate } from "./validate-input.js";
import {
  newGate,
  protectedNote,
  protectedRefusal,
  type SessionWrites,
  type WriteGate,
} from "./write-gate.js";

/**
 * One call. The model-facing text is rendered only when someone reads it (the caller, or a
 * tool_result listener): rendering a large result (thousands of matches) costs as much as finding it.
 */
export async function runCall(
  session: Session,
  writes: SessionWrites,
  name: string,
  input: unknown,
  options: CallOptions,
  wantText: boolean,
): Promise<{ payload: Payload; text?: string }> {
  const callId = options.callId ?? randomUUID();
  // hrtime, not performance.now(): the `performance` global loads node:perf_hooks on first use.
  const started = process.hrtime.bigint();
  const binding = session.bindings().find((b) => b.name === name);
  session.events.emit({ type: "tool_call", call_id: callId, tool: name, input: input ?? null });
  let payload: Payload;
  if (session.closed) {
    payload = errorPayload("EUNAVAILABLE", "the session is closed");
  } else if (!binding) {
    payload = unknownTool(session, name);
  } else if (binding.deferred) {
    payload = deferredTool(name);
  } else {
    // What the tool waited for process slots (ctx.processSlot) is stated on its result.
    const queue = { ms: 0 };
    payload = await run(session, writes, binding, input, callId, queue, options);
    if (queue.ms > 0) payload = { ...payload, queued_ms: queue.ms };
  }
  let text: string | undefined;
  if (wantText || session.events.wants("tool_result")) text = renderResult(payload, binding);
  session.events.emit({
    type: "tool_result",
    call_id: callId,
    tool: name,
    result: payload,
    ...(text === undefined ? {} : { text }),
    duration_ms: Math.round(Number(process.hrtime.bigint() - started) / 1e6),
  });
  return text === undefined ? { payload } : { payload, text };
}

/**
 * One model step: read-only calls run concurrently; a write, execute or interact call waits for
 * everything before it and runs alone. Results come back in the order given.
 */
export async function runStep(
  session: Session,
  calls: Array<{ tool: string; input: unknown; id?: string }>,
): Promise<Payload[]> {
  const results: Payload[] = new Array(calls.length);
  let batch: Array<Promise<void>> = [];
  const access = new Map(session.bindings().map((b) => [b.name, b.tool.access]));
  for (const [index, call] of calls.entries()) {
    const run = async () => {
      results[index] = await session.call(call.tool, call.input, call.id ? { callId: call.id } : {});
    };
    if (access.get(call.tool) === "read") {
      batch.push(run());
      continue;
    }
    await Promise.all(batch);
    batch = [];
    await run();
  }
  await Promise.all(batch);
  return results;
}

/** The model-facing text of a payload: its tool's renderer (the generic one without it), then hook notes. */
export function renderResult(payload: Payload, binding: Binding | undefined): string {
  let text: string;
  try {
    text = withQueueNote(
      withHookNotes(
        renderPayload(payload, binding?.tool.render as ((p: Payload) => string) | undefined),
        payload,
      ),
      payload,
    );
  } catch (error) {
    text = renderPayload(errorPayload("EINTERNAL", `render failed: ${(error as Error).message}`));
  }
  return text;
}

/** What the policy judges of a call: its paths, root-relative, and what its command line does when rules apply. */
async function policySubject(
  session: Session,
  binding: Binding,
  input: unknown,
  resolve: (p: string) => ResolvedPath,
): Promise<PolicySubject> {
  const { tool } = binding;
  const paths = (tool.paths as ((i: unknown) => string[]) | undefined)?.(input) ?? [];
  const resolveRel = (p: string) => resolve(p).rel;
  const rules = await ruleSubjectsFor(tool, binding.name, input, session.config, resolveRel, session.cwd);
  return {
    tool: tool.name,
    calledAs: binding.name,
    family: tool.family,
    access: tool.access,
    paths: paths.map(resolveRel),
    ...(rules ? { rules } : {}),
  };
}

/** The input a binding's tool runs with: the call's input validated (and mapped from a profile's shape). */
function toolInput(binding: Binding, rawInput: unknown, resolve: (p: string) => ResolvedPath): unknown {
  const { tool, variant } = binding;
  const input = validate(variant?.input ?? tool.input, rawInput);
  if (!variant?.toInput) return input;
  return validate(tool.input, variant.toInput(input as Record<string, unknown>, { resolve }));
}

/**
 * What the policy would decide for a call, and why (`toolbelt rules check`), without running it and
 * without its before hooks (they may run code). Throws as a call would fail: unknown tool, bad input.
 */
export async function explainCall(
  session: Session,
  name: string,
  rawInput: unknown,
): Promise<PolicyExplanation> {
  const binding = session.bindings().find((b) => b.name === name);
  if (!binding) {
    const { code, message } = unknownTool(session, name);
    throw new ToolbeltError(code, message);
  }
  const resolve = callResolver(session, binding.tool);
  const subject = await policySubject(session, binding, toolInput(binding, rawInput, resolve), resolve);
  return explainDecision(subject, session.config, session.allow);
}

function unknownTool(session: Session, name: string): ErrorPayload {
  const names = session.bindings().map((b) => b.name);
  const granted = session.granted().find((t) => t.name === name);
  const hint = granted
    ? `${name} is not available in this session (profile, client capability, agent mode or config leaves it out)`
    : `unknown tool ${JSON.stringify(String(name))}`;
  return errorPayload("EUNKNOWN_TOOL", `${hint}; available: ${names.join(", ") || "(none)"}`, {
    tool: name,
  });
}

/** What the permission policy says of one call, before anything runs: what run() acts on and checkCall() reports. */
interface Judgement {
  decision: Decision;
  /** Root-relative real paths the call touches. */
  rels: string[];
  /** Protected paths a write call touches. */
  guarded: string[];
  /** Whether the protected paths need an approval (no `protected` allow). */
  askProtected: boolean;
}

async function judge(
  session: Session,
  binding: Binding,
  input: unknown,
  resolve: (p: string) => ResolvedPath,
): Promise<Judgement> {
  const { tool } = binding;
  const subject = await policySubject(session, binding, input, resolve);
  const rels = subject.paths;
  const decision = decide(subject, session.config, session.allow);
  // Protection is judged on the real paths (a symlink alias of configs/app.json is configs/app.json).
  const guarded = tool.access === "write" ? rels.filter((r) => isProtectedPath(r)) : [];
  const askProtected = guarded.length > 0 && !session.allow.has(PROTECTED_ALLOW);
  return { decision, rels, guarded, askProtected };
}

/** What an approver reads of a call: the command or path, the rule that asks, the protected paths. */
function approvalSummary(binding: Binding, input: unknown, verdict: Judgement): string {
  const summary = summarise(binding.name, input) + ruleNote(verdict.decision);
  return verdict.askProtected ? `${summary}\n${protectedNote(verdict.guarded)}` : summary;
}

/**
 * What the policy would do with a call now, without running it, its hooks, or asking anyone (see
 * `Session.checkCall`). The same steps as a call up to its approval: binding, input, paths, rules.
 */
export async function checkCall(session: Session, name: string, rawInput: unknown): Promise<CallCheck> {
  if (session.closed) return refusal(errorPayload("EUNAVAILABLE", "the session is closed"));
  const binding = session.bindings().find((b) => b.name === name);
  if (!binding) return refusal(unknownTool(session, name));
  if (binding.deferred) return refusal(deferredTool(name));
  try {
    const resolve = callResolver(session, binding.tool);
    const input = toolInput(binding, rawInput, resolve);
    const verdict = await judge(session, binding, input, resolve);
    if (verdict.decision.mode === "deny")
      return refusal(errorPayload("EDENIED", `${binding.name}: ${verdict.decision.reason}`));
    const summary = approvalSummary(binding, input, verdict);
    if (verdict.decision.mode === "ask" || verdict.askProtected)
      return {
        decision: "ask",
        summary,
        ...(verdict.askProtected ? { protected_paths: verdict.guarded } : {}),
      };
    return { decision: "allow", summary };
  } catch (error) {
    return refusal(normaliseError(error).toPayload());
  }
}

function refusal(payload: ErrorPayload): CallCheck {
  return { decision: "deny", summary: payload.message, code: payload.code };
}

function deferredTool(name: string): ErrorPayload {
  return errorPayload(
    "EUNKNOWN_TOOL",
    `${name} is deferred: call tool_search with "select:${name}" to bind it first`,
    { tool: name },
  );
}

async function run(
  session: Session,
  writes: SessionWrites,
  binding: Binding,
  rawInput: unknown,
  callId: string,
  queue: { ms: number },
  options: CallOptions,
): Promise<Payload> {
  const { tool } = binding;
  const signal = options.signal;
  const resolve = callResolver(session, binding.tool);
  // One signal for the whole call: its hooks and the tool see the caller's cancellation alike.
  const controller = new AbortController();
  const onAbort = () => controller.abort(signal?.reason);
  // A signal already aborted never fires "abort": check it first.
  if (signal?.aborted) controller.abort(signal.reason);
  else signal?.addEventListener("abort", onAbort, { once: true });
  try {
    let input = toolInput(binding, rawInput, resolve);
    // Hooks see the tool's own input; what they hand back is validated, resolved and policed below.
    const hooked = await beforeToolCall(
      session,
      binding,
      input,
      callId,
      (i) => validate(tool.input, i),
      controller.signal,
    );
    if (hooked.denied) return hooked.denied;
    input = hooked.input;
    const verdict = await judge(session, binding, input, resolve);
    const { decision, rels, guarded, askProtected } = verdict;
    if (decision.mode === "deny")
      return errorPayload("EDENIED", `${binding.name}: ${decision.reason}`, { tool: binding.name });
    const gate: WriteGate = { ...newGate(binding), call: callId };
    // A hook's allow answers an ask like --allow does: never a firm one (a command line the parser
    // cannot see through while deny rules apply).
    const hookAnswers = hooked.allowed && !(decision.mode === "ask" && decision.verdict?.firm);
    if ((decision.mode === "ask" && !hookAnswers) || askProtected) {
      const ok = await askApproval(
        session,
        gate.who,
        input,
        { summary: approvalSummary(binding, input, verdict) },
        askProtected
          ? protectedRefusal(binding.name, guarded, decision.mode === "ask")
          : ruleRefusal(binding.name, tool.family, decision),
        options.approval,
      );
      if (!ok.approved)
        return errorPayload("EDENIED", ok.message, {
          tool: binding.name,
          ...(askProtected ? { protected_paths: guarded } : {}),
        });
      for (const r of guarded) gate.protectedOk.add(r);
    }
    if (tool.access === "write") for (const r of rels) gate.cleared.add(r);
    try {
      const payload = (await tool.execute(
        input as never,
        toolContext(session, writes, binding, callId, controller.signal, gate, resolve, queue),
      )) as Payload;
      if (typeof payload !== "object" || payload === null || typeof (payload as Payload).kind !== "string") {
        return errorPayload("EINTERNAL", `${binding.name} returned a result without a kind`);
      }
      return await afterToolCall(session, hooked.call, payload, controller.signal);
    } catch (error) {
      // After hooks see what the tool threw too (as its error payload); they never throw themselves.
      return await afterToolCall(session, hooked.call, normaliseError(error).toPayload(), controller.signal);
    }
  } catch (error) {
    return normaliseError(error).toPayload();
  } finally {
    signal?.removeEventListener("abort", onAbort);
  }
}

/**
 * The call's one resolution of each path: the policy judges the paths the tool then acts on. Resolving
 * again in the tool would let a symlink that moves mid-call (in the root, or a link the input names)
 * send the tool to a file the policy never saw, e.g. one a `read(...)` deny rule keeps out. `exists`
 * is as the policy saw it; a tool that creates the file knows it did. A read-only tool that declares
 * `readsSavedOutput` may also name one of the session's saved outputs.
 */
function callResolver(session: Session, tool: AnyTool): (p: string) => ResolvedPath {
  const savedOutput = tool.readsSavedOutput === true && tool.access === "read";
  const seen = new Map<string, ResolvedPath>();
  return (p) => {
    const key = `${session.cwd}\0${p}`;
    const known = seen.get(key);
    if (known) return known;
    const resolved = session.resolvePath(p, { savedOutput });
    seen.set(key, resolved);
    return resolved;
  };
}

/** Who brought `tool` (its plugin, else its family), named when an event it emits is refused. */
function emitterOf(session: Session, tool: AnyTool): EventEmitter {
  const plugin = session.plugins.find((p) => p.tools?.includes(tool));
  if (plugin) return { who: `plugin ${plugin.name}'s tool ${tool.name}`, plugin: plugin.name };
  return { who: `family ${tool.family}'s tool ${tool.name}` };
}

/** What the tool's `execute` receives: the session's state now, and writes through the call's gate. */
function toolContext(
  session: Session,
  writes: SessionWrites,
  binding: Binding,
  callId: string,
  signal: AbortSignal,
  gate: WriteGate,
  resolve: (p: string) => ResolvedPath,
  queue: { ms: number },
): ToolContext {
  const cwd = session.cwd;
  const config = session.config;
  return {
    session,
    callId,
    signal,
    root: session.root,
    cwd,
    config,
    limits: config.limits,
    ledger: session.ledger,
    profile: session.profile,
    calledAs: binding.name,
    resolve,
    emit: (event) => {
      session.events.emit(event, () => emitterOf(session, binding.tool));
    },
    writeFile: (abs, data, options) => writes.write(gate, abs, data, options ?? {}),
    checkWrite: async (abs, bytes) => {
      await writes.check(gate, abs, bytes);
    },
    removeFile: async (abs) => (await writes.writeFiles(gate, [{ abs, remove: true }]))[0]?.removed === true,
    writeFiles: (changes, options) => writes.writeFiles(gate, changes, options),
    openFile: (abs) => session.openFile(abs),
    withFileLock: (abs, fn) => writes.withFileLock(abs, fn),
    processSlot: async (options = {}) => {
      try {
        const slot = await session.processSlot({ signal, ...options });
        queue.ms += slot.waitedMs;
        return slot;
      } catch (error) {
        const waited = ToolbeltError.isInstance(error) ? error.details.queued_ms : undefined;
        if (typeof waited === "number") queue.ms += waited;
        throw error;
      }
    },
    approve: async (request) => {
      const decision = decide(
        { tool: binding.tool.name, family: binding.tool.family, access: binding.tool.access, paths: [] },
        session.config,
        session.allow,
      );
      if (decision.mode === "deny") return false;
      // A person who was asked has the last word; the policy decides only when nobody can be asked.
      if (session.client.approve) return (await askApproval(session, gate.who, undefined, request)).approved;
      return decision.mode === "allow";
    },
  };
}
