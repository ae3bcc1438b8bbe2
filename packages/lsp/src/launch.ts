import type { FileHandle } from "node:fs/promises";
import type {
  CommandSpec,
  EventInput,
  LaunchPurpose,
  ProcessSlot,
  ProcessSlotOptions,
  ToolbeltConfig,
  TrustInfo,
} from "@toolbelt/core";
import { projectTrust, scrubCommandEnv, UNTRUSTED } from "@toolbelt/core/internal";
import { resolveServerCommand, type ServerSpec } from "./servers.js";

/**
 * What starting a server needs from the session: whether the project is trusted, and its wrappers;
 * and how project files are read (the session's checked open, `limits.fileMaxBytes`).
 */
export interface LaunchHost {
  /** Trust of the project at `root` (the session's root when it was created). */
  readonly trust: TrustInfo;
  readonly root?: string;
  /** `agent.shell_env` here shapes the server's environment as it does the shell's. */
  readonly config?: ToolbeltConfig;
  wrapCommand(spec: CommandSpec, purpose: LaunchPurpose): CommandSpec;
  /** Core's checked open of a file inside the root (Session.openFile); without it, core's openForRead. */
  openFile?(abs: string): Promise<FileHandle>;
  /** The same, synchronously (Session.openFileSync), for the in-process fallback. */
  openFileSync?(abs: string): number;
  /** A slot of the session's process pool (Session.processSlot); without it nothing bounds the servers. */
  processSlot?(options: ProcessSlotOptions): Promise<ProcessSlot>;
  /** The session's events (Session.emit): a server's start is told as `lsp_server` events. */
  emit?(event: EventInput): unknown;
  /** Set once the session closed: nothing is emitted then. */
  readonly closed?: boolean;
}

/** A host for servers started outside a session: untrusted, nothing wraps the command. */
export const STANDALONE_HOST: LaunchHost = {
  trust: UNTRUSTED,
  wrapCommand: (spec) => spec,
};

/**
 * The environment a server starts with: the same scrub as shell commands (no tokens, cloud keys,
 * toolbelt's own settings), plus what its config entry sets — config reaching here is trusted.
 */
function serverEnv(spec: ServerSpec, host: LaunchHost): Record<string, string | undefined> {
  return { ...scrubCommandEnv(process.env, host.config?.agent.shell_env), ...spec.env };
}

/**
 * The process to start for a server: its file resolved without letting PATH reach into an
 * untrusted root, then passed through the session's wrappers (the shell family's sandbox).
 */
export function serverCommand(spec: ServerSpec, root: string, host: LaunchHost): CommandSpec {
  const file = resolveServerCommand(spec, { root, trusted: host.trust.trusted });
  return host.wrapCommand(
    { file, args: [...spec.args], cwd: root, env: serverEnv(spec, host) },
    "language-server",
  );
}

/**
 * The host as seen from one root. The session's trust covers the root it was created for; a project
 * switched into later may run its own servers only when the user trusts it (as switch_project
 * decides for its `lsp` config), never because the first project was trusted.
 */
export function hostForRoot(host: LaunchHost, homeRoot: string | undefined, root: string): LaunchHost {
  const trusted = root === homeRoot ? host.trust.trusted : host.trust.trusted && projectTrust(root).trusted;
  if (trusted === host.trust.trusted) return host;
  return {
    trust: { ...host.trust, trusted, reason: `${root} is not the trusted project ${homeRoot ?? ""}`.trim() },
    ...(host.root !== undefined ? { root } : {}),
    get config() {
      return host.config;
    },
    wrapCommand: (spec, purpose) => host.wrapCommand(spec, purpose),
    ...(host.openFile ? { openFile: host.openFile.bind(host) } : {}),
    ...(host.openFileSync ? { openFileSync: host.openFileSync.bind(host) } : {}),
    ...(host.processSlot ? { processSlot: host.processSlot.bind(host) } : {}),
    ...(host.emit ? { emit: host.emit.bind(host) } : {}),
    get closed() {
      return host.closed;
    },
  };
}
