import type { PermissionMode, ToolbeltConfig } from "./config.js";
import { ToolbeltError } from "./errors.js";
import {
  hasRules,
  judgeRules,
  listingRuleFilter,
  type ResolvedRuleSubjects,
  type Rule,
  type RuleKind,
  type RuleSubjects,
  type RuleVerdict,
  resolveRuleSubjects,
  ruleAskNote,
} from "./rules.js";
import { testLinesSafely } from "./safe-regex.js";
import type { Access } from "./tool.js";

/** What the default policy does per kind of access: the shell asks, everything inside the root else runs. */
export const DEFAULT_MODES: Record<Access, PermissionMode> = {
  read: "allow",
  write: "allow",
  execute: "ask",
  interact: "allow",
};

export interface PolicySubject {
  tool: string;
  /** The name the tool was called by, when a profile renamed it. */
  calledAs?: string;
  family: string;
  access: Access;
  /** Root-relative paths the call touches. */
  paths: string[];
  /** What a tool that runs command lines does (its `ruleSubjects`), when permission rules apply to it. */
  rules?: ResolvedRuleSubjects;
}

export type Decision =
  | { mode: "allow"; source: string }
  | { mode: "ask"; source: string; verdict?: RuleVerdict }
  | { mode: "deny"; source: string; reason: string };

/**
 * `tools.file` governs every tool that reads or writes project files as files: the files family
 * (read_file, write_file, list_files, list_dir, search_files) and the edit family (edit_file and the
 * other backends), so no edit tool escapes a file allowlist meant for "the file tools".
 */
export const FILE_TOOLS_KEY = "file";
const FILE_FAMILIES: ReadonlySet<string> = new Set(["files", "edit"]);

type Entry = { mode?: PermissionMode; allowlist?: string[]; enabled?: boolean };

/**
 * The rules' part of `decide`: deny beats everything (`--allow` too); ask beats the mode, and
 * `--allow` answers it unless it is firm; an allow rule covering the whole call beats the mode.
 */
function ruleDecision(
  subject: PolicySubject,
  keys: readonly string[],
  config: ToolbeltConfig,
  allow: ReadonlySet<string>,
): Decision | undefined {
  const verdict = judgeRules(keys, subject, config);
  if (!verdict) return undefined;
  const source = verdict.rule ?? "permission rules";
  if (verdict.mode === "deny")
    return { mode: "deny", source, reason: `${JSON.stringify(verdict.part)} matches ${verdict.rule}` };
  if (verdict.mode === "ask") {
    if (!verdict.firm && keys.some((k) => allow.has(k))) return { mode: "allow", source: "--allow" };
    return { mode: "ask", source, verdict };
  }
  return { mode: "allow", source };
}

/** The `tools.*` keys that apply to a tool, broadest first: `file`, its family, its name, its profile name. */
export function policyKeys(subject: Pick<PolicySubject, "tool" | "calledAs" | "family">): string[] {
  // Runs for every tool on every call (bindings, decide): plain pushes, no Set, no filter.
  const keys: string[] = [];
  const add = (k: string | undefined) => {
    if (k && !keys.includes(k)) keys.push(k);
  };
  if (FILE_FAMILIES.has(subject.family)) keys.push(FILE_TOOLS_KEY);
  add(subject.family);
  add(subject.tool);
  add(subject.calledAs);
  return keys;
}

function entriesOf(config: ToolbeltConfig): Record<string, Entry | undefined> {
  return config.tools as Record<string, Entry | undefined>;
}

/** False when any key that applies to the tool (`file`, family, name, profile name) sets `enabled: false`. */
export function toolEnabled(
  subject: Pick<PolicySubject, "tool" | "calledAs" | "family">,
  config: ToolbeltConfig,
): boolean {
  const entries = entriesOf(config);
  return !policyKeys(subject).some((k) => entries[k]?.enabled === false);
}

/** Which of `paths` every applicable allowlist admits; `failed` names the first allowlist a path fails. */
function checkAllowlists(
  subject: Pick<PolicySubject, "tool" | "calledAs" | "family">,
  config: ToolbeltConfig,
  paths: readonly string[],
): { ok: boolean[]; failed: Array<string | undefined> } {
  const entries = entriesOf(config);
  const ok = paths.map(() => true);
  const failed: Array<string | undefined> = paths.map(() => undefined);
  for (const key of policyKeys(subject)) {
    const list = entries[key]?.allowlist;
    if (!list || paths.length === 0) continue;
    // An untrusted project's allowlist applies (it only tightens), so its patterns are caller input:
    // matched under the regex budget, and a pattern over it refuses the call (ETIMEOUT).
    const hits = list.map((p, i) =>
      testLinesSafely(new RegExp(p), paths, { what: `tools.${key}.allowlist[${i}]` }),
    );
    paths.forEach((_p, j) => {
      if (ok[j] && !hits.some((h) => h[j])) {
        ok[j] = false;
        failed[j] = `tools.${key}.allowlist`;
      }
    });
  }
  return { ok, failed };
}

/** The allowlist filter of a tool, or undefined when no allowlist applies to it. */
export function allowlistFilter(
  subject: Pick<PolicySubject, "tool" | "calledAs" | "family">,
  config: ToolbeltConfig,
): ((paths: readonly string[]) => boolean[]) | undefined {
  const entries = entriesOf(config);
  if (!policyKeys(subject).some((k) => entries[k]?.allowlist)) return undefined;
  return (paths) => checkAllowlists(subject, config, paths).ok;
}

/** The literal text an anchored pattern starts with (up to its first metacharacter), unescaped. */
function literalPrefix(source: string): string {
  let out = "";
  for (let i = 1; i < source.length; i++) {
    const c = source[i] as string;
    if (c === "\\") {
      const next = source[i + 1];
      // `\.`, `\/`, `\-`: an escaped punctuation character is itself; `\d`, `\w`... end the literal.
      if (next === undefined || /[A-Za-z0-9]/.test(next)) break;
      out += next;
      i++;
      continue;
    }
    if ("^$.|?*+()[]{}".includes(c)) {
      // `a?` / `a*` / `a{0,}` may drop the character just taken.
      if ("?*{".includes(c)) out = out.slice(0, -1);
      break;
    }
    out += c;
  }
  return out;
}

/**
 * Whether a file matching `source` could lie beneath directory `dir` (root-relative, "." for the
 * root). Answers yes whenever it cannot rule it out cheaply: the listing tools filter every result
 * by the allowlist afterwards, so admitting too much only lets a listing come back empty.
 */
function couldMatchBeneath(source: string, dir: string): boolean {
  if (dir === "." || dir === "") return true;
  // Unanchored, or alternatives at any level: some path under dir/ may contain a match.
  if (!source.startsWith("^") || source.includes("|")) return true;
  const prefix = literalPrefix(source);
  const under = `${dir}/`;
  return prefix.startsWith(under) || under.startsWith(prefix);
}

/**
 * The decision on the directory (or file) argument of a tool that lists or searches: a directory
 * passes an allowlist when some file it admits could lie beneath it — the tool must then keep only
 * the results the returned `filter` admits (see `allowlistFilter`); a file argument must itself pass.
 */
export function listingDecision(
  subject: Pick<PolicySubject, "tool" | "calledAs" | "family">,
  config: ToolbeltConfig,
  target: { rel: string; directory: boolean },
): { denied?: string; filter?: (paths: readonly string[]) => boolean[] } {
  const byRules = listingRuleFilter(policyKeys(subject), subject, config);
  const byList = allowlistFilter(subject, config);
  // Deny and ask rules drop files from what a listing returns; the allowlist also judges the directory.
  const filter =
    byRules && byList
      ? (paths: readonly string[]) => {
          const a = byRules(paths);
          const b = byList(paths);
          return paths.map((_p, i) => a[i] === true && b[i] === true);
        }
      : (byRules ?? byList);
  if (!byList) return filter ? { filter } : {};
  if (!target.directory) {
    const { ok, failed } = checkAllowlists(subject, config, [target.rel]);
    return ok[0] ? { filter } : { denied: `${target.rel} is not in ${failed[0]}` };
  }
  // The directory itself may be what a pattern names (`^src$`); else some file beneath must fit.
  if (checkAllowlists(subject, config, [target.rel]).ok[0]) return { filter };
  const entries = entriesOf(config);
  for (const key of policyKeys(subject)) {
    const list = entries[key]?.allowlist;
    if (!list) continue;
    if (!list.some((p) => couldMatchBeneath(p, target.rel)))
      return { denied: `no file under ${target.rel} can match tools.${key}.allowlist` };
  }
  return { filter };
}

/**
 * The permission policy: allowlists, then permission rules (rules.ts), then the mode per tool, per
 * family, or the default for the kind of access.
 * `allow` (from `--allow` or the SDK) turns ask into allow, never deny into allow.
 */
export function decide(subject: PolicySubject, config: ToolbeltConfig, allow: ReadonlySet<string>): Decision {
  const entries = entriesOf(config);
  const keys = policyKeys(subject);
  const { ok, failed } = checkAllowlists(subject, config, subject.paths);
  const outside = ok.indexOf(false);
  if (outside !== -1) {
    const source = failed[outside] as string;
    return { mode: "deny", source, reason: `${subject.paths[outside]} is not in ${source}` };
  }
  const byRule = ruleDecision(subject, keys, config, allow);
  if (byRule) return byRule;
  let mode: PermissionMode = DEFAULT_MODES[subject.access];
  let source = `default for ${subject.access} access`;
  // Broadest first, so the most specific key that sets a mode wins.
  for (const key of keys) {
    const m = entries[key]?.mode;
    if (m) {
      mode = m;
      source = `tools.${key}.mode`;
    }
  }
  if (mode === "deny") return { mode, source, reason: `denied by ${source}` };
  if (mode === "ask" && keys.some((k) => allow.has(k))) return { mode: "allow", source: "--allow" };
  return { mode, source };
}

/** A tool as `checkToolKeys` sees it: its names in every profile and its family. */
export interface NamedTool {
  name: string;
  family: string;
  profiles?: Record<string, { name?: string } | false>;
}

/**
 * The `tools.*` keys a session knows: `file`, `tool_search`, the names contributions list (every
 * built-in family's under createToolbelt, loaded or not: a config shared by every run may name
 * any), every family, tool and profile name of the tools it was granted, and the plugins' names.
 * Keys for tools that arrive later are admitted by their prefix or family: `mcp__…` (an MCP
 * server's tools) and `client` (tools a client brings).
 */
export function knownToolKeys(
  tools: readonly NamedTool[],
  pluginNames: readonly string[] = [],
  contributed: readonly string[] = [],
): string[] {
  const known = new Set<string>([
    FILE_TOOLS_KEY,
    "search",
    "client",
    "tool_search",
    ...contributed,
    ...pluginNames,
  ]);
  for (const tool of tools) {
    known.add(tool.name);
    known.add(tool.family);
    for (const variant of Object.values(tool.profiles ?? {}))
      if (variant && variant.name !== undefined) known.add(variant.name);
  }
  return [...known].sort();
}

/** Throws EINVAL_CONFIG naming every `tools.*` key no tool, family or plugin of the session answers to. */
export function checkToolKeys(
  config: ToolbeltConfig,
  tools: readonly NamedTool[],
  pluginNames: readonly string[] = [],
  contributed: readonly string[] = [],
): void {
  const known = knownToolKeys(tools, pluginNames, contributed);
  const unknown = Object.keys(config.tools).filter((k) => !known.includes(k) && !k.startsWith("mcp__"));
  if (unknown.length === 0) return;
  const keys = unknown.map((k) => `tools.${k}`).join(", ");
  throw new ToolbeltError(
    "EINVAL_CONFIG",
    `invalid config: unknown key${unknown.length > 1 ? "s" : ""} ${keys} (tools.* keys are tool, family and plugin names, "file", or mcp__<server>__<tool>; known here: ${[...known].join(", ")})`,
    { details: { source: "tools", problems: unknown.map((k) => `unknown key tools.${k}`), known } },
  );
}

/** What a call's command line does, for the rules; undefined (nothing parsed) when no rule applies to the tool. */
export async function ruleSubjectsFor(
  tool: { name: string; family: string; ruleSubjects?: (input: never) => Promise<RuleSubjects> },
  calledAs: string,
  input: unknown,
  config: ToolbeltConfig,
  resolve: (p: string) => string,
  cwdAbs: string,
): Promise<ResolvedRuleSubjects | undefined> {
  if (!tool.ruleSubjects || !hasRules(policyKeys({ tool: tool.name, calledAs, family: tool.family }), config))
    return undefined;
  return resolveRuleSubjects(await tool.ruleSubjects(input as never), resolve, cwdAbs);
}

/** The prompt line for an ask the rules decided ("" otherwise). */
export function ruleNote(decision: Decision): string {
  return decision.mode === "ask" && decision.verdict ? `\n${ruleAskNote(decision.verdict)}` : "";
}

/** The headless refusal for an ask the rules decided, naming the rule and the part; undefined otherwise. */
export function ruleRefusal(
  name: string,
  family: string,
  decision: Decision,
): { needs: string; how: string } | undefined {
  if (decision.mode !== "ask" || !decision.verdict) return undefined;
  const v = decision.verdict;
  return {
    needs: `${name} needs approval (${ruleAskNote(v)})`,
    how: v.firm
      ? "only a person can approve it (an approver on the client): --allow does not lift it while deny rules apply, since it could hide a denied command"
      : `allow it with --allow ${family} (CLI), an allow rule in your own config (--config FILE or the user config folder), or an approver on the client`,
  };
}

/** A permission rule as `toolbelt rules check` names it. */
export interface RuleReference {
  kind: RuleKind;
  rule: string;
  /** Its place in the config: `tools.shell.rules.deny[0]`. */
  source: string;
  /** The config layer (a file, or `options`) it came from, when known. */
  layer?: string;
}

/** What the rules alone say of one part of a call (a command of its line, a file it redirects into). */
export interface PartExplanation {
  kind: "command" | "write" | "read";
  text: string;
  /** undefined: no rule decides this part alone (the mode would). */
  decision?: RuleKind;
  rule?: RuleReference;
  /** Why an opaque part asks whatever the rules say. */
  why?: string;
}

/** The policy's decision on a call, the rule that made it (if one did), and what the rules say per part. */
export interface PolicyExplanation {
  decision: Decision["mode"];
  /** What decided: a rule quoted with its place, `tools.shell.mode`, `default for execute access`... */
  source: string;
  rule?: RuleReference;
  /** The part of the call the deciding rule was about. */
  part?: string;
  why?: string;
  parts: PartExplanation[];
}

function referenceOf(rule: Rule): RuleReference {
  return {
    kind: rule.kind,
    rule: rule.text,
    source: rule.source,
    ...(rule.layer !== undefined ? { layer: rule.layer } : {}),
  };
}

/**
 * `decide`, explained: the decision and what made it, and, for a call that runs a command line, what
 * the rules say of each of its commands and redirects taken alone (an allow needs every part; the
 * first deny or ask decides), so a user sees which segment of a compound line decided.
 */
export function explainDecision(
  subject: PolicySubject,
  config: ToolbeltConfig,
  allow: ReadonlySet<string>,
): PolicyExplanation {
  const decision = decide(subject, config, allow);
  const keys = policyKeys(subject);
  const verdict = judgeRules(keys, subject, config);
  const byRule = verdict !== undefined && decision.source === (verdict.rule ?? "permission rules");
  const one = (rules: ResolvedRuleSubjects): Omit<PartExplanation, "kind" | "text"> => {
    const v = judgeRules(keys, { ...subject, paths: [], rules }, config);
    if (!v) return {};
    return {
      decision: v.mode,
      ...(v.by ? { rule: referenceOf(v.by) } : {}),
      ...(v.why ? { why: v.why } : {}),
    };
  };
  const r = subject.rules;
  const parts: PartExplanation[] = r
    ? [
        ...r.commands.map((c) => ({
          kind: "command" as const,
          text: c.text,
          ...one({ commands: [c], writes: [], reads: [] }),
        })),
        ...r.writes.map((w) => ({
          kind: "write" as const,
          text: w,
          ...one({ commands: [], writes: [w], reads: [] }),
        })),
        ...r.reads.map((w) => ({
          kind: "read" as const,
          text: w,
          ...one({ commands: [], writes: [], reads: [w] }),
        })),
      ]
    : [];
  return {
    decision: decision.mode,
    source: decision.source,
    ...(byRule && verdict.by ? { rule: referenceOf(verdict.by) } : {}),
    ...(byRule ? { part: verdict.part } : {}),
    ...(byRule && verdict.why ? { why: verdict.why } : {}),
    parts,
  };
}
