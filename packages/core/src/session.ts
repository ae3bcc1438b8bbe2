/**
 * A session: one agent's tools in one root. The facade over the modules that do the work:
 * tool-bindings.ts (which tools are bound or deferred, tool_search), call-pipeline.ts (validate,
 * policy, hooks, run, render) and write-gate.ts (every write checked, locked, recorded, written).
 * Here: the session's state (root, cwd, config, ledger, family state, skills) and its life
 * (setup, fork, project switch, close).
 */

import { randomUUID } from "node:crypto";
import { closeSync, fstatSync, realpathSync } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import path from "node:path";
import type { AtomicWriteOptions, KeyedLock } from "./atomic-write.js";
import { checkCall, renderResult, runCall, runStep } from "./call-pipeline.js";
import { type RemoteCheckpoints, SessionCheckpoints } from "./checkpoint-api.js";
import {
  type EditBackend,
  type Limits,
  parseConfig,
  type ToolbeltConfig,
  type ToolbeltConfigInput,
} from "./config.js";
import { type GatheredContributions, gatherContributions } from "./contribution-set.js";
import type { Contributions } from "./contributions.js";
import { type ErrorCode, ToolbeltError } from "./errors.js";
import { type EventInput, type EventOf, EventStream, type EventType, type ToolbeltEvent } from "./events.js";
import type { CommandSpec, CommandWrapper, LaunchPurpose } from "./launch.js";
import { ReadLedger } from "./ledger.js";
import { PathResolver, type ResolvedPath } from "./paths.js";
import { checkToolKeys } from "./permissions.js";
import { checkPlugin, type Plugin, type Skill } from "./plugin.js";
import { defaultProcessPool, type ProcessPool, type ProcessSlot } from "./process-pool.js";
import type { ToolResultFor } from "./results.js";
import { checkRuleExamples } from "./rules.js";
import { openForRead, openForReadSync } from "./safe-open.js";
import { SavedOutputs, sweepSavedOutputs } from "./saved-outputs.js";
import { releaseJournal, sweepJournals } from "./temp-files.js";
import { type AnyTool, asAnyTool, type Payload, type WriteResult } from "./tool.js";
import { type Binding, type BindResult, ToolBindings } from "./tool-bindings.js";
import type { AfterToolCallHook, BeforeToolCallHook, ToolCallHooks } from "./tool-hooks.js";
import { type TrustInfo, UNTRUSTED } from "./trust.js";
import { undoTool } from "./undo-tool.js";
import type { WriteDiagnostics } from "./write-diagnostics.js";
import { newGate, SessionWrites, sdkGate } from "./write-gate.js";

export type { Binding, BindResult } from "./tool-bindings.js";

export interface ApprovalPrompt {
  request_id: string;
  tool: string;
  family: string;
  access: string;
  summary: string;
  input?: unknown;
}

/**
 * What the client attached to a session can do. Families add the client functions their tools call
 * by augmenting this interface (the ui family adds `ask`, for ask_user_question).
 */
export interface ClientInfo {
  name?: string;
  /** e.g. `ask_user`, `generative_ui`. */
  capabilities?: string[];
  /** Answers `ask` permission decisions; without it `ask` is EDENIED. */
  approve?: (prompt: ApprovalPrompt) => Promise<boolean>;
}

export interface SessionOptions {
  root: string;
  /** A parsed config or a config object to validate; defaults to an empty config. */
  config?: ToolbeltConfig | ToolbeltConfigInput;
  client?: ClientInfo;
  /** The model id, which picks the edit backend unless `agent.edit_tool` pins one. */
  model?: string;
  plugins?: Plugin[];
  /** `default`, `mewbo`, `mouaif`, or any profile a tool declares. */
  profile?: string;
  /** Tool or family names whose `ask` becomes `allow` (the CLI's `--allow`). */
  allow?: Iterable<string>;
  mode?: "act" | "plan";
  id?: string;
  /** Whether the project's own files may loosen policy or run code (default: not trusted). */
  trust?: TrustInfo;
  /** Functions run before/after every tool call (see tool-hooks.ts); forks run their parent's too. */
  hooks?: ToolCallHooks;
  /**
   * Config keys, events and tool names of families this session does not load but whose config it
   * accepts (createToolbelt passes every built-in family's); loaded plugins' are added anyway.
   */
  contributions?: readonly Contributions[];
  /**
   * The bound on the processes this session's tools start, shared with the other sessions given the
   * same pool (forks use their parent's). Default: the process's own pool (`defaultProcessPool()`).
   */
  processPool?: ProcessPool;
  /**
   * Checkpoints kept elsewhere (a workspace's, recorded by the toolbelt there): `checkpoints` lists,
   * diffs and restores through them, and this session records none of its own (forks share them).
   */
  checkpoints?: RemoteCheckpoints;
}

/** What {@link Session.processSlot} is asked. */
export interface ProcessSlotOptions {
  /** The process outlives the call (a background shell, a language server): it takes a long-lived slot. */
  longLived?: boolean;
  /** The call's signal: aborting it gives up the wait. */
  signal?: AbortSignal;
  /** The longest wait, usually the call's own timeout; the pool's `maxWaitMs` when absent. */
  waitMs?: number;
}

export interface CallOptions {
  signal?: AbortSignal;
  callId?: string;
  /**
   * An approval a person already gave for this call through the caller's own approval flow (for
   * example the AI SDK's tool approvals, after `checkCall` answered `ask`). Whatever the policy would
   * ask about for this call — a rule's or the mode's `ask`, a protected path — is answered by it
   * instead of the client's approver, so nobody is asked twice; `approval_requested` and
   * `approval_resolved` (with `by`) are still emitted. A `deny` stays a refusal. It covers this call's
   * own policy question only: a tool's `ctx.approve` and writes to paths the call did not declare are
   * asked as usual.
   */
  approval?: GrantedApproval;
}

/** An approval given outside toolbelt (see `CallOptions.approval`). */
export interface GrantedApproval {
  /** Who approved, as `approval_resolved.by` reports it (e.g. `"ai-sdk"`, a user name). */
  by: string;
}

/**
 * What the permission policy would do with a call now (`Session.checkCall`), nothing run and nobody
 * asked: `allow` runs it; `ask` needs a person's approval (the caller's own approval flow, then
 * `call(..., { approval })`, or the client's approver); `deny` refuses it before it runs — the policy
 * (`EDENIED`), an unknown or deferred tool, an invalid input or a path outside the root (`code`).
 */
export type CallCheck =
  | { decision: "allow"; summary: string }
  | {
      decision: "ask";
      /** What an approver reads: the command or path (escaped), the rule that asks, the protected paths. */
      summary: string;
      /** Protected paths the call would write, when they are (part of) why it asks. */
      protected_paths?: string[];
    }
  | { decision: "deny"; summary: string; code: ErrorCode };

export interface CallOutcome<P extends { kind: string } = Payload> {
  payload: P;
  text: string;
}

export interface AfterWriteInfo {
  abs: string;
  rel: string;
  tool: string;
  /** Whether the write created the file. */
  created: boolean;
  /**
   * The file's bytes before this write, when the write path had them (an edit's, or the checkpoint's
   * before-image); undefined for a created file or when they were not kept.
   */
  before: Uint8Array | undefined;
}

/**
 * What an afterWrite hook adds to the write's result: a note (text the writing tool shows under
 * its result), or the new diagnostics of the written file (a structured field of the result).
 */
export type AfterWriteReport = string | { diagnostics: WriteDiagnostics } | undefined;

type AfterWriteHook = (info: AfterWriteInfo) => Promise<AfterWriteReport> | AfterWriteReport;

let sessionCounter = 0;

// Handed from fork() to the constructor it calls right away; matched by the options object, so no
// caller can pass a parent, held tools or shared locks through `new Session`.
let pendingFork:
  | { options: SessionOptions; parent: Session; cwd: string; tools: ToolBindings; locks: KeyedLock }
  | undefined;

export class Session {
  readonly id: string;
  readonly events: EventStream;
  readonly ledger = new ReadLedger();
  readonly client: ClientInfo;
  readonly model: string | undefined;
  readonly profile: string;
  readonly parent: Session | undefined;
  readonly mode: "act" | "plan";
  readonly allow: ReadonlySet<string>;
  readonly trust: TrustInfo;
  readonly processPool: ProcessPool;
  readonly hooks = {
    afterWrite: new Set<AfterWriteHook>(),
    userMessage: new Set<(text: string) => void>(),
    /** Rewrites processes families start (the shell family's sandbox registers one). */
    wrapCommand: new Set<CommandWrapper>(),
    /** Run in order before each call (after config hooks): may deny, allow an ask, or change the input. */
    beforeToolCall: [] as BeforeToolCallHook[],
    /** Run in order on each payload a tool produced: may replace it or add a note. */
    afterToolCall: [] as AfterToolCallHook[],
  };

  #config: ToolbeltConfig;
  #resolver: PathResolver;
  #cwd: string;
  readonly #plugins: Plugin[];
  readonly #tools: ToolBindings;
  readonly #writes: SessionWrites;
  readonly #state = new Map<string, unknown>();
  readonly #closers: Array<() => Promise<void> | void> = [];
  readonly #skills = new Map<string, Skill>();
  #closed = false;
  readonly #contributions: GatheredContributions;
  #setup: Promise<void> | undefined;
  #checkpoints: SessionCheckpoints | undefined;
  readonly #remoteCheckpoints: RemoteCheckpoints | undefined;
  #savedOutputs: SavedOutputs | undefined;
  #forks = 0;

  constructor(options: SessionOptions) {
    // A fork's internals (parent, held tools, shared locks) come only through fork(), never from callers.
    const internal = pendingFork;
    pendingFork = undefined;
    const fork = internal?.options === options ? internal : undefined;
    this.id =
      options.id ??
      (fork
        ? `${fork.parent.id}.${++fork.parent.#forks}`
        : `s${++sessionCounter}-${randomUUID().slice(0, 8)}`);
    this.#plugins = (options.plugins ?? []).map((p) => checkPlugin(p));
    this.#contributions = fork
      ? fork.parent.#contributions
      : gatherContributions(this.#plugins, options.contributions);
    this.events = new EventStream(this.id, this.#contributions.events);
    this.#config = isParsedConfig(options.config)
      ? options.config
      : parseConfig(options.config ?? {}, "config", this.#contributions.config);
    this.#resolver = new PathResolver(options.root);
    this.#cwd = fork?.cwd ?? this.#resolver.root;
    this.client = options.client ?? {};
    this.model = options.model;
    this.profile = options.profile ?? "default";
    this.parent = fork?.parent;
    this.mode = options.mode ?? this.#config.agent.mode ?? "act";
    this.allow = new Set(options.allow ?? []);
    this.trust = options.trust ?? fork?.parent.trust ?? UNTRUSTED;
    this.processPool = options.processPool ?? fork?.parent.processPool ?? defaultProcessPool();
    this.#remoteCheckpoints = options.checkpoints ?? (fork ? fork.parent.#remoteCheckpoints : undefined);
    // A fork holds at most the tools its parent holds now, and knows what the parent registered and discovered.
    this.#tools = new ToolBindings(
      this,
      fork ? { tools: fork.tools, held: fork.tools.heldNow() } : undefined,
    );
    this.#writes = new SessionWrites(this, fork?.locks);
    for (const plugin of this.#plugins)
      for (const skill of plugin.skills ?? []) this.#skills.set(skill.name, skill);
    this.hooks.beforeToolCall.push(...(options.hooks?.beforeToolCall ?? []));
    this.hooks.afterToolCall.push(...(options.hooks?.afterToolCall ?? []));
  }

  get root(): string {
    return this.#resolver.root;
  }
  get cwd(): string {
    return this.#cwd;
  }
  get config(): ToolbeltConfig {
    return this.#config;
  }
  get limits(): Limits {
    return this.#config.limits;
  }
  get resolver(): PathResolver {
    return this.#resolver;
  }
  get isRoot(): boolean {
    return this.parent === undefined;
  }
  get closed(): boolean {
    return this.#closed;
  }
  get plugins(): readonly Plugin[] {
    return this.#plugins;
  }
  get skills(): Skill[] {
    return [...this.#skills.values()];
  }

  addSkills(skills: Skill[]): void {
    for (const skill of skills) this.#skills.set(skill.name, skill);
  }

  /** Per-session state owned by a family (shell sessions, todos, lsp clients...). */
  state<T>(key: string, init: () => T): T {
    if (!this.#state.has(key)) this.#state.set(key, init());
    return this.#state.get(key) as T;
  }

  /** Runs when the session closes (in reverse order of registration). */
  onClose(fn: () => Promise<void> | void): void {
    this.#closers.push(fn);
  }

  on<T extends EventType | "*">(
    type: T,
    fn: (event: T extends EventType ? EventOf<T> : ToolbeltEvent) => void,
  ): () => void {
    return this.events.on(type, fn);
  }

  emit(event: EventInput): ToolbeltEvent {
    return this.events.emit(event);
  }

  /** Passes a process about to start through every registered wrapper (the sandbox, for one). */
  wrapCommand(spec: CommandSpec, purpose: LaunchPurpose): CommandSpec {
    let out = spec;
    for (const wrap of this.hooks.wrapCommand) out = wrap(out, purpose);
    return out;
  }

  /**
   * A slot in the process pool for a process this session is about to start: wait for it before
   * spawning, release it once the process has exited. Requests wait in this session's queue (a
   * fork's in its parent's), served round-robin with other sessions'. Rejects with EBUSY when the
   * wait runs out, ECANCELLED when `signal` aborts. A tool asks through `ctx.processSlot`, which
   * also states the wait on the call's result.
   */
  processSlot(options: ProcessSlotOptions = {}): Promise<ProcessSlot> {
    let owner: Session = this;
    while (owner.parent) owner = owner.parent;
    return this.processPool.acquire({ ...options, owner: owner.id });
  }

  /** Tells the session a new user message arrived (supersedes pending questions). */
  userMessage(text: string): void {
    for (const hook of this.hooks.userMessage) hook(text);
  }

  // ---- the tool set (tool-bindings.ts) ----

  /** Every tool the session was granted, whatever is bound now. */
  granted(): AnyTool[] {
    return this.#tools.granted();
  }

  /** Adds tools from a source (an MCP server, an attached client); replaces that source's previous set. */
  registerTools(source: string, tools: AnyTool[]): void {
    this.#tools.register(source, tools);
  }

  unregisterTools(source: string): void {
    this.#tools.unregister(source);
  }

  editBackend(): EditBackend {
    return this.#tools.editBackend();
  }

  /** The tools of this session now, under their profile names, each marked deferred or bound. */
  bindings(): Binding[] {
    return this.#tools.all();
  }

  /** The schemas to send to the model now; deferred tools by name only. */
  bind(): BindResult {
    return this.#tools.bind();
  }

  /** Marks deferred tools as discovered, so the following calls can use them. */
  discover(names: string[]): string[] {
    return this.#tools.discover(names);
  }

  get discovered(): ReadonlySet<string> {
    return this.#tools.discovered;
  }

  /**
   * Searches the deferrable tools this session was granted: those still deferred and those already
   * discovered (so asking again for a bound tool returns its schema instead of nothing).
   */
  searchTools(query: string, limit = 5): Binding[] {
    return this.#tools.search(query, limit);
  }

  // ---- calls (call-pipeline.ts) ----

  /**
   * Calls a tool by the name the model sees; never throws for anything the caller sends. The result is
   * typed by the name (`ToolResultMap`): narrow it by `kind`. A name only known at run time gives `Payload`.
   */
  async call<N extends string>(
    name: N,
    input: unknown,
    options: CallOptions = {},
  ): Promise<ToolResultFor<N>> {
    return (await runCall(this, this.#writes, name, input, options, false)).payload as ToolResultFor<N>;
  }

  /** Like call(), also returning the model-facing text. */
  async callWithText<N extends string>(
    name: N,
    input: unknown,
    options: CallOptions = {},
  ): Promise<CallOutcome<ToolResultFor<N>>> {
    return (await runCall(this, this.#writes, name, input, options, true)) as CallOutcome<ToolResultFor<N>>;
  }

  /**
   * The model-facing text of a result of tool `name` (its bound name), exactly as `callWithText` gives
   * it: for a result kept as JSON (a transcript, a UI message) whose text is needed again. The inverse of
   * `parseToolText`. A name the session does not know renders with the generic form.
   */
  renderResult(name: string, payload: Payload): string {
    return renderResult(
      payload,
      this.bindings().find((b) => b.name === name),
    );
  }

  /**
   * What the permission policy would do with this call now, without running it or asking anyone: the
   * same checks as `call` up to its approval (tool, input, paths, rules, protected paths). The session's
   * `beforeToolCall` hooks are not run, so a hook that would allow or deny is not seen here; the call
   * itself still runs them. A dry run for front-ends with an approval flow of their own.
   */
  checkCall(name: string, input: unknown): Promise<CallCheck> {
    return checkCall(this, name, input);
  }

  /**
   * One model step: read-only calls run concurrently; a write, execute or interact call waits for
   * everything before it and runs alone. Results come back in the order given.
   */
  step(calls: Array<{ tool: string; input: unknown; id?: string }>): Promise<Payload[]> {
    return runStep(this, calls);
  }

  // ---- files (write-gate.ts, safe-open.ts) ----

  /**
   * The atomic write path every family uses. Enforces, for every write whoever asks: the root (on
   * the real path, held to the moment of the rename), `limits.fileWriteMaxBytes`, the writer's
   * `tools.*.allowlist`/mode, and an approval for protected paths. Invalidates the ledger and runs
   * afterWrite hooks. `tool` names the writer (its bound name) for policy and prompts.
   */
  async writeFile(
    abs: string,
    data: string | Uint8Array,
    options: AtomicWriteOptions & { tool?: string; locked?: boolean } = {},
  ): Promise<WriteResult> {
    const binding = options.tool ? this.bindings().find((b) => b.name === options.tool) : undefined;
    const gate = binding ? newGate(binding) : sdkGate(options.tool ?? "writeFile");
    return this.#writes.write(gate, abs, data, options);
  }

  /**
   * Long command output this session saved (see saved-outputs.ts): files outside the root that its
   * read-only tools may read, removed when the session closes.
   */
  get savedOutputs(): SavedOutputs {
    this.#savedOutputs ??= new SavedOutputs(() => this.#config.limits);
    return this.#savedOutputs;
  }

  /**
   * Resolves a path as a tool's input names it: inside the root (relative to the cwd), or, with
   * `savedOutput` (read-only tools that declare `readsSavedOutput`), one of this session's saved
   * output files. Anything else is EPATH_ESCAPE.
   */
  resolvePath(input: string, options: { savedOutput?: boolean } = {}): ResolvedPath {
    return this.#resolver.resolve(input, this.#cwd, options.savedOutput ? this.#savedOutputs : undefined);
  }

  /**
   * Removes a file through the same write path as `writeFile` (root, the writer's `tools.*` mode and
   * allowlist, an approval for protected paths), recorded for checkpoints so it can be undone. Like every
   * write it is judged on the real path: through a symbolic link, the file it points to is removed. A
   * directory is refused. True when a file was there.
   */
  async removeFile(abs: string, options: { tool?: string } = {}): Promise<boolean> {
    const binding = options.tool ? this.bindings().find((b) => b.name === options.tool) : undefined;
    const gate = binding ? newGate(binding) : sdkGate(options.tool ?? "removeFile");
    const [result] = await this.#writes.writeFiles(gate, [{ abs, remove: true }]);
    return result?.removed === true;
  }

  /**
   * Opens a file inside the root (or one of the session's saved outputs) for reading, so that the
   * check and the open are one act (see safe-open.ts). `abs` is a path as the call resolved it
   * (`ctx.resolve(p).abs`): it is opened as it is, following no symbolic link on the way, so a file or
   * directory swapped for a link since the policy judged the path is refused (EPATH_ESCAPE), never
   * read through.
   */
  async openFile(abs: string): Promise<FileHandle> {
    const target = this.#openTarget(abs);
    const handle = await openForRead(target.abs, { root: target.within }).catch((error: unknown) => {
      throw linkRefusal(error, target.abs);
    });
    if (target.outside) {
      try {
        this.savedOutputs.verify(target.abs, await handle.stat());
      } catch (error) {
        await handle.close();
        throw error;
      }
    }
    return handle;
  }

  /**
   * openFile's checks and open, synchronously: a bare descriptor the caller closes (closeSync). For
   * reading a small file at once, where a FileHandle's asynchronous open and close cost more than the read.
   */
  openFileSync(abs: string): number {
    const target = this.#openTarget(abs);
    let fd: number;
    try {
      fd = openForReadSync(target.abs, { root: target.within });
    } catch (error) {
      throw linkRefusal(error, target.abs);
    }
    if (target.outside) {
      try {
        this.savedOutputs.verify(target.abs, fstatSync(fd));
      } catch (error) {
        closeSync(fd);
        throw error;
      }
    }
    return fd;
  }

  /**
   * `abs` made absolute (against the cwd), as written: inside the root, or one of this session's saved
   * outputs (then the open stays in that file's own directory); EPATH_ESCAPE otherwise.
   */
  #openTarget(abs: string): { abs: string; within: string; outside: boolean } {
    if (typeof abs !== "string") throw new ToolbeltError("EINVAL_INPUT", "path must be a string");
    const lexical = path.resolve(this.#cwd, abs);
    if (abs.includes("\0"))
      throw new ToolbeltError("EPATH_ESCAPE", "path contains a NUL byte", { details: { path: abs } });
    if (this.#resolver.contains(lexical))
      return { abs: lexical, within: this.#resolver.root, outside: false };
    if (this.#savedOutputs?.admits(lexical))
      return { abs: lexical, within: path.dirname(lexical), outside: true };
    const removed = this.#savedOutputs?.removed(lexical);
    if (removed) throw new ToolbeltError("ENOENT", removed, { details: { path: abs } });
    throw new ToolbeltError("EPATH_ESCAPE", `path escapes the project root: ${abs}`, {
      details: { path: abs },
    });
  }

  /** Every change tools made in this root, and restoring to any of them (see checkpoints.md). */
  get checkpoints(): SessionCheckpoints {
    this.#checkpoints ??= new SessionCheckpoints(
      this,
      (changes, meta) => {
        // Judged as the checkpoints family's write, as the undo tool's are: tools.checkpoints
        // (its mode and rules) governs every restore, from the SDK, the CLI or a workspace's host.
        const gate = sdkGate(meta.tool);
        return this.#writes.writeFiles(
          {
            ...gate,
            who: { ...gate.who, family: "checkpoints" },
            ...(meta.call ? { call: meta.call } : {}),
            restoreOf: meta.restoreOf,
          },
          changes,
        );
      },
      this.#remoteCheckpoints,
    );
    return this.#checkpoints;
  }

  withFileLock<T>(abs: string, fn: () => Promise<T>): Promise<T> {
    return this.#writes.withFileLock(abs, fn);
  }

  // ---- life ----

  /** A sub-agent: same root and current directory, its own ledger, at most the tools held now. */
  async fork(options: { mode?: "act" | "plan" } = {}): Promise<Session> {
    const childOptions: SessionOptions = {
      root: this.root,
      config: this.#config,
      client: { ...this.client, capabilities: this.client.capabilities },
      model: this.model,
      plugins: this.#plugins,
      profile: this.profile,
      allow: this.allow,
      trust: this.trust,
      mode: options.mode ?? this.mode,
    };
    pendingFork = {
      options: childOptions,
      parent: this,
      cwd: this.#cwd,
      tools: this.#tools,
      locks: this.#writes.locks,
    };
    const child = new Session(childOptions);
    child.addSkills(this.skills);
    await child.setup();
    this.onClose(() => child.close());
    return child;
  }

  /**
   * Moves the session to another directory (switch_project): the root, cwd and config change, and
   * the tools are narrowed to those the session already held.
   */
  switchRoot(root: string, options: { config?: ToolbeltConfig; key?: string } = {}): void {
    const held = this.#tools.heldNow();
    const from = this.#resolver.root;
    this.#resolver = new PathResolver(root);
    this.#cwd = this.#resolver.root;
    if (options.config) this.#config = options.config;
    this.#tools.hold(held);
    this.events.emit({ type: "project_switched", key: options.key ?? this.#cwd, from, to: this.#cwd });
    this.#tools.announce(`switched to ${this.#cwd}`);
  }

  /** Changes the working directory inside the root. */
  chdir(dir: string): void {
    const resolved = this.#resolver.resolve(dir, this.#cwd);
    this.#cwd = realpathSync(resolved.abs);
  }

  /**
   * Runs each plugin's setup; createSession calls it. Idempotent: a second call waits for the first
   * and runs nothing again (a plugin registering hooks twice would run them twice).
   */
  setup(): Promise<void> {
    this.#setup ??= this.#runSetup();
    return this.#setup;
  }

  async #runSetup(): Promise<void> {
    // Temp files of writers killed mid-write, in the directories their journals name (once per process).
    await sweepJournals();
    sweepSavedOutputs();
    for (const plugin of this.#plugins) await plugin.setup?.(this);
    this.#tools.announce("session started");
  }

  /** What the session's plugins (and `contributions`) add: config keys, events, tool names. */
  get contributions(): GatheredContributions {
    return this.#contributions;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await releaseJournal();
    for (const fn of this.#closers.reverse()) {
      try {
        await fn();
      } catch {
        // Keep closing the rest.
      }
    }
    // After the closers: the commands that wrote them have ended.
    this.#savedOutputs?.close();
    this.events.close();
  }
}

function isParsedConfig(value: unknown): value is ToolbeltConfig {
  return (
    typeof value === "object" &&
    value !== null &&
    "limits" in value &&
    "agent" in value &&
    "tools" in value &&
    "plugins" in value
  );
}

/** Creates a session: validates the config, checks plugins, runs their setup. */
export async function createSession(options: SessionOptions): Promise<Session> {
  const session = new Session(options);
  // Plugins are known now, so a tools.* key naming no tool, family or plugin is a typo, not a plugin's.
  checkToolKeys(
    session.config,
    // undo is core's own (bound by checkpoints.undoTool): tools.undo and tools.checkpoints are known keys.
    [...session.granted(), asAnyTool(undoTool)],
    session.plugins.map((p) => p.name),
    session.contributions.toolKeys,
  );
  // A rule whose examples disagree with it is a config error, like a malformed one.
  await checkRuleExamples(session.config, session.contributions.parseCommandLine);
  await session.setup();
  return session;
}

/** The open's ELOOP (the last component is a symbolic link now) as the refusal it is. */
function linkRefusal(error: unknown, target: string): unknown {
  if ((error as NodeJS.ErrnoException).code !== "ELOOP") return error;
  return new ToolbeltError(
    "EPATH_ESCAPE",
    `${target} is a symbolic link (or became one while it was being opened): open the path the call resolved; nothing was read`,
    { cause: error, details: { path: target } },
  );
}
