/**
 * Which tools a session offers the model now, under which names, and which of them wait behind
 * tool_search (deferral). The granted tools are the plugins' and those registered at run time (an
 * MCP server's, an attached client's); profiles rename them, the client, agent mode and config
 * narrow them, and a switched or forked session keeps only those it held.
 */
import type { z } from "zod";
import { EDIT_BACKENDS, type EditBackend, toolSearchMode } from "./config.js";
import { toolEnabled } from "./permissions.js";
import { type BoundToolSchema, outputJsonSchema, toolJsonSchema } from "./schema-export.js";
import type { Session } from "./session.js";
import { type AnyTool, asAnyTool, type ProfileVariant } from "./tool.js";
import { searchTools, toolSearchTool } from "./tool-search.js";
import { undoTool } from "./undo-tool.js";

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

/** What the bindings read of their session; read on every call, so a switched config applies at once. */
type BindingHost = Pick<
  Session,
  "profile" | "model" | "client" | "isRoot" | "mode" | "config" | "plugins" | "contributions" | "events"
>;

const DEFAULT_CONTEXT_TOKENS = 200_000;
const DEFAULT_DEFER_SHARE = 0.1;

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

/** The tool set of one session. */
export class ToolBindings {
  readonly #host: BindingHost;
  readonly #dynamic = new Map<string, AnyTool[]>();
  readonly #discovered = new Set<string>();
  #held: ReadonlySet<string> | undefined;
  #lastBoundKey = "";

  /** `from` (a fork's parent) hands over its registered and discovered tools; `held` narrows to those names. */
  constructor(host: BindingHost, from?: { tools: ToolBindings; held: ReadonlySet<string> }) {
    this.#host = host;
    if (from) {
      this.#held = from.held;
      for (const [source, tools] of from.tools.#dynamic) this.#dynamic.set(source, tools);
      for (const name of from.tools.#discovered) this.#discovered.add(name);
    }
  }

  get discovered(): ReadonlySet<string> {
    return this.#discovered;
  }

  /** Every tool the session was granted, whatever is bound now. */
  granted(): AnyTool[] {
    const tools: AnyTool[] = [];
    for (const plugin of this.#host.plugins) tools.push(...(plugin.tools ?? []));
    for (const list of this.#dynamic.values()) tools.push(...list);
    return tools;
  }

  /** Adds tools from a source; replaces that source's previous set. */
  register(source: string, tools: AnyTool[]): void {
    this.#dynamic.set(source, tools);
    this.announce(`tools from ${source} registered`);
  }

  unregister(source: string): void {
    if (this.#dynamic.delete(source)) this.announce(`tools from ${source} removed`);
  }

  /** The names bound now (tool_search aside): what a fork or a project switch keeps. */
  heldNow(): Set<string> {
    const held = new Set(this.all().map((b) => b.name));
    held.delete(toolSearchTool.name);
    return held;
  }

  /** Narrows the tools to `names` from now on (switch_project). */
  hold(names: ReadonlySet<string>): void {
    this.#held = names;
  }

  editBackend(): EditBackend {
    const host = this.#host;
    // A profile whose spec has one edit tool of its own (mouaif: edit_file) binds it whatever the model.
    if (host.profile !== "default") {
      const own = new Set<EditBackend>();
      for (const t of this.granted()) if (t.editBackend && t.profiles?.[host.profile]) own.add(t.editBackend);
      const [only] = own;
      if (own.size === 1 && only) return only;
    }
    const choose = host.contributions.chooseEditBackend;
    const chosen = choose ? choose({ model: host.model, config: host.config }) : "edit_file";
    return host.profile === "default" ? chosen : this.#profileBackend(chosen);
  }

  /**
   * A profile with edit tools of its own (mewbo: file_edit_tool, aider_edit_block_tool) binds one of
   * them when the chosen backend is not among them (no model, or neither Claude nor GPT).
   */
  #profileBackend(chosen: EditBackend): EditBackend {
    const profile = this.#host.profile;
    const own = EDIT_BACKENDS.filter((b) =>
      this.granted().some((t) => t.editBackend === b && t.profiles?.[profile]),
    );
    return own.length === 0 || own.includes(chosen) ? chosen : (own[0] as EditBackend);
  }

  #available(tool: AnyTool): boolean {
    const host = this.#host;
    const req = tool.requires;
    if (req?.capability && !(host.client.capabilities ?? []).includes(req.capability)) return false;
    if (req?.rootAgentOnly && !host.isRoot) return false;
    if (req?.actModeOnly && host.mode !== "act") return false;
    if (req?.autoWorkspaceOnly && host.config.agent.workspace_mode !== "auto") return false;
    if (!toolEnabled({ tool: tool.name, family: tool.family }, host.config)) return false;
    if (tool.editBackend && tool.editBackend !== this.editBackend()) return false;
    return true;
  }

  /** The tools of this session now, under their profile names, each marked deferred or bound. */
  all(): Binding[] {
    const { config, profile } = this.#host;
    const allowed = config.agent.allowed_tools;
    const candidates: Array<Omit<Binding, "deferred">> = [];
    for (const tool of this.granted()) {
      const variant = profile === "default" ? undefined : tool.profiles?.[profile];
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
    if (config.checkpoints.undoTool && held && this.#available(undo))
      candidates.push({ name: undo.name, tool: undo });
    const mode = toolSearchMode(config);
    let defer = mode !== "off";
    if (mode === "auto") {
      const chars = candidates
        .filter((c) => c.tool.deferrable)
        .reduce((n, c) => n + schemaChars(c.tool, c.variant?.input), 0);
      const share = config.agent.tool_search_threshold ?? DEFAULT_DEFER_SHARE;
      const budget = (config.agent.context_window_tokens ?? DEFAULT_CONTEXT_TOKENS) * share;
      defer = chars / 4 > budget;
    }
    // Written out rather than `{ ...c, deferred }`: object spread here takes V8's generic clone path,
    // and this runs for every tool on every call. Same keys, same order.
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
    const bindings = this.all();
    return {
      tools: bindings.filter((b) => !b.deferred).map(schemaOf),
      deferred: bindings.filter((b) => b.deferred).map((b) => b.name),
    };
  }

  /** Marks deferred tools as discovered, so the following calls can use them. */
  discover(names: string[]): string[] {
    const deferred = new Set(
      this.all()
        .filter((b) => b.deferred)
        .map((b) => b.name),
    );
    const added = names.filter((n) => deferred.has(n));
    for (const name of added) this.#discovered.add(name);
    if (added.length) this.announce(`tool_search bound ${added.join(", ")}`);
    return added;
  }

  /**
   * Searches the deferrable tools this session was granted: those still deferred and those already
   * discovered (so asking again for a bound tool returns its schema instead of nothing).
   */
  search(query: string, limit = 5): Binding[] {
    return searchTools(
      this.all().filter((b) => b.deferred || this.#discovered.has(b.name)),
      query,
      limit,
    );
  }

  /** Emits `tools_bound` when the bound or deferred names changed since the last one. */
  announce(reason: string): void {
    // Names only: bind() would build every JSON Schema, which nobody asked for here.
    const bindings = this.all();
    const bound = bindings.filter((b) => !b.deferred).map((b) => b.name);
    const deferred = bindings.filter((b) => b.deferred).map((b) => b.name);
    const key = `${bound.join(",")}|${deferred.join(",")}`;
    if (key === this.#lastBoundKey) return;
    this.#lastBoundKey = key;
    this.#host.events.emit({ type: "tools_bound", bound, deferred, reason });
  }
}

function schemaOf(binding: Binding): BoundToolSchema {
  const access = binding.tool.access;
  return {
    name: binding.name,
    description: binding.variant?.description ?? binding.tool.description,
    inputSchema: toolJsonSchema(binding.tool, binding.variant?.input),
    outputSchema: binding.tool.outputJsonSchema ?? outputJsonSchema(binding.tool),
    annotations: {
      readOnlyHint: access === "read",
      destructiveHint: access === "write" || access === "execute",
      ...binding.tool.annotations,
    },
  };
}
