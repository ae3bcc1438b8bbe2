import type { FileHandle } from "node:fs/promises";
import type { z } from "zod";
import type { AtomicWriteOptions, AtomicWriteResult } from "./atomic-write.js";
import type { EditBackend, Limits, ToolbeltConfig } from "./config.js";
import { type ErrorPayload, ToolbeltError } from "./errors.js";
import type { EventInput } from "./events.js";
import type { ReadLedger } from "./ledger.js";
import type { ResolvedPath } from "./paths.js";
import type { ProcessSlot } from "./process-pool.js";
import type { RuleSubjects } from "./rules.js";
import type { JsonSchema, ToolAnnotations } from "./schema-export.js";
import type { ProcessSlotOptions, Session } from "./session.js";
import type { FileChange, TransactionResult, WriteFilesOptions } from "./transaction.js";
import type { WriteDiagnostics } from "./write-diagnostics.js";

export type Access = "read" | "write" | "execute" | "interact";

/** Every tool result: JSON tagged with `kind`. */
export interface Payload {
  kind: string;
  [field: string]: unknown;
}

export interface ToolRequirements {
  /** A client capability such as `generative_ui` or `ask_user`. */
  capability?: string;
  rootAgentOnly?: boolean;
  actModeOnly?: boolean;
  /** Bound only when the session's workspace mode is `auto`. */
  autoWorkspaceOnly?: boolean;
}

/** The same implementation bound under another name and schema in a profile. */
export interface ProfileVariant {
  name: string;
  description?: string;
  /** The profile's own input schema; when absent the tool's schema is used. */
  input?: z.ZodType;
  /**
   * Maps a validated profile input to the tool's own input (validated again after mapping). `at`
   * resolves paths as the call's tool would, for a variant whose parameters narrow where it may act;
   * a ToolbeltError thrown here is the call's error payload, and nothing runs.
   */
  toInput?: (input: Record<string, unknown>, at: ProfileInputContext) => unknown;
}

/** What a profile variant's `toInput` may use besides the input. */
export interface ProfileInputContext {
  /** Resolves a path inside the root (relative to the session's cwd); throws EPATH_ESCAPE otherwise. */
  resolve(path: string): ResolvedPath;
}

export interface ApprovalRequest {
  summary: string;
  detail?: Record<string, unknown>;
}

export interface WriteResult extends AtomicWriteResult {
  /** Notes appended by afterWrite hooks, for the writing tool to show under its result. */
  notes: string[];
  /** The new diagnostics of the written file, when an afterWrite hook (the lsp family's) checked it. */
  diagnostics?: WriteDiagnostics;
}

/** What a tool's `execute` receives besides its input. */
export interface ToolContext {
  readonly session: Session;
  readonly callId: string;
  readonly signal: AbortSignal;
  readonly root: string;
  readonly cwd: string;
  readonly config: ToolbeltConfig;
  readonly limits: Limits;
  readonly ledger: ReadLedger;
  readonly profile: string;
  /** The name the tool was called by (differs from `name` in a profile). */
  readonly calledAs: string;
  /**
   * Resolves a path inside the root (relative to the session's cwd); throws EPATH_ESCAPE otherwise.
   * For a tool that declares `readsSavedOutput`, the session's saved output files resolve too.
   */
  resolve(path: string): ResolvedPath;
  emit(event: EventInput): void;
  /**
   * Atomic write that invalidates the read ledger and runs afterWrite hooks. Every write is checked
   * as a write by this tool: inside the root (on the real path, at the moment of the rename),
   * `limits.fileWriteMaxBytes`, `tools.*.allowlist`/mode, and an approval for protected paths
   * (EDENIED / ETOO_LARGE / EPATH_ESCAPE are thrown as ToolbeltError).
   */
  writeFile(abs: string, data: string | Uint8Array, options?: AtomicWriteOptions): Promise<WriteResult>;
  /** Runs the checks `writeFile` would run for `bytes` bytes at `abs`, without writing (for multi-file preflight). */
  checkWrite(abs: string, bytes: number): Promise<void>;
  /** Deletes a file inside the root under the same checks as a write (e.g. to undo a file a call created). */
  removeFile(abs: string): Promise<boolean>;
  /**
   * Writes (or removes) several files as one act: every file passes the checks `writeFile` runs
   * before any is written, the call's checkpoint is recorded, then each file is written atomically;
   * if one write fails the others are put back and the error (its code kept) says so. Call it under
   * the files' locks when the new content was computed from the old.
   */
  writeFiles(changes: FileChange[], options?: WriteFilesOptions): Promise<TransactionResult[]>;
  /**
   * Opens a file inside the root for reading such that the path check and the open are one act: a
   * directory swapped for a symlink between them makes the open fail with EPATH_ESCAPE, never read
   * elsewhere. The last component is not followed; FIFOs open without blocking (fstat the handle).
   */
  openFile(abs: string): Promise<FileHandle>;
  /** Runs `fn` while holding the per-file lock (for read-modify-write edits). */
  withFileLock<T>(abs: string, fn: () => Promise<T>): Promise<T>;
  /** Asks the session's permission policy for something beyond the call itself. */
  approve(request: ApprovalRequest): Promise<boolean>;
  /**
   * A slot in the session's process pool for a process the tool is about to start (see
   * Session.processSlot): take it before spawning, release it once the process has exited. The wait
   * ends with the call's signal (ECANCELLED) or after `waitMs` (EBUSY), and the time waited is stated
   * on the call's result as `queued_ms`.
   */
  processSlot(options?: Omit<ProcessSlotOptions, "signal">): Promise<ProcessSlot>;
}

/**
 * A zod schema whose output is `P`: what a tool returns when it succeeds, objects tagged with a
 * literal `kind` (a `z.object`, or a `z.discriminatedUnion("kind", [...])` of them).
 */
export type ToolOutput<P extends { kind: string } = { kind: string }> = z.ZodType & { _zod: { output: P } };

/** What every tool declares besides its output, `execute` and `render`. */
export interface ToolBase<S extends z.ZodType = z.ZodType> {
  name: string;
  description: string;
  input: S;
  /**
   * The input's JSON Schema exactly as models should see it, when it comes from elsewhere (an MCP
   * server's `inputSchema`); `input` still validates calls. Without it the schema is derived from `input`.
   */
  jsonSchema?: JsonSchema;
  /**
   * The result's JSON Schema exactly as clients should see it, when it comes from elsewhere (the
   * tools of a workspace, bound as the toolbelt there declares them); without it, derived from `output`.
   */
  outputJsonSchema?: JsonSchema;
  /** Hints reported with the schema over those derived from `access` (an MCP server's own annotations). */
  annotations?: ToolAnnotations;
  family: string;
  access: Access;
  /** Left out of bind() and found through tool_search when tool search is on. */
  deferrable?: boolean;
  requires?: ToolRequirements;
  /** Marks one of the interchangeable edit backends; a session binds exactly one of them. */
  editBackend?: EditBackend;
  /** Profile name → variant, or `false` to leave the tool out of that profile. */
  profiles?: Record<string, ProfileVariant | false>;
  /** Root-relative or absolute paths the call touches, for allowlists and approval prompts. */
  paths?: (input: z.output<S>) => string[];
  /**
   * A read-only tool (`access: "read"`) whose paths may also name the files the session saved of
   * long command output, outside the root (read_file, search_files): `ctx.resolve` and `paths` then
   * admit exactly those files, read-only, for this session only (`ResolvedPath.outside`).
   */
  readsSavedOutput?: boolean;
  /**
   * For a tool that runs command lines: its simple commands and redirects, judged by permission
   * rules (rules.ts). Called only when rules apply to the tool.
   */
  ruleSubjects?: (input: z.output<S>) => Promise<RuleSubjects>;
}

export interface ToolDefinition<S extends z.ZodType = z.ZodType, P extends { kind: string } = Payload>
  extends ToolBase<S> {
  /**
   * What the tool returns when it succeeds, as a zod schema: `execute` and `render` are typed by it,
   * `session.call()` returns it (or the error payload) once the tool is in `ToolResultMap`, and MCP
   * clients get it as the tool's `outputSchema`. The error payload is always part of the result and
   * is not declared here. Without it the result is the generic `Payload`.
   */
  output?: ToolOutput<P>;
  execute: (input: z.output<S>, ctx: ToolContext) => Promise<P | ErrorPayload> | P | ErrorPayload;
  /** The model-facing text for a payload. */
  render?: (payload: P) => string;
}

/** A tool that declared its `output` (what defineTool returns for one). */
export type ToolWithOutput<S extends z.ZodType, P extends { kind: string }> = ToolDefinition<S, P> & {
  output: ToolOutput<P>;
};

// defineTool's argument when `output` is given: the payload type comes from `output` alone, and
// `execute` must return it (NoInfer keeps execute's return from widening it).
interface ToolWithOutputInput<S extends z.ZodType, P extends { kind: string }> extends ToolBase<S> {
  output: ToolOutput<P>;
  execute: (
    input: z.output<S>,
    ctx: ToolContext,
  ) => Promise<NoInfer<P> | ErrorPayload> | NoInfer<P> | ErrorPayload;
  render?: (payload: NoInfer<P>) => string;
}

/** A tool whose input and payload types are erased, as registries hold them. */
export interface AnyTool {
  name: string;
  description: string;
  input: z.ZodType;
  output?: z.ZodType;
  jsonSchema?: JsonSchema;
  outputJsonSchema?: JsonSchema;
  annotations?: ToolAnnotations;
  family: string;
  access: Access;
  deferrable?: boolean;
  requires?: ToolRequirements;
  editBackend?: EditBackend;
  profiles?: Record<string, ProfileVariant | false>;
  paths?: (input: never) => string[];
  readsSavedOutput?: boolean;
  ruleSubjects?: (input: never) => Promise<RuleSubjects>;
  execute: (input: never, ctx: ToolContext) => Promise<{ kind: string }> | { kind: string };
  render?: (payload: never) => string;
}

/** What a tool's name may be: letters, digits, _ and - (max 64), starting with a letter. */
export const TOOL_NAME = /^[a-zA-Z][a-zA-Z0-9_-]{0,63}$/;

/**
 * Declares a tool. Checks the name once, at definition time. With `output`, `execute` and `render`
 * are typed by it; without it, the payload type is whatever `execute` returns. (`K` is what keeps a
 * returned `kind: "..."` literal rather than widening it to string.)
 */
export function defineTool<S extends z.ZodType, P extends { kind: K }, K extends string>(
  definition: ToolWithOutputInput<S, P>,
): ToolWithOutput<S, P>;
export function defineTool<S extends z.ZodType, P extends { kind: K }, K extends string>(
  definition: ToolDefinition<S, P> & { output?: undefined },
): ToolDefinition<S, P>;
export function defineTool<S extends z.ZodType, P extends { kind: string }>(
  definition: ToolDefinition<S, P>,
): ToolDefinition<S, P> {
  if (!TOOL_NAME.test(definition.name)) {
    throw new ToolbeltError(
      "EPLUGIN",
      `invalid tool name ${JSON.stringify(definition.name)}: letters, digits, _ and - (max 64)`,
    );
  }
  if (definition.readsSavedOutput && definition.access !== "read")
    throw new ToolbeltError(
      "EPLUGIN",
      `tool ${definition.name}: readsSavedOutput is for read-only tools (access "read"), not ${definition.access}`,
    );
  for (const variant of Object.values(definition.profiles ?? {})) {
    if (variant && !TOOL_NAME.test(variant.name))
      throw new ToolbeltError(
        "EPLUGIN",
        `invalid profile tool name ${variant.name} (tool ${definition.name})`,
      );
  }
  return definition;
}

export function asAnyTool<S extends z.ZodType, P extends { kind: string }>(
  tool: ToolDefinition<S, P>,
): AnyTool {
  return tool as unknown as AnyTool;
}
