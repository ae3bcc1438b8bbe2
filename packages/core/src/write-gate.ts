/**
 * The one write path of a session. Every write, removal and multi-file write, from any tool, plugin
 * or the SDK, is checked here — inside the root on the real path, `limits.fileWriteMaxBytes`, the
 * writer's `tools.*` mode and allowlist, an approval for protected paths — then recorded for
 * checkpoints and written as one transaction, under per-file locks a session shares with its forks.
 */

import { askApproval, type Refusal, type Requester } from "./approval.js";
import { type AtomicWriteOptions, KeyedLock } from "./atomic-write.js";
import { ToolbeltError } from "./errors.js";
import { decide } from "./permissions.js";
import { isProtectedPath, PROTECTED_ALLOW } from "./protected-paths.js";
import type { Session } from "./session.js";
import type { WriteResult } from "./tool.js";
import type { Binding } from "./tool-bindings.js";
import { type FileChange, runTransaction, type WriteFilesOptions } from "./transaction.js";
import type { WriteDiagnostics } from "./write-diagnostics.js";
import { checkWriteSize } from "./write-size.js";

/** What one call's permission check already settled, so its writes are not asked about twice. */
export interface WriteGate {
  who: Requester;
  /** Root-relative paths the call-level decision allowed (or its approver approved) for writing. */
  cleared: Set<string>;
  /** Protected paths approved during this call. */
  protectedOk: Set<string>;
  /** The call whose writes these are, for the checkpoint store. */
  call?: string;
  /** Set for the writes of a checkpoint restore. */
  restoreOf?: string;
}

/** The gate of a call through `binding`, nothing cleared yet. */
export function newGate(binding: Binding): WriteGate {
  return {
    who: {
      name: binding.name,
      tool: binding.tool.name,
      family: binding.tool.family,
      access: binding.tool.access,
    },
    cleared: new Set(),
    protectedOk: new Set(),
  };
}

/** The writer of a write asked for through the SDK or CLI (not by a tool call), judged as core's. */
export function sdkGate(name: string): WriteGate {
  return {
    who: { name, tool: name, family: "core", access: "write" },
    cleared: new Set(),
    protectedOk: new Set(),
  };
}

export function protectedNote(rels: string[]): string {
  return `protected: ${rels.join(", ")} (decides policy or runs code; see PROTECTED_PATHS)`;
}

export function protectedRefusal(name: string, rels: string[], alsoAsk: boolean): Refusal {
  return {
    needs: `${name} wants to write ${rels.join(", ")}, a protected path (it decides policy or runs code), which needs approval,`,
    how: `allow it with --allow ${PROTECTED_ALLOW} (CLI) or allow: ["${PROTECTED_ALLOW}"] (SDK)${alsoAsk ? `, together with --allow for the tool or family` : ""}, or attach an approver`,
  };
}

/** What the write path reads of its session; the root, cwd and config are read at each write. */
type WriteHost = Pick<
  Session,
  | "resolver"
  | "cwd"
  | "config"
  | "allow"
  | "ledger"
  | "hooks"
  | "checkpoints"
  | "openFile"
  | "client"
  | "events"
>;

export class SessionWrites {
  readonly #host: WriteHost;
  /** Per-file locks for read-modify-write edits; a fork shares its parent's. */
  readonly locks: KeyedLock;

  constructor(host: WriteHost, locks: KeyedLock = new KeyedLock()) {
    this.#host = host;
    this.locks = locks;
  }

  withFileLock<T>(abs: string, fn: () => Promise<T>): Promise<T> {
    return this.locks.run(abs, fn);
  }

  /** The checks a write of `bytes` bytes at `abs` by `gate`'s writer must pass; throws EDENIED, ETOO_LARGE, EPATH_ESCAPE. */
  async check(gate: WriteGate, abs: string, bytes: number): Promise<{ abs: string; rel: string }> {
    const host = this.#host;
    const target = host.resolver.resolve(abs, host.cwd);
    await checkWriteSize(gate.who.name, target, bytes, host.config.limits);
    if (!gate.cleared.has(target.rel)) {
      const decision = decide(
        {
          tool: gate.who.tool,
          calledAs: gate.who.name,
          family: gate.who.family,
          access: "write",
          paths: [target.rel],
        },
        host.config,
        host.allow,
      );
      if (decision.mode === "deny") {
        throw new ToolbeltError("EDENIED", `${gate.who.name}: ${decision.reason}`, {
          details: { tool: gate.who.name, path: target.rel },
        });
      }
      if (decision.mode === "ask") {
        const ok = await askApproval(
          host,
          gate.who,
          { path: target.rel },
          { summary: `${gate.who.name}: write ${target.rel}` },
        );
        if (!ok.approved)
          throw new ToolbeltError("EDENIED", ok.message, {
            details: { tool: gate.who.name, path: target.rel },
          });
      }
      gate.cleared.add(target.rel);
    }
    if (
      isProtectedPath(target.rel) &&
      !host.allow.has(PROTECTED_ALLOW) &&
      !gate.protectedOk.has(target.rel)
    ) {
      const ok = await askApproval(
        host,
        gate.who,
        { path: target.rel },
        { summary: `${gate.who.name}: write ${target.rel}\n${protectedNote([target.rel])}` },
        protectedRefusal(gate.who.name, [target.rel], false),
      );
      if (!ok.approved) {
        throw new ToolbeltError("EDENIED", ok.message, {
          details: { tool: gate.who.name, path: target.rel, protected_paths: [target.rel] },
        });
      }
      gate.protectedOk.add(target.rel);
    }
    return target;
  }

  async write(
    gate: WriteGate,
    abs: string,
    data: string | Uint8Array,
    options: AtomicWriteOptions & { tool?: string; locked?: boolean },
  ): Promise<WriteResult> {
    const { tool: _tool, locked: _locked, ...atomic } = options;
    const [result] = await this.writeFiles(gate, [{ abs, data }], atomic);
    return {
      created: result?.created ?? false,
      bytes: result?.bytes ?? 0,
      notes: result?.notes ?? [],
      ...(result?.diagnostics ? { diagnostics: result.diagnostics } : {}),
    };
  }

  /** The one write path: every write, removal and multi-file write is checked, recorded, then written. */
  writeFiles(gate: WriteGate, changes: FileChange[], options: WriteFilesOptions = {}) {
    const host = this.#host;
    return runTransaction(
      {
        root: host.resolver.root,
        check: (abs, bytes) => this.check(gate, abs, bytes),
        openFile: (abs) => host.openFile(abs),
        ledger: host.ledger,
        after: async (file) => {
          const notes: string[] = [];
          let diagnostics: WriteDiagnostics | undefined;
          for (const hook of host.hooks.afterWrite) {
            try {
              const report = await hook({ ...file, tool: gate.who.name });
              if (typeof report === "string" && report) notes.push(report);
              else if (typeof report === "object" && report !== null) diagnostics ??= report.diagnostics;
            } catch {
              // A failing hook (a crashed language server) must not fail a write that already happened.
            }
          }
          return diagnostics ? { notes, diagnostics } : { notes };
        },
        recorder: host.checkpoints.recorder(),
        call: gate.call,
        tool: gate.who.name,
        ...(gate.restoreOf ? { restoreOf: gate.restoreOf } : {}),
      },
      changes,
      options,
    );
  }
}
