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
import { decide, ruleNote, ruleRefusal, ruleSubjectsFor } from "./permissions.js";
import { withQueueNote } from "./process-pool.js";
import { isProtectedPath, PROTECTED_ALLOW } from "./protected-paths.js";
import { renderPayload } from "./render.js";
import type { CallOptions, Session } from "./session.js";
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
    payload = errorPayload(
      "EUNKNOWN_TOOL",
      `${name} is deferred: call tool_search with "select:${name}" to bind it first`,
      {
        tool: name,
      },
    );
  } else {
    // What the tool waited for process slots (ctx.processSlot) is stated on its result.
    const queue = { ms: 0 };
    payload = await run(session, writes, binding, input, callId, queue, options.signal);
    if (queue.ms > 0) payload = { ...payload, queued_ms: queue.ms };
  }
  let text: string | undefined;
  if (wantText || session.events.wants("tool_result")) text = render(payload, binding);
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

function render(payload: Payload, binding: Binding | undefined): string {
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

async function run(
  session: Session,
  writes: SessionWrites,
  binding: Binding,
  rawInput: unknown,
  callId: string,
  queue: { ms: number },
  signal?: AbortSignal,
): Promise<Payload> {
  const { tool, variant } = binding;
  try {
    let input = validate(variant?.input ?? tool.input, rawInput);
    if (variant?.toInput) {
      const at = { resolve: (p: string) => session.resolver.resolve(p, session.cwd) };
      input = validate(tool.input, variant.toInput(input as Record<string, unknown>, at));
    }
    // Hooks see the tool's own input; what they hand back is validated, resolved and policed below.
    const hooked = await beforeToolCall(
      session,
      binding,
      input,
      callId,
      (i) => validate(tool.input, i),
      signal,
    );
    if (hooked.denied) return hooked.denied;
    input = hooked.input;
    const paths = (tool.paths as ((i: unknown) => string[]) | undefined)?.(input) ?? [];
    const rels = paths.map((p) => session.resolver.resolve(p, session.cwd).rel);
    const resolveRel = (p: string) => session.resolver.resolve(p, session.cwd).rel;
    const rules = await ruleSubjectsFor(tool, binding.name, input, session.config, resolveRel, session.cwd);
    const decision = decide(
      {
        tool: tool.name,
        calledAs: binding.name,
        family: tool.family,
        access: tool.access,
        paths: rels,
        rules,
      },
      session.config,
      session.allow,
    );
    if (decision.mode === "deny")
      return errorPayload("EDENIED", `${binding.name}: ${decision.reason}`, { tool: binding.name });
    const gate: WriteGate = { ...newGate(binding), call: callId };
    // Protection is judged on the real paths (a symlink alias of configs/app.json is configs/app.json).
    const guarded = tool.access === "write" ? rels.filter((r) => isProtectedPath(r)) : [];
    const askProtected = guarded.length > 0 && !session.allow.has(PROTECTED_ALLOW);
    // A hook's allow answers an ask like --allow does: never a firm one (a command line the parser
    // cannot see through while deny rules apply).
    const hookAnswers = hooked.allowed && !(decision.mode === "ask" && decision.verdict?.firm);
    if ((decision.mode === "ask" && !hookAnswers) || askProtected) {
      const summary = summarise(binding.name, input) + ruleNote(decision);
      const ok = await askApproval(
        session,
        gate.who,
        input,
        { summary: askProtected ? `${summary}\n${protectedNote(guarded)}` : summary },
        askProtected
          ? protectedRefusal(binding.name, guarded, decision.mode === "ask")
          : ruleRefusal(binding.name, tool.family, decision),
      );
      if (!ok.approved)
        return errorPayload("EDENIED", ok.message, {
          tool: binding.name,
          ...(askProtected ? { protected_paths: guarded } : {}),
        });
      for (const r of guarded) gate.protectedOk.add(r);
    }
    if (tool.access === "write") for (const r of rels) gate.cleared.add(r);
    const controller = new AbortController();
    const onAbort = () => controller.abort(signal?.reason);
    // A signal already aborted never fires "abort": check it first.
    if (signal?.aborted) controller.abort(signal.reason);
    else signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const payload = (await tool.execute(
        input as never,
        toolContext(session, writes, binding, callId, controller.signal, gate, queue),
      )) as Payload;
      if (typeof payload !== "object" || payload === null || typeof (payload as Payload).kind !== "string") {
        return errorPayload("EINTERNAL", `${binding.name} returned a result without a kind`);
      }
      return await afterToolCall(session, hooked.call, payload, controller.signal);
    } catch (error) {
      // After hooks see what the tool threw too (as its error payload); they never throw themselves.
      return await afterToolCall(session, hooked.call, normaliseError(error).toPayload(), controller.signal);
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
  } catch (error) {
    return normaliseError(error).toPayload();
  }
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
    resolve: (p) => session.resolver.resolve(p, session.cwd),
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
