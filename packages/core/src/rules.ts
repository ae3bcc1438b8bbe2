import path from "node:path";
import { z } from "zod";
import type { ToolbeltConfig } from "./config.js";
import { ToolbeltError } from "./errors.js";
import type { PolicySubject } from "./permissions.js";
import type { Access } from "./tool.js";

/**
 * Permission rules: `tools.<key>.rules = { allow, ask, deny }` of `verb(pattern)` strings.
 *
 * Verbs: `shell` matches the simple commands of a tool that runs command lines (`shell(npm test:*)`,
 * `shell(git diff*)`); `read` / `write` match the paths a call reads or writes (`read(src/**)`);
 * a tool or family name matches that tool's own paths whatever its access (`write_file(docs/**)`).
 * A verb without a pattern (`shell`, `write`) matches every subject of that verb.
 * Precedence: any deny → deny (even under `--allow`); else any ask → ask; else, when an allow rule
 * covers every part of the call, allow; else the mode/allowlist decision as without rules.
 */

const RULE = /^([A-Za-z][\w-]*)(?:\((.*)\))?$/s;

const ruleText = z
  .string()
  .regex(RULE, 'a rule is verb or verb(pattern), e.g. "shell(npm test:*)" or "read(src/**)"');
/** Examples a rule carries are checked when the config loads; each is bounded like a command line. */
const MAX_EXAMPLES = 64;
const example = z.string().min(1).max(4096);
/**
 * A rule with the examples that test it: `match` must be decided by the rule, `not_match` must not
 * (for `shell` rules, command lines as the shell tool parses them; for the other verbs, paths).
 */
const ruleWithExamples = z.strictObject({
  rule: ruleText,
  match: z.array(example).max(MAX_EXAMPLES).optional(),
  not_match: z.array(example).max(MAX_EXAMPLES).optional(),
});
const ruleList = z.array(z.union([ruleText, ruleWithExamples]));
export const rulesSchema = z.strictObject({
  allow: ruleList.optional(),
  ask: ruleList.optional(),
  deny: ruleList.optional(),
});
export type RulesConfig = z.infer<typeof rulesSchema>;
/** One entry of a rule list: `verb(pattern)`, or `{ rule, match?, not_match? }`. */
export type RuleEntry = z.infer<typeof ruleWithExamples> | string;

export type RuleKind = "allow" | "ask" | "deny";
export const RULE_KINDS: readonly RuleKind[] = ["deny", "ask", "allow"];

/** One simple command of a command line, as a tool's `ruleSubjects` reports it. */
export interface CommandPart {
  /** The command's words after quote removal (`n"p"m` is `npm`); a non-literal word keeps its source text. */
  words: string[];
  /** What a prompt shows for this part (the source text of the command). */
  text: string;
  /** Set when the part cannot be seen through (`eval "$x"`, `$cmd`, `sudo`, an unparseable line): it asks. */
  opaque?: string;
}

/** What a tool that runs command lines reports about one call, for the rules to judge. */
export interface RuleSubjects {
  commands: CommandPart[];
  /** Files the command line writes by redirection (`> out.txt`), as written, relative to `cwd`. */
  writes?: string[];
  /** Files it reads by redirection (`< in.txt`). */
  reads?: string[];
  /** The directory the command runs in, relative to the session's cwd (default: the session's cwd). */
  cwd?: string;
}

/** Rule subjects with redirect targets resolved to root-relative paths (absolute when outside the root). */
export interface ResolvedRuleSubjects {
  commands: CommandPart[];
  writes: string[];
  reads: string[];
}

export interface Rule {
  kind: RuleKind;
  verb: string;
  /** undefined: the rule matches every subject of its verb. */
  pattern: string | undefined;
  text: string;
  /** Where it is in the config, for messages: `tools.shell.rules.deny[0]`. */
  source: string;
  /** The `tools.*` key it is under. */
  key: string;
  /** Its index in its list. */
  index: number;
  /** The config layer it came from (a file, or `options`), when the config was loaded from layers. */
  layer?: string;
  match: readonly string[];
  notMatch: readonly string[];
}

export interface RuleVerdict {
  mode: RuleKind;
  /** The rule that decided, quoted with its source; undefined when the part was opaque. */
  rule?: string;
  /** The same rule, as data. */
  by?: Rule;
  /** The part of the call the verdict is about: a command's text or a path. */
  part: string;
  /** Why an opaque part asks. */
  why?: string;
  /** An ask `--allow` must not turn into allow: an opaque part that could hide a denied command. */
  firm?: boolean;
}

/** The call as `decide` sees it (permissions.ts). */
type Subject = PolicySubject;

type Entries = Record<string, { rules?: RulesConfig } | undefined>;

const RULE_LAYERS: unique symbol = Symbol("toolbelt.config.ruleLayers");
type RuleLayers = Record<string, Array<string | undefined>>;

/** The text of a rule list entry. */
export function ruleTextOf(entry: RuleEntry): string {
  return typeof entry === "string" ? entry : entry.rule;
}

function sameEntry(a: unknown, b: unknown): boolean {
  return a === b || JSON.stringify(a) === JSON.stringify(b);
}

/**
 * Records on a config merged from `layers` which layer each of its rules came from (rule lists add
 * up across layers; an entry two layers name is the first one's). Kept on the parsed config, hidden
 * from JSON and equality, as the contributions it was parsed with are.
 */
export function recordRuleLayers(
  config: ToolbeltConfig,
  layers: ReadonlyArray<{ value: unknown; source: string }>,
): void {
  const out: RuleLayers = {};
  const entries = config.tools as Entries;
  const listIn = (value: unknown, key: string, kind: RuleKind): unknown[] => {
    const tools = (value as { tools?: Record<string, { rules?: Record<string, unknown> }> } | undefined)
      ?.tools;
    const list = tools?.[key]?.rules?.[kind];
    return Array.isArray(list) ? list : [];
  };
  for (const [key, entry] of Object.entries(entries))
    for (const kind of RULE_KINDS)
      out[`${key}.${kind}`] = (entry?.rules?.[kind] ?? []).map(
        (item) => layers.find((l) => listIn(l.value, key, kind).some((x) => sameEntry(x, item)))?.source,
      );
  Object.defineProperty(config, RULE_LAYERS, { value: out, enumerable: false });
}

/** The rules under every `tools.*` key that applies to the tool (see policyKeys), in order. */
export function collectRules(keys: readonly string[], config: ToolbeltConfig): Rule[] {
  const entries = config.tools as Entries;
  const layers = (config as { [RULE_LAYERS]?: RuleLayers })[RULE_LAYERS];
  const out: Rule[] = [];
  for (const key of keys) {
    const rules = entries[key]?.rules;
    if (!rules) continue;
    for (const kind of RULE_KINDS) {
      (rules[kind] ?? []).forEach((entry, i) => {
        const text = ruleTextOf(entry);
        const m = RULE.exec(text);
        if (!m) return;
        const layer = layers?.[`${key}.${kind}`]?.[i];
        out.push({
          kind,
          verb: m[1] as string,
          pattern: m[2]?.trim() || undefined,
          text,
          source: `tools.${key}.rules.${kind}[${i}]`,
          key,
          index: i,
          ...(layer !== undefined ? { layer } : {}),
          match: typeof entry === "string" ? [] : (entry.match ?? []),
          notMatch: typeof entry === "string" ? [] : (entry.not_match ?? []),
        });
      });
    }
  }
  return out;
}

/** True when any rule applies to the tool: only then is a command line parsed for the rules. */
export function hasRules(keys: readonly string[], config: ToolbeltConfig): boolean {
  const entries = config.tools as Entries;
  return keys.some((k) => {
    const r = entries[k]?.rules;
    return !!r && !!(r.allow?.length || r.ask?.length || r.deny?.length);
  });
}

type GlobToken =
  | { t: "lit"; c: string }
  | { t: "one" }
  | { t: "star"; slash: boolean }
  /** `**​/`: zero or more whole directories; `skip` jumps past its two inner tokens. */
  | { t: "opt"; skip: number };

function tokenize(pattern: string, paths: boolean): GlobToken[] {
  const out: GlobToken[] = [];
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (c === "\\" && i + 1 < pattern.length) {
      out.push({ t: "lit", c: pattern[++i] as string });
    } else if (c === "*") {
      let j = i;
      while (pattern[j + 1] === "*") j++;
      const double = j > i;
      i = j;
      if (paths && double && pattern[i + 1] === "/") {
        out.push({ t: "opt", skip: 3 }, { t: "star", slash: true }, { t: "lit", c: "/" });
        i++;
      } else out.push({ t: "star", slash: !paths || double });
    } else if (c === "?") out.push({ t: "one" });
    else out.push({ t: "lit", c });
  }
  return out;
}

/**
 * Glob match by simulating the pattern as a set of positions, so any pattern (an untrusted project's
 * deny rules are caller input) costs at most pattern × text steps: no backtracking, no regex.
 * `paths`: `*` and `?` stop at `/`, `**` crosses it, `**​/` also matches no directory.
 */
export function globMatch(pattern: string, text: string, paths: boolean): boolean {
  const tokens = tokenize(pattern, paths);
  const n = tokens.length;
  const close = (states: Set<number>): Set<number> => {
    const stack = [...states];
    while (stack.length) {
      const i = stack.pop() as number;
      const tok = tokens[i];
      const next = tok?.t === "star" ? [i + 1] : tok?.t === "opt" ? [i + 1, i + tok.skip] : [];
      for (const j of next)
        if (!states.has(j)) {
          states.add(j);
          stack.push(j);
        }
    }
    return states;
  };
  let states = close(new Set([0]));
  for (const ch of text) {
    const next = new Set<number>();
    for (const i of states) {
      const tok = tokens[i];
      if (!tok) continue;
      if (tok.t === "lit" && tok.c === ch) next.add(i + 1);
      else if (tok.t === "one" && !(paths && ch === "/")) next.add(i + 1);
      else if (tok.t === "star" && (tok.slash || ch !== "/")) next.add(i);
    }
    if (next.size === 0) return false;
    states = close(next);
  }
  return states.has(n);
}

function normalisePattern(p: string): string {
  let out = p.replace(/\\/g, "/");
  while (out.startsWith("./")) out = out.slice(2);
  if (out.length > 1 && out.endsWith("/")) out = out.slice(0, -1);
  return out;
}

/** `src/**` also names `src` itself; `.` or `**` name the whole root. */
export function pathRuleMatches(pattern: string, rel: string): boolean {
  const p = normalisePattern(pattern);
  if (globMatch(p, rel, true)) return true;
  if (p.endsWith("/**") && globMatch(p.slice(0, -3), rel, true)) return true;
  return false;
}

/**
 * `npm test:*`: the words start with `npm test` (word by word, so `npm tests` is not `npm test`);
 * a pattern with `*` or `?` is a glob over the words joined by single spaces (`git diff*`); any other
 * pattern is the exact command.
 */
export function commandRuleMatches(pattern: string, words: readonly string[]): boolean {
  if (pattern.endsWith(":*")) {
    const want = pattern.slice(0, -2).trim().split(/\s+/).filter(Boolean);
    return want.length > 0 && want.length <= words.length && want.every((w, i) => words[i] === w);
  }
  const text = words.join(" ");
  if (/[*?]/.test(pattern)) return globMatch(pattern.trim().split(/\s+/).join(" "), text, false);
  return pattern.trim().split(/\s+/).join(" ") === text;
}

const COMMAND_VERBS: ReadonlySet<string> = new Set(["shell"]);

/** A warning about a rule as written: what it matches that its author likely did not mean. */
export interface RuleWarning {
  /** Where the rule is: `tools.shell.rules.allow[1]`. */
  key: string;
  rule: string;
  why: string;
}

/**
 * Allow rules whose glob ends inside a word: `shell(git diff*)` matches `git difftool -x CMD` too,
 * which runs any command. Said when the config is read (CLI stderr, `toolbelt doctor`); the rule
 * still applies as written.
 */
export function ruleWarnings(config: ToolbeltConfig): RuleWarning[] {
  const out: RuleWarning[] = [];
  const entries = config.tools as Entries;
  for (const key of Object.keys(entries))
    for (const rule of collectRules([key], config)) {
      if (rule.kind !== "allow" || !COMMAND_VERBS.has(rule.verb) || rule.pattern === undefined) continue;
      const m = /^(.*\S)\*$/.exec(rule.pattern);
      if (!m || rule.pattern.endsWith(":*")) continue;
      const prefix = (m[1] as string).trim();
      const word = prefix.split(/\s+/).at(-1) ?? prefix;
      out.push({
        key: rule.source,
        rule: rule.text,
        why: `it ends inside the word "${word}", so it also allows "${prefix}" followed by any other letters (as "shell(git diff*)" allows "git difftool -x CMD", which runs CMD); write ${JSON.stringify(`${rule.verb}(${prefix}:*)`)} to allow the command with any arguments`,
      });
    }
  return out;
}

function commandMatches(rule: Rule, part: CommandPart, strict: boolean): boolean {
  if (!COMMAND_VERBS.has(rule.verb)) return false;
  if (rule.pattern === undefined) return true;
  if (commandRuleMatches(rule.pattern, part.words)) return true;
  // Deny and ask also match the command by its base name: `/usr/bin/curl x` is `curl x` to them.
  const first = part.words[0];
  if (strict || !first?.includes("/")) return false;
  return commandRuleMatches(rule.pattern, [path.posix.basename(first), ...part.words.slice(1)]);
}

interface PathPart {
  rel: string;
  access: Access;
  /** The call's own paths (from `paths(input)`), which tool and family verbs also match. */
  own: boolean;
}

function pathMatches(rule: Rule, part: PathPart, subject: Subject): boolean {
  const byAccess = rule.verb === part.access;
  const byTool =
    part.own &&
    (rule.verb === subject.tool || rule.verb === subject.calledAs || rule.verb === subject.family);
  if (!byAccess && !byTool) return false;
  if (COMMAND_VERBS.has(rule.verb) && !byAccess) return false;
  return rule.pattern === undefined || pathRuleMatches(rule.pattern, part.rel);
}

/** Where a rule is: its place in the config, and the layer it came from when known. */
export function ruleWhere(rule: Rule): string {
  return rule.layer ? `${rule.source}, from ${rule.layer}` : rule.source;
}

function quote(rule: Rule): string {
  return `${rule.kind} rule ${JSON.stringify(rule.text)} (${ruleWhere(rule)})`;
}

/**
 * The verdict of the rules on one call, or undefined when they say nothing about it (the mode and
 * allowlist decide). Every command part, redirect target and path is judged on its own.
 */
export function judgeRules(
  keys: readonly string[],
  subject: Subject,
  config: ToolbeltConfig,
): RuleVerdict | undefined {
  return judgeWith(collectRules(keys, config), subject);
}

/** judgeRules over a given list of rules. */
function judgeWith(rules: readonly Rule[], subject: Subject): RuleVerdict | undefined {
  if (rules.length === 0) return undefined;
  const commands = subject.rules?.commands;
  const pathParts: PathPart[] = [
    ...subject.paths.map((rel) => ({ rel, access: subject.access, own: true })),
    ...(subject.rules?.writes ?? []).map((rel) => ({ rel, access: "write" as const, own: false })),
    ...(subject.rules?.reads ?? []).map((rel) => ({ rel, access: "read" as const, own: false })),
  ];
  const of = (kind: RuleKind) => rules.filter((r) => r.kind === kind);
  const deny = of("deny");
  const ask = of("ask");
  const allow = of("allow");

  for (const part of commands ?? []) {
    const hit = deny.find((r) => commandMatches(r, part, false));
    if (hit) return { mode: "deny", rule: quote(hit), by: hit, part: part.text };
  }
  for (const part of pathParts) {
    const hit = deny.find((r) => pathMatches(r, part, subject));
    if (hit) return { mode: "deny", rule: quote(hit), by: hit, part: part.rel };
  }
  const denyCommands = deny.some((r) => COMMAND_VERBS.has(r.verb));
  for (const part of commands ?? []) {
    if (part.opaque) return { mode: "ask", part: part.text, why: part.opaque, firm: denyCommands };
    const hit = ask.find((r) => commandMatches(r, part, false));
    if (hit) return { mode: "ask", rule: quote(hit), by: hit, part: part.text };
  }
  for (const part of pathParts) {
    const hit = ask.find((r) => pathMatches(r, part, subject));
    if (hit) return { mode: "ask", rule: quote(hit), by: hit, part: part.rel };
  }
  // Allow needs every part of what the call does: for a command line its commands and the files it
  // redirects into; for any other tool its paths. Nothing to judge → the rules say nothing.
  const primary: Array<() => Rule | undefined> = commands
    ? [
        ...commands.map((part) => () => allow.find((r) => commandMatches(r, part, true))),
        ...pathParts
          .filter((p) => !p.own)
          .map((part) => () => allow.find((r) => pathMatches(r, part, subject))),
      ]
    : pathParts.map((part) => () => allow.find((r) => pathMatches(r, part, subject)));
  if (primary.length === 0 || allow.length === 0) return undefined;
  let first: Rule | undefined;
  for (const check of primary) {
    const hit = check();
    if (!hit) return undefined;
    first ??= hit;
  }
  const shown = commands?.[0]?.text ?? pathParts[0]?.rel ?? "";
  return { mode: "allow", rule: quote(first as Rule), by: first as Rule, part: shown };
}

/**
 * For a tool that lists or searches (read access): which found paths the deny and ask rules leave
 * in its results, or undefined when no such rule applies. A listing cannot ask per file, so a file
 * an ask rule names is left out like a denied one (reading it directly still asks).
 */
export function listingRuleFilter(
  keys: readonly string[],
  subject: Pick<PolicySubject, "tool" | "calledAs" | "family">,
  config: ToolbeltConfig,
): ((paths: readonly string[]) => boolean[]) | undefined {
  const verbs = new Set([
    "read",
    subject.tool,
    subject.family,
    ...(subject.calledAs ? [subject.calledAs] : []),
  ]);
  const rules = collectRules(keys, config).filter(
    (r) => r.kind !== "allow" && verbs.has(r.verb) && !COMMAND_VERBS.has(r.verb),
  );
  if (rules.length === 0) return undefined;
  return (paths) =>
    paths.map((p) => !rules.some((r) => r.pattern === undefined || pathRuleMatches(r.pattern, p)));
}

/**
 * Resolves a tool's rule subjects for `judgeRules`: redirect targets become root-relative (or
 * absolute outside the root). `resolve` maps a path relative to the session's cwd (`cwdAbs`) to a
 * root-relative one and throws for a path outside the root.
 */
export function resolveRuleSubjects(
  subjects: RuleSubjects,
  resolve: (p: string) => string,
  cwdAbs: string,
): ResolvedRuleSubjects {
  const base = subjects.cwd ?? ".";
  const one = (p: string): string => {
    const joined = path.isAbsolute(p) ? p : path.join(base, p);
    try {
      return resolve(joined);
    } catch {
      return path.resolve(cwdAbs, joined);
    }
  };
  return {
    commands: subjects.commands,
    writes: (subjects.writes ?? []).map(one),
    reads: (subjects.reads ?? []).map(one),
  };
}

/** The line an approval prompt adds for a call the rules asked about. */
export function ruleAskNote(verdict: RuleVerdict): string {
  return verdict.rule
    ? `asked by ${verdict.rule} for: ${verdict.part}`
    : `asks because ${verdict.why ?? "it cannot be checked"}: ${verdict.part}`;
}

/** How a command line is parsed for the `shell` verb (the shell family's parser, which its tools use). */
export type CommandLineParser = (commandLine: string) => Promise<RuleSubjects>;

/** An example a rule carries that the judge disagrees with. */
export interface RuleExampleProblem {
  rule: Rule;
  example: string;
  /** Which list the example is in. */
  list: "match" | "not_match";
  why: string;
}

/** Redirect targets of an example, lexically inside the root or absolute: no real root to resolve against. */
function exampleResolve(p: string): string {
  const n = path.posix.normalize(p.replace(/\\/g, "/"));
  if (n === ".." || n.startsWith("../") || path.posix.isAbsolute(n)) throw new Error("outside");
  return n;
}

/** The call an example stands for: a command line for `shell` rules, a path for the others. */
async function exampleSubject(rule: Rule, example: string, parse: CommandLineParser): Promise<Subject> {
  if (COMMAND_VERBS.has(rule.verb))
    return {
      tool: rule.verb,
      family: rule.verb,
      access: "execute",
      paths: [],
      rules: resolveRuleSubjects(await parse(example), exampleResolve, "/"),
    };
  const access: Access = rule.verb === "write" ? "write" : "read";
  let rel: string;
  try {
    rel = exampleResolve(example);
  } catch {
    rel = path.posix.normalize(example);
  }
  return { tool: rule.verb, family: rule.verb, access, paths: [rel] };
}

/**
 * Judges every example a rule carries with the rule alone, through the same judge calls meet (and,
 * for `shell` rules, the shell family's parser): a `match` example must be decided by the rule — for
 * an allow rule that means it covers every command and redirect of the line — and a `not_match`
 * example must not. Rules of the `shell` verb are checked only when `parse` is given (a session
 * without a family that parses command lines runs no command lines either).
 */
export async function ruleExampleProblems(
  config: ToolbeltConfig,
  parse: CommandLineParser | undefined,
): Promise<RuleExampleProblem[]> {
  const problems: RuleExampleProblem[] = [];
  for (const key of Object.keys(config.tools))
    for (const rule of collectRules([key], config)) {
      if (COMMAND_VERBS.has(rule.verb) && !parse) continue;
      const examples = [
        ...rule.match.map((e) => ({ example: e, list: "match" as const })),
        ...rule.notMatch.map((e) => ({ example: e, list: "not_match" as const })),
      ];
      for (const { example, list } of examples) {
        const subject = await exampleSubject(rule, example, parse as CommandLineParser);
        const verdict = judgeWith([rule], subject);
        const decided = verdict?.by === rule;
        if (decided === (list === "match")) continue;
        const parts = (subject.rules?.commands.length ?? 0) + (subject.rules?.writes.length ?? 0);
        const why = decided
          ? `the rule ${rule.kind === "allow" ? "allows" : `${rule.kind === "deny" ? "denies" : "asks about"}`} it (${JSON.stringify(verdict?.part)})`
          : verdict?.why
            ? `it asks whatever the rules say: ${verdict.why}`
            : rule.kind === "allow" && parts > 1
              ? "the rule does not cover every command and redirect in it (an allow rule must)"
              : "the rule does not match it";
        problems.push({ rule, example, list, why });
      }
    }
  return problems;
}

/** One line naming the rule (place and layer), the example, and why they disagree. */
export function describeExampleProblem(p: RuleExampleProblem): string {
  return `${p.rule.kind} rule ${JSON.stringify(p.rule.text)} (${ruleWhere(p.rule)}): ${p.list} example ${JSON.stringify(p.example)} — ${p.why}`;
}

/** Throws EINVAL_CONFIG naming every rule whose examples disagree with the judge (see ruleExampleProblems). */
export async function checkRuleExamples(
  config: ToolbeltConfig,
  parse: CommandLineParser | undefined,
): Promise<void> {
  const problems = await ruleExampleProblems(config, parse);
  if (problems.length === 0) return;
  const lines = problems.map(describeExampleProblem);
  throw new ToolbeltError(
    "EINVAL_CONFIG",
    `invalid config: ${problems.length === 1 ? "a rule's example disagrees" : `${problems.length} rule examples disagree`} with the rule: ${lines.join("; ")}`,
    { details: { source: "rules", problems: lines } },
  );
}
