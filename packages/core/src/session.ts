import { realpathSync } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import type { z } from "zod";
import { type AtomicWriteOptions, KeyedLock } from "./atomic-write.js";
import { SessionCheckpoints } from "./checkpoint-api.js";
import {
  EDIT_BACKENDS,
  type EditBackend,
  type Limits,
  parseConfig,
  type ToolbeltConfig,
  type ToolbeltConfigInput,
  toolSearchMode,
} from "./config.js";
import { type GatheredContributions, gatherContributions } from "./contribution-set.js";
import type { Contributions } from "./contributions.js";
import { type ErrorPayload, errorPayload, normaliseError, ToolbeltError } from "./errors.js";
import { ESCAPE_LEGEND, visibleText } from "./escape.js";
import { type EventInput, type EventOf, EventStream, type EventType, type ToolbeltEvent } from "./events.js";
import type { CommandSpec, CommandWrapper, LaunchPurpose } from "./launch.js";
import { ReadLedger } from "./ledger.js";
import { PathResolver } from "./paths.js";
import { checkToolKeys, decide, ruleNote, ruleRefusal, ruleSubjectsFor, toolEnabled } from "./permissions.js";
import { checkPlugin, type Plugin, type Skill } from "./plugin.js";
import { isProtectedPath, PROTECTED_ALLOW } from "./protected-paths.js";
import { randomUUID } from "./random-id.js";
import { renderPayload } from "./render.js";
import { openForRead, openForReadSync } from "./safe-open.js";
import { type BoundToolSchema, toolJsonSchema } from "./schema-export.js";
import { releaseJournal, sweepJournals } from "./temp-files.js";
import {
  type AnyTool,
  type ApprovalRequest,
  asAnyTool,
  type Payload,
  type ProfileVariant,
  type ToolContext,
  type WriteResult,
} from "./tool.js";
import {
  type AfterToolCallHook,
  afterToolCall,
  type BeforeToolCallHook,
  beforeToolCall,
  type ToolCallHooks,
  withHookNotes,
} from "./tool-hooks.js";
import { searchTools, toolSearchTool } from "./tool-search.js";
import { type FileChange, runTransaction, type WriteFilesOptions } from "./transaction.js";
import { type TrustInfo, UNTRUSTED } from "./trust.js";
import { undoTool } from "./undo-tool.js";
import { checkWriteSize } from "./write-size.js";

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
}

export interface CallOptions {
  signal?: AbortSignal;
  callId?: string;
}

export interface CallOutcome {
  payload: Payload;
  text: string;
}

export interface Binding {
  /** The name the model sees. */
  name: string;
  tool: AnyTool;
  variant?: ProfileVariant;
  deferred: boolean;
}

export interface BindResult {
  tools: BoundToolSchema[];
  /** Names of tools that tool_search can bind; not sent with schemas. */
  deferred: string[];
}

export interface AfterWriteInfo {
  abs: string;
  rel: string;
  tool: string;
}

type AfterWriteHook = (info: AfterWriteInfo) => Promise<string | undefined> | string | undefined;

const DEFAULT_CONTEXT_TOKENS = 200_000;
const DEFAULT_DEFER_SHARE = 0.1;

let sessionCounter = 0;

// Handed from fork() to the constructor it calls right away; matched by the options object, so no
// caller can pass a parent, held tools or shared locks through `new Session`.
let pendingFork:
  | { options: SessionOptions; parent: Session; cwd: string; held: Set<string>; locks: KeyedLock }
  | undefined;

// bindings() runs on every call; in auto tool-search mode it weighs each deferrable schema, so the
// serialised size is computed once per tool (or profile input) rather than on every call.
const schemaSizes = new WeakMap<object, number>();
function schemaChars(tool: AnyTool, variantInput?: z.ZodType): number {
  const key: object = variantInput ?? tool;
  let size = schemaSizes.get(key);
  if (size === undefined) {
    size = JSON.stringify(toolJsonSchema(tool, variantInput)).length;
    schemaSizes.set(key, size);
  }
  return size;
}

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
  readonly #dynamic = new Map<string, AnyTool[]>();
  readonly #discovered = new Set<string>();
  #held: Set<string> | undefined;
  readonly #state = new Map<string, unknown>();
  readonly #closers: Array<() => Promise<void> | void> = [];
  readonly #locks: KeyedLock;
  readonly #skills = new Map<string, Skill>();
  #closed = false;
  readonly #contributions: GatheredContributions;
  #setup: Promise<void> | undefined;
  #checkpoints: SessionCheckpoints | undefined;
  #forks = 0;
  #lastBoundKey = "";

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
    this.#plugins = (options.plugins ?? []).map(checkPlugin);
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
    this.#held = fork?.held;
    this.#locks = fork?.locks ?? new KeyedLock();
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

  /** Tells the session a new user message arrived (supersedes pending questions). */
  userMessage(text: string): void {
    for (const hook of this.hooks.userMessage) hook(text);
  }

  /** Every tool the session was granted, whatever is bound now. */
  granted(): AnyTool[] {
    const tools: AnyTool[] = [];
    for (const plugin of this.#plugins) tools.push(...(plugin.tools ?? []));
    for (const list of this.#dynamic.values()) tools.push(...list);
    return tools;
  }

  /** Adds tools from a source (an MCP server, an attached client); replaces that source's previous set. */
  registerTools(source: string, tools: AnyTool[]): void {
    this.#dynamic.set(source, tools);
    this.#announce(`tools from ${source} registered`);
  }

  unregisterTools(source: string): void {
    if (this.#dynamic.delete(source)) this.#announce(`tools from ${source} removed`);
  }

  editBackend(): EditBackend {
    // A profile whose spec has one edit tool of its own (mouaif: edit_file) binds it whatever the model.
    if (this.profile !== "default") {
      const own = new Set<EditBackend>();
      for (const t of this.granted()) if (t.editBackend && t.profiles?.[this.profile]) own.add(t.editBackend);
      const [only] = own;
      if (own.size === 1 && only) return only;
    }
    const choose = this.#contributions.chooseEditBackend;
    const chosen = choose ? choose({ model: this.model, config: this.#config }) : "edit_file";
    return this.profile === "default" ? chosen : this.#profileBackend(chosen);
  }

  /**
   * A profile with edit tools of its own (mewbo: file_edit_tool, aider_edit_block_tool) binds one of
   * them when the chosen backend is not among them (no model, or neither Claude nor GPT).
   */
  #profileBackend(chosen: EditBackend): EditBackend {
    const own = EDIT_BACKENDS.filter((b) =>
      this.granted().some((t) => t.editBackend === b && t.profiles?.[this.profile]),
    );
    return own.length === 0 || own.includes(chosen) ? chosen : (own[0] as EditBackend);
  }

  #available(tool: AnyTool): boolean {
    const req = tool.requires;
    if (req?.capability && !(this.client.capabilities ?? []).includes(req.capability)) return false;
    if (req?.rootAgentOnly && !this.isRoot) return false;
    if (req?.actModeOnly && this.mode !== "act") return false;
    if (req?.autoWorkspaceOnly && this.#config.agent.workspace_mode !== "auto") return false;
    if (!toolEnabled({ tool: tool.name, family: tool.family }, this.#config)) return false;
    if (tool.editBackend && tool.editBackend !== this.editBackend()) return false;
    return true;
  }

  /** The tools of this session now, under their profile names, each marked deferred or bound. */
  bindings(): Binding[] {
    const allowed = this.#config.agent.allowed_tools;
    const candidates: Array<Omit<Binding, "deferred">> = [];
    for (const tool of this.granted()) {
      const variant = this.profile === "default" ? undefined : tool.profiles?.[this.profile];
      if (variant === false) continue;
      if (!this.#available(tool)) continue;
      const name = variant?.name ?? tool.name;
      if (
        allowed &&
        !allowed.includes(name) &&
        !allowed.includes(tool.name) &&
        !allowed.includes(tool.family)
      )
        continue;
      if (this.#held && !this.#held.has(name)) continue;
      candidates.push(variant ? { name, tool, variant } : { name, tool });
    }
    const undo = asAnyTool(undoTool);
    const held = !this.#held || this.#held.has(undo.name);
    if (this.#config.checkpoints.undoTool && held && this.#available(undo))
      candidates.push({ name: undo.name, tool: undo });
    const mode = toolSearchMode(this.#config);
    let defer = mode !== "off";
    if (mode === "auto") {
      const chars = candidates
        .filter((c) => c.tool.deferrable)
        .reduce((n, c) => n + schemaChars(c.tool, c.variant?.input), 0);
      const share = this.#config.agent.tool_search_threshold ?? DEFAULT_DEFER_SHARE;
      const budget = (this.#config.agent.context_window_tokens ?? DEFAULT_CONTEXT_TOKENS) * share;
      defer = chars / 4 > budget;
    }
    // Written out rather than `{ ...c, deferred }`: object spread here took ≈ 2 µs per tool (V8's
    // generic clone path), ≈ 50 µs of every call. Same keys, same order.
    const bindings: Binding[] = candidates.map((c) => {
      const deferred = defer && !!c.tool.deferrable && !this.#discovered.has(c.name);
      return c.variant
        ? { name: c.name, tool: c.tool, variant: c.variant, deferred }
        : { name: c.name, tool: c.tool, deferred };
    });
    if (bindings.some((b) => b.deferred) || (defer && this.#discovered.size > 0)) {
      bindings.unshift({ name: toolSearchTool.name, tool: toolSearchTool, deferred: false });
    }
    return bindings;
  }

  /** The schemas to send to the model now; deferred tools by name only. */
  bind(): BindResult {
    const bindings = this.bindings();
    const result: BindResult = {
      tools: bindings.filter((b) => !b.deferred).map(schemaOf),
      deferred: bindings.filter((b) => b.deferred).map((b) => b.name),
    };
    return result;
  }

  /** Marks deferred tools as discovered, so the following calls can use them. */
  discover(names: string[]): string[] {
    const deferred = new Set(
      this.bindings()
        .filter((b) => b.deferred)
        .map((b) => b.name),
    );
    const added = names.filter((n) => deferred.has(n));
    for (const name of added) this.#discovered.add(name);
    if (added.length) this.#announce(`tool_search bound ${added.join(", ")}`);
    return added;
  }

  get discovered(): ReadonlySet<string> {
    return this.#discovered;
  }

  /**
   * Searches the deferrable tools this session was granted: those still deferred and those already
   * discovered (so asking again for a bound tool returns its schema instead of nothing).
   */
  searchTools(query: string, limit = 5): Binding[] {
    return searchTools(
      this.bindings().filter((b) => b.deferred || this.#discovered.has(b.name)),
      query,
      limit,
    );
  }

  #announce(reason: string): void {
    // Names only: bind() would build every JSON Schema, which a one-shot run pays at start for nothing.
    const bindings = this.bindings();
    const bound = bindings.filter((b) => !b.deferred).map((b) => b.name);
    const deferred = bindings.filter((b) => b.deferred).map((b) => b.name);
    const key = `${bound.join(",")}|${deferred.join(",")}`;
    if (key === this.#lastBoundKey) return;
    this.#lastBoundKey = key;
    this.events.emit({ type: "tools_bound", bound, deferred, reason });
  }

  /** Calls a tool by the name the model sees; never throws for anything the caller sends. */
  async call(name: string, input: unknown, options: CallOptions = {}): Promise<Payload> {
    return (await this.#call(name, input, options, false)).payload;
  }

  /** Like call(), also returning the model-facing text. */
  async callWithText(name: string, input: unknown, options: CallOptions = {}): Promise<CallOutcome> {
    return (await this.#call(name, input, options, true)) as CallOutcome;
  }

  /**
   * One call. The model-facing text is rendered only when someone reads it (the caller, or a
   * tool_result listener): rendering a large result (thousands of matches) costs as much as finding it.
   */
  async #call(
    name: string,
    input: unknown,
    options: CallOptions,
    wantText: boolean,
  ): Promise<{ payload: Payload; text?: string }> {
    const callId = options.callId ?? randomUUID();
    // hrtime, not performance.now(): the `performance` global loads node:perf_hooks on first use.
    const started = process.hrtime.bigint();
    const binding = this.bindings().find((b) => b.name === name);
    this.events.emit({ type: "tool_call", call_id: callId, tool: name, input: input ?? null });
    let payload: Payload;
    if (this.#closed) {
      payload = errorPayload("EUNAVAILABLE", "the session is closed");
    } else if (!binding) {
      payload = this.#unknownTool(name);
    } else if (binding.deferred) {
      payload = errorPayload(
        "EUNKNOWN_TOOL",
        `${name} is deferred: call tool_search with "select:${name}" to bind it first`,
        {
          tool: name,
        },
      );
    } else {
      payload = await this.#run(binding, input, callId, options.signal);
    }
    let text: string | undefined;
    if (wantText || this.events.wants("tool_result")) text = this.#render(payload, binding);
    this.events.emit({
      type: "tool_result",
      call_id: callId,
      tool: name,
      result: payload,
      ...(text === undefined ? {} : { text }),
      duration_ms: Math.round(Number(process.hrtime.bigint() - started) / 1e6),
    });
    return text === undefined ? { payload } : { payload, text };
  }

  #render(payload: Payload, binding: Binding | undefined): string {
    let text: string;
    try {
      text = withHookNotes(
        renderPayload(payload, binding?.tool.render as ((p: Payload) => string) | undefined),
        payload,
      );
    } catch (error) {
      text = renderPayload(errorPayload("EINTERNAL", `render failed: ${(error as Error).message}`));
    }
    return text;
  }

  #unknownTool(name: string): ErrorPayload {
    const names = this.bindings().map((b) => b.name);
    const granted = this.granted().find((t) => t.name === name);
    const hint = granted
      ? `${name} is not available in this session (profile, client capability, agent mode or config leaves it out)`
      : `unknown tool ${JSON.stringify(String(name))}`;
    return errorPayload("EUNKNOWN_TOOL", `${hint}; available: ${names.join(", ") || "(none)"}`, {
      tool: name,
    });
  }

  async #run(binding: Binding, rawInput: unknown, callId: string, signal?: AbortSignal): Promise<Payload> {
    const { tool, variant } = binding;
    try {
      let input = validate(variant?.input ?? tool.input, rawInput);
      if (variant?.toInput) {
        const at = { resolve: (p: string) => this.#resolver.resolve(p, this.#cwd) };
        input = validate(tool.input, variant.toInput(input as Record<string, unknown>, at));
      }
      // Hooks see the tool's own input; what they hand back is validated, resolved and policed below.
      const hooked = await beforeToolCall(
        this,
        binding,
        input,
        callId,
        (i) => validate(tool.input, i),
        signal,
      );
      if (hooked.denied) return hooked.denied;
      input = hooked.input;
      const paths = (tool.paths as ((i: unknown) => string[]) | undefined)?.(input) ?? [];
      const rels = paths.map((p) => this.#resolver.resolve(p, this.#cwd).rel);
      const resolveRel = (p: string) => this.#resolver.resolve(p, this.#cwd).rel;
      const rules = await ruleSubjectsFor(tool, binding.name, input, this.#config, resolveRel, this.#cwd);
      const decision = decide(
        {
          tool: tool.name,
          calledAs: binding.name,
          family: tool.family,
          access: tool.access,
          paths: rels,
          rules,
        },
        this.#config,
        this.allow,
      );
      if (decision.mode === "deny")
        return errorPayload("EDENIED", `${binding.name}: ${decision.reason}`, { tool: binding.name });
      const gate: WriteGate = { ...newGate(binding), call: callId };
      // Protection is judged on the real paths (a symlink alias of configs/app.json is configs/app.json).
      const guarded = tool.access === "write" ? rels.filter((r) => isProtectedPath(r)) : [];
      const askProtected = guarded.length > 0 && !this.allow.has(PROTECTED_ALLOW);
      // A hook's allow answers an ask like --allow does: never a firm one (a command line the parser
      // cannot see through while deny rules apply).
      const hookAnswers = hooked.allowed && !(decision.mode === "ask" && decision.verdict?.firm);
      if ((decision.mode === "ask" && !hookAnswers) || askProtected) {
        const summary = summarise(binding.name, input) + ruleNote(decision);
        const ok = await this.#askApproval(
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
          this.#context(binding, callId, controller.signal, gate),
        )) as Payload;
        if (
          typeof payload !== "object" ||
          payload === null ||
          typeof (payload as Payload).kind !== "string"
        ) {
          return errorPayload("EINTERNAL", `${binding.name} returned a result without a kind`);
        }
        return await afterToolCall(this, hooked.call, payload, controller.signal);
      } catch (error) {
        // After hooks see what the tool threw too (as its error payload); they never throw themselves.
        return await afterToolCall(this, hooked.call, normaliseError(error).toPayload(), controller.signal);
      } finally {
        signal?.removeEventListener("abort", onAbort);
      }
    } catch (error) {
      return normaliseError(error).toPayload();
    }
  }

  async #askApproval(
    who: Writer,
    input: unknown,
    request: ApprovalRequest,
    refusal?: { needs: string; how: string },
  ): Promise<{ approved: boolean; message: string }> {
    const approver = this.client.approve;
    if (!approver) {
      const how =
        refusal?.how ??
        // An untrusted project's configs/app.json cannot loosen policy: name what does.
        `allow it with --allow ${who.family} (CLI), tools.${who.family}.mode = "allow" in your own config (--config FILE or the user config folder) or in configs/app.json of a trusted project (--trust, toolbelt trust), or an approver on the client`;
      return {
        approved: false,
        message: `${refusal?.needs ?? `${who.name} needs approval`} and nobody can give it here: ${how}`,
      };
    }
    const prompt: ApprovalPrompt = {
      request_id: randomUUID(),
      tool: who.name,
      family: who.family,
      access: who.access,
      summary: request.summary,
      input,
    };
    this.events.emit({ type: "approval_requested", ...prompt });
    let approved = false;
    let by = this.client.name ?? "client";
    try {
      approved = (await approver(prompt)) === true;
    } catch (error) {
      by = `error: ${(error as Error).message}`;
    }
    this.events.emit({ type: "approval_resolved", request_id: prompt.request_id, approved, by });
    return { approved, message: approved ? "approved" : `${who.name} was denied by ${by}` };
  }

  #context(binding: Binding, callId: string, signal: AbortSignal, gate: WriteGate): ToolContext {
    return {
      session: this,
      callId,
      signal,
      root: this.root,
      cwd: this.#cwd,
      config: this.#config,
      limits: this.#config.limits,
      ledger: this.ledger,
      profile: this.profile,
      calledAs: binding.name,
      resolve: (p) => this.#resolver.resolve(p, this.#cwd),
      emit: (event) => {
        this.events.emit(event);
      },
      writeFile: (abs, data, options) => this.#write(gate, abs, data, options ?? {}),
      checkWrite: async (abs, bytes) => {
        await this.#checkWrite(gate, abs, bytes);
      },
      removeFile: async (abs) => (await this.#writeFiles(gate, [{ abs, remove: true }]))[0]?.removed === true,
      writeFiles: (changes, options) => this.#writeFiles(gate, changes, options),
      openFile: (abs) => this.openFile(abs),
      withFileLock: (abs, fn) => this.#locks.run(abs, fn),
      approve: async (request) => {
        const decision = decide(
          { tool: binding.tool.name, family: binding.tool.family, access: binding.tool.access, paths: [] },
          this.#config,
          this.allow,
        );
        if (decision.mode === "deny") return false;
        // A person who was asked has the last word; the policy decides only when nobody can be asked.
        if (this.client.approve) return (await this.#askApproval(gate.who, undefined, request)).approved;
        return decision.mode === "allow";
      },
    };
  }

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
    const gate: WriteGate = binding
      ? newGate(binding)
      : {
          who: {
            name: options.tool ?? "writeFile",
            tool: options.tool ?? "writeFile",
            family: "core",
            access: "write",
          },
          cleared: new Set(),
          protectedOk: new Set(),
        };
    return this.#write(gate, abs, data, options);
  }

  /** Opens a file inside the root for reading, so that the check and the open are one act (see safe-open.ts). */
  async openFile(abs: string): Promise<FileHandle> {
    const target = this.#resolver.resolve(abs, this.#cwd);
    return openForRead(target.abs, { root: this.#resolver.root });
  }

  /**
   * openFile's checks and open, synchronously: a bare descriptor the caller closes (closeSync). For
   * reading a small file at once, where a FileHandle's asynchronous open and close cost more than the read.
   */
  openFileSync(abs: string): number {
    const target = this.#resolver.resolve(abs, this.#cwd);
    return openForReadSync(target.abs, { root: this.#resolver.root });
  }

  async #checkWrite(gate: WriteGate, abs: string, bytes: number): Promise<{ abs: string; rel: string }> {
    const target = this.#resolver.resolve(abs, this.#cwd);
    await checkWriteSize(gate.who.name, target, bytes, this.#config.limits);
    if (!gate.cleared.has(target.rel)) {
      const decision = decide(
        {
          tool: gate.who.tool,
          calledAs: gate.who.name,
          family: gate.who.family,
          access: "write",
          paths: [target.rel],
        },
        this.#config,
        this.allow,
      );
      if (decision.mode === "deny") {
        throw new ToolbeltError("EDENIED", `${gate.who.name}: ${decision.reason}`, {
          details: { tool: gate.who.name, path: target.rel },
        });
      }
      if (decision.mode === "ask") {
        const ok = await this.#askApproval(
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
      !this.allow.has(PROTECTED_ALLOW) &&
      !gate.protectedOk.has(target.rel)
    ) {
      const ok = await this.#askApproval(
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

  async #write(
    gate: WriteGate,
    abs: string,
    data: string | Uint8Array,
    options: AtomicWriteOptions & { tool?: string; locked?: boolean },
  ): Promise<WriteResult> {
    const { tool: _tool, locked: _locked, ...atomic } = options;
    const [result] = await this.#writeFiles(gate, [{ abs, data }], atomic);
    return { created: result?.created ?? false, bytes: result?.bytes ?? 0, notes: result?.notes ?? [] };
  }

  /** The one write path: every write, removal and multi-file write is checked, recorded, then written. */
  #writeFiles(gate: WriteGate, changes: FileChange[], options: WriteFilesOptions = {}) {
    return runTransaction(
      {
        root: this.#resolver.root,
        check: (abs, bytes) => this.#checkWrite(gate, abs, bytes),
        openFile: (abs) => this.openFile(abs),
        ledger: this.ledger,
        after: async (abs, rel) => {
          const notes: string[] = [];
          for (const hook of this.hooks.afterWrite) {
            try {
              const note = await hook({ abs, rel, tool: gate.who.name });
              if (note) notes.push(note);
            } catch {
              // A failing hook (a crashed language server) must not fail a write that already happened.
            }
          }
          return notes;
        },
        recorder: this.checkpoints.recorder(),
        call: gate.call,
        tool: gate.who.name,
        ...(gate.restoreOf ? { restoreOf: gate.restoreOf } : {}),
      },
      changes,
      options,
    );
  }

  /** Every change tools made in this root, and restoring to any of them (see checkpoints.md). */
  get checkpoints(): SessionCheckpoints {
    this.#checkpoints ??= new SessionCheckpoints(this, (changes, meta) =>
      this.#writeFiles(
        { ...sdkGate(meta.tool), ...(meta.call ? { call: meta.call } : {}), restoreOf: meta.restoreOf },
        changes,
      ),
    );
    return this.#checkpoints;
  }

  withFileLock<T>(abs: string, fn: () => Promise<T>): Promise<T> {
    return this.#locks.run(abs, fn);
  }

  /**
   * One model step: read-only calls run concurrently; a write, execute or interact call waits for
   * everything before it and runs alone. Results come back in the order given.
   */
  async step(calls: Array<{ tool: string; input: unknown; id?: string }>): Promise<Payload[]> {
    const results: Payload[] = new Array(calls.length);
    let batch: Array<Promise<void>> = [];
    const access = new Map(this.bindings().map((b) => [b.name, b.tool.access]));
    for (const [index, call] of calls.entries()) {
      const run = async () => {
        results[index] = await this.call(call.tool, call.input, call.id ? { callId: call.id } : {});
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

  /** A sub-agent: same root and current directory, its own ledger, at most the tools held now. */
  async fork(options: { mode?: "act" | "plan" } = {}): Promise<Session> {
    const held = new Set(this.bindings().map((b) => b.name));
    held.delete(toolSearchTool.name);
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
    pendingFork = { options: childOptions, parent: this, cwd: this.#cwd, held, locks: this.#locks };
    const child = new Session(childOptions);
    for (const [source, tools] of this.#dynamic) child.#dynamic.set(source, tools);
    for (const name of this.#discovered) child.#discovered.add(name);
    for (const skill of this.skills) child.#skills.set(skill.name, skill);
    await child.setup();
    this.onClose(() => child.close());
    return child;
  }

  /**
   * Moves the session to another directory (switch_project): the root, cwd and config change, and
   * the tools are narrowed to those the session already held.
   */
  switchRoot(root: string, options: { config?: ToolbeltConfig; key?: string } = {}): void {
    const held = new Set(this.bindings().map((b) => b.name));
    held.delete(toolSearchTool.name);
    const from = this.#resolver.root;
    this.#resolver = new PathResolver(root);
    this.#cwd = this.#resolver.root;
    if (options.config) this.#config = options.config;
    this.#held = held;
    this.events.emit({ type: "project_switched", key: options.key ?? this.#cwd, from, to: this.#cwd });
    this.#announce(`switched to ${this.#cwd}`);
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
    for (const plugin of this.#plugins) await plugin.setup?.(this);
    this.#announce("session started");
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

/** Object properties set to null, removed (deeply): what OpenAI strict mode sends for an unused optional field. */
function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutNulls);
  if (typeof value !== "object" || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    // defineProperty, not assignment: a key named __proto__ must stay data, never become the prototype.
    if (v !== null)
      Object.defineProperty(out, key, {
        value: withoutNulls(v),
        enumerable: true,
        writable: true,
        configurable: true,
      });
  }
  return out;
}

/** Deeper inputs are refused before validation, whose recursion they would otherwise overflow. */
export const MAX_INPUT_DEPTH = 128;

/** The nesting depth of a JSON-like value, walked without recursion (so it cannot overflow itself). */
function depthOf(value: unknown, limit: number): number {
  let deepest = 0;
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop() as [unknown, number];
    if (typeof item !== "object" || item === null) continue;
    if (depth > deepest) deepest = depth;
    if (deepest > limit) return deepest;
    for (const child of Object.values(item)) stack.push([child, depth + 1]);
  }
  return deepest;
}

function validate(schema: z.ZodType, input: unknown): unknown {
  if (depthOf(input, MAX_INPUT_DEPTH) > MAX_INPUT_DEPTH) {
    throw new ToolbeltError(
      "EINVAL_INPUT",
      `input is nested more than ${MAX_INPUT_DEPTH} levels deep (the bound on tool inputs)`,
      { details: { field: "(input)", limit: MAX_INPUT_DEPTH } },
    );
  }
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  // Strict provider schemas make optional fields nullable; null there means "not given". Only when the
  // input as sent fails do we retry without the nulls, so a schema that accepts null keeps them.
  if (typeof input === "object" && input !== null) {
    const retry = schema.safeParse(withoutNulls(input));
    if (retry.success) return retry.data;
  }
  const issues = result.error.issues.map((issue) => ({
    path: issue.path.map(String).join(".") || "(input)",
    message: issue.message,
  }));
  const first = issues[0];
  throw new ToolbeltError("EINVAL_INPUT", issues.map((i) => `${i.path}: ${i.message}`).join("; "), {
    details: { field: first?.path, issues },
  });
}

/** Who is writing: the bound name, the tool's own name and family, for policy and prompts. */
interface Writer {
  name: string;
  tool: string;
  family: string;
  access: string;
}

/** What one call's permission check already settled, so its writes are not asked about twice. */
interface WriteGate {
  who: Writer;
  /** Root-relative paths the call-level decision allowed (or its approver approved) for writing. */
  cleared: Set<string>;
  /** Protected paths approved during this call. */
  protectedOk: Set<string>;
  /** The call whose writes these are, for the checkpoint store. */
  call?: string;
  /** Set for the writes of a checkpoint restore. */
  restoreOf?: string;
}

/** The writer of a restore asked for through the SDK or CLI (not by a tool call). */
function sdkGate(name: string): WriteGate {
  return {
    who: { name, tool: name, family: "core", access: "write" },
    cleared: new Set(),
    protectedOk: new Set(),
  };
}

function newGate(binding: Binding): WriteGate {
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

function protectedNote(rels: string[]): string {
  return `protected: ${rels.join(", ")} (decides policy or runs code; see PROTECTED_PATHS)`;
}

function protectedRefusal(name: string, rels: string[], alsoAsk: boolean): { needs: string; how: string } {
  return {
    needs: `${name} wants to write ${rels.join(", ")}, a protected path (it decides policy or runs code), which needs approval,`,
    how: `allow it with --allow ${PROTECTED_ALLOW} (CLI) or allow: ["${PROTECTED_ALLOW}"] (SDK)${alsoAsk ? `, together with --allow for the tool or family` : ""}, or attach an approver`,
  };
}

/**
 * What a person approving the call reads: the whole command or path, never cut (front-ends that
 * must shorten it say how much they left out), with control and invisible characters and long
 * space runs made visible, and a legend whenever anything was escaped.
 */
function summarise(name: string, input: unknown): string {
  const record = (input ?? {}) as Record<string, unknown>;
  const main = record.command ?? record.path ?? record.file_path ?? record.file;
  if (typeof main !== "string") return name;
  const shown = visibleText(main);
  return shown.escaped ? `${name} [${ESCAPE_LEGEND}]: ${shown.text}` : `${name}: ${shown.text}`;
}

function schemaOf(binding: Binding): BoundToolSchema {
  const access = binding.tool.access;
  return {
    name: binding.name,
    description: binding.variant?.description ?? binding.tool.description,
    inputSchema: toolJsonSchema(binding.tool, binding.variant?.input),
    annotations: {
      readOnlyHint: access === "read",
      destructiveHint: access === "write" || access === "execute",
      ...binding.tool.annotations,
    },
  };
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
  await session.setup();
  return session;
}
