import { z } from "zod";
import type { EditBackend, ToolbeltConfig } from "./config.js";
import { ToolbeltError } from "./errors.js";
import type { RuleSubjects } from "./rules.js";

/**
 * What a family or plugin adds to the host: config keys (with the trust rule each obeys), event
 * types and the names of its tools. Declared in a light module (zod and core types only) so the CLI
 * can validate a config without importing the implementations.
 */

/** Returned by a trust rule when an untrusted layer's value must not apply. */
export const DROP: unique symbol = Symbol("toolbelt.trust.drop");

export interface TrustContext {
  /** Dotted key of the value, e.g. `agent.shell_sandbox` or `lsp`. */
  key: string;
  /** The same key in the trusted layers below (merged and parsed). */
  current: unknown;
  /** Everything the trusted layers below set, parsed. */
  base: ToolbeltConfig;
  /** Reports a (part of a) value that was dropped, with why. */
  ignore(key: string, why: string): void;
}

/**
 * Decides what of an untrusted project's value applies: the value (or the part of it that may)
 * when it tightens or is neutral; `DROP` after reporting through `ctx.ignore` when it loosens
 * policy or names code to run.
 */
export type TrustRule = (value: unknown, ctx: TrustContext) => unknown;

/** Ready-made trust rules. */
export const trustRules = {
  /** Changes how a run looks or is bounded, grants nothing. */
  neutral: ((value) => value) as TrustRule,
  /** Never from an untrusted project. */
  never(why: string): TrustRule {
    return (_value, ctx) => {
      ctx.ignore(ctx.key, why);
      return DROP;
    };
  },
  /** A map of named entries (servers, commands): each name is reported as dropped. */
  eachEntry(why: string): TrustRule {
    return (value, ctx) => {
      const names = typeof value === "object" && value !== null ? Object.keys(value) : [];
      for (const name of names) ctx.ignore(`${ctx.key}.${name}`, why);
      return DROP;
    };
  },
  /** A list: applies when it is empty, else dropped. */
  nonEmptyList(why: string): TrustRule {
    return (value, ctx) => {
      if (!Array.isArray(value) || value.length === 0) return value;
      ctx.ignore(ctx.key, why);
      return DROP;
    };
  },
  /** Applies when `allowed(value, current)` holds. */
  when(allowed: (value: unknown, current: unknown, base: ToolbeltConfig) => boolean, why: string): TrustRule {
    return (value, ctx) => {
      if (allowed(value, ctx.current, ctx.base)) return value;
      ctx.ignore(ctx.key, why);
      return DROP;
    };
  },
  /** A list that applies only when every item is already in the trusted value. */
  subsetOfCurrent(why: string): TrustRule {
    return trustRules.when((value, current) => isSubset(value, current), why);
  },
  /** A number that may lower, never raise, the trusted value (or `fallback` when unset). */
  atMost(fallback: number): TrustRule {
    return (value, ctx) => {
      const current = typeof ctx.current === "number" ? ctx.current : fallback;
      if (typeof value === "number" && value <= current) return value;
      ctx.ignore(ctx.key, `raises a limit (${current} → ${String(value)})`);
      return DROP;
    };
  },
};

export function isSubset(items: unknown, of: unknown): boolean {
  const list = Array.isArray(of) ? of : [];
  return Array.isArray(items) && items.every((item) => list.includes(item));
}

export interface ContributedKey {
  schema: z.ZodType;
  /** What an untrusted project's value of this key may do (default: dropped, as not known to be safe). */
  trust?: TrustRule;
}

/**
 * Keys a contribution adds. `agent.NAME` adds to the shared agent section, `tools.TOOL.FIELD` adds a
 * field to one tools entry, any other name is a top-level section.
 */
export type ContributedKeys = Record<string, ContributedKey>;

type LastSegment<K extends string> = K extends `${string}.${infer Rest}` ? LastSegment<Rest> : K;

export type SectionValues<Keys extends ContributedKeys> = {
  [K in keyof Keys & string as LastSegment<K>]: z.output<Keys[K]["schema"]>;
};

/** The contributed keys' values as a config file may write them (defaults not yet applied). */
export type SectionInputs<Keys extends ContributedKeys> = {
  [K in keyof Keys & string as LastSegment<K>]: z.input<Keys[K]["schema"]>;
};

/** A setting an untrusted project asked for outside its configs/app.json, reported as ignored. */
export interface UntrustedFileSetting {
  key: string;
  source: string;
  why: string;
}

export interface ConfigContribution<Keys extends ContributedKeys = ContributedKeys> {
  /** The family or plugin that owns these keys (named in clash errors and docs). */
  owner: string;
  keys: Keys;
  /**
   * What an untrusted project's own files besides configs/app.json (the mcp family's `.mcp.json`)
   * ask for: never applied, listed in `trust.ignored` so the user hears about it.
   */
  untrustedFiles?: (root: string) => UntrustedFileSetting[];
  /** A one-line description of the section for generated docs. */
  docs?: string;
  /** The contributed keys' values in a parsed config, named by their last segment. */
  read(config: ToolbeltConfig): SectionValues<Keys>;
}

function readPath(config: unknown, dotted: string): unknown {
  let node = config;
  for (const part of dotted.split(".")) {
    if (typeof node !== "object" || node === null) return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}

const KEY_PATTERN =
  /^(?:agent\.[a-z][a-z0-9_]*|tools\.[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*|[a-zA-Z][a-zA-Z0-9_-]*)$/;

/** Declares config keys owned by a family or plugin. */
export function defineConfigSection<Keys extends ContributedKeys>(section: {
  owner: string;
  keys: Keys;
  docs?: string;
  untrustedFiles?: (root: string) => UntrustedFileSetting[];
}): ConfigContribution<Keys> {
  for (const key of Object.keys(section.keys))
    if (!KEY_PATTERN.test(key))
      throw new ToolbeltError(
        "EPLUGIN",
        `${section.owner}: config key ${key} must be agent.NAME, tools.TOOL.FIELD or a top-level NAME`,
      );
  return {
    ...section,
    read(config) {
      const out: Record<string, unknown> = {};
      for (const key of Object.keys(section.keys))
        out[key.split(".").at(-1) as string] = readPath(config, key);
      return out as SectionValues<Keys>;
    },
  };
}

/** Fields of an event without the envelope (`v`, `seq`, `session`, `at`) and `type`. */
export type EventShapes = Record<string, z.ZodRawShape>;

export interface EventContribution<Shapes extends EventShapes = EventShapes> {
  owner: string;
  /** Event type names as they go on the wire, each with its fields. */
  events: Shapes;
}

const PLUGIN_EVENT = /^[a-z][a-z0-9-]*\/[a-z][a-z0-9_]*$/;

/**
 * Declares a plugin's events. Their `type` on the wire is `OWNER/NAME` (e.g. `plugin-git/status`):
 * bare names belong to core and the built-in families, so a plugin can never shadow `tool_result`,
 * and SSE and console consumers can route on the prefix.
 */
export function defineEvents<const Names extends string, Shapes extends Record<Names, z.ZodRawShape>>(
  owner: string,
  events: Shapes,
): EventContribution<{ [K in keyof Shapes & string as `${typeof owner}/${K}`]: Shapes[K] }> {
  const out: Record<string, z.ZodRawShape> = {};
  for (const [name, shape] of Object.entries(events)) {
    const type = `${owner}/${name}`;
    if (!PLUGIN_EVENT.test(type))
      throw new ToolbeltError("EPLUGIN", `${owner}: event ${type} must be OWNER/NAME in lower case`);
    out[type] = shape as z.ZodRawShape;
  }
  return { owner, events: out as never };
}

/** Declares a built-in family's events, whose names stay bare for wire compatibility. */
export function defineBuiltinEvents<Shapes extends EventShapes>(
  owner: string,
  events: Shapes,
): EventContribution<Shapes> {
  return { owner, events };
}

/** Everything one family or plugin contributes. */
export interface Contributions {
  config?: readonly ConfigContribution[];
  events?: readonly EventContribution[];
  /** Tool, family and profile names its `tools.*` entries may use, known even when it is not loaded. */
  toolKeys?: readonly string[];
  /**
   * Which of the interchangeable edit tools (`editBackend`) the session binds for a model: the edit
   * family's choice (pinned by its config, else by model name). Without one, `edit_file`.
   */
  chooseEditBackend?: (ctx: { model: string | undefined; config: ToolbeltConfig }) => EditBackend;
  /**
   * How the family's tools see a command line (the shell family's parser): the `match` and
   * `not_match` examples of `shell(...)` permission rules are checked with it when a session starts.
   */
  parseCommandLine?: (commandLine: string) => Promise<RuleSubjects>;
}

/** A clash between two owners of one config key or event type: refused at startup. */
export function clash(what: string, name: string, first: string, second: string): ToolbeltError {
  return new ToolbeltError(
    "EPLUGIN",
    `${what} ${name} is contributed by both ${first} and ${second}; each key or event has one owner`,
    { details: { name, owners: [first, second] } },
  );
}

/** Every contributed config key with its owner, refusing a key two owners claim. */
export function contributedKeys(
  contributions: readonly ConfigContribution[],
  reserved: ReadonlyMap<string, string>,
): Map<string, { owner: string; key: ContributedKey }> {
  const out = new Map<string, { owner: string; key: ContributedKey }>();
  const seen = new Set<ConfigContribution>();
  for (const contribution of contributions) {
    // The same module reached twice (a family and its gate) is one contribution, not a clash.
    if (seen.has(contribution)) continue;
    seen.add(contribution);
    for (const [name, key] of Object.entries(contribution.keys)) {
      const owner = reserved.get(name) ?? out.get(name)?.owner;
      if (owner !== undefined) throw clash("config key", name, owner, contribution.owner);
      out.set(name, { owner: contribution.owner, key });
    }
  }
  return out;
}

/** `contributions` with the ones found more than once (by identity) left out. */
export function uniqueContributions<T>(items: readonly T[]): T[] {
  return [...new Set(items)];
}

/** JSON Schema of one contributed key, for docs. */
export function keyJsonSchema(key: ContributedKey): Record<string, unknown> {
  const json = z.toJSONSchema(key.schema, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
  delete json.$schema;
  return json;
}
