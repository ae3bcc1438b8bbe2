import { createRequire } from "node:module";
import path from "node:path";
import type { CommandPart, RuleSubjects } from "@toolbelt/core";
import type { Node as SyntaxNode, Parser as TsParser } from "web-tree-sitter";

/**
 * What a command line runs, for permission rules: every simple command of it — through pipelines,
 * lists, subshells, groups, command and process substitutions, `bash -c` strings, `eval` of literal
 * text, function bodies, here-docs and control flow — as word lists, plus the files it redirects
 * into. Parsed by tree-sitter's bash grammar (a wasm build: no native code), loaded on the first
 * call only, so a session without rules never loads it. Whatever it cannot see through is a part
 * marked `opaque`, which the rules answer with ask, never allow.
 */

let parserPromise: Promise<TsParser> | undefined;

function loadParser(): Promise<TsParser> {
  parserPromise ??= (async () => {
    const { Parser, Language } = await import("web-tree-sitter");
    await Parser.init();
    const require = createRequire(import.meta.url);
    const bash = await Language.load(require.resolve("tree-sitter-bash/tree-sitter-bash.wasm"));
    const parser = new Parser();
    parser.setLanguage(bash);
    return parser;
  })();
  // A failed load is retried on the next call rather than cached.
  parserPromise.catch(() => {
    parserPromise = undefined;
  });
  return parserPromise;
}

/** Longer command lines are not parsed for the rules (they ask): the parse is bounded. */
export const MAX_RULE_COMMAND_CHARS = 64 * 1024;
/** `bash -c "bash -c '…'"` and `eval` are followed this deep; deeper asks. */
const MAX_DEPTH = 8;

/**
 * Wrappers that only run their argument (with a time limit, niceness, no hangup...): the rules see
 * the inner command as if written alone. The value lists the options that take a separate value;
 * `positional` counts leading operands before the command (`timeout 5 cmd`).
 */
const TRANSPARENT: Record<string, { takesValue?: string[]; positional?: number }> = {
  builtin: {},
  command: {},
  coproc: {},
  env: { takesValue: ["-u", "--unset", "-C", "--chdir"] },
  exec: { takesValue: ["-a"] },
  ionice: { takesValue: ["-c", "--class", "-n", "--classdata"] },
  nice: { takesValue: ["-n", "--adjustment"] },
  nohup: {},
  setsid: {},
  stdbuf: { takesValue: ["-i", "-o", "-e", "--input", "--output", "--error"] },
  time: { takesValue: ["-f", "--format", "-o", "--output"] },
  timeout: { takesValue: ["-s", "--signal", "-k", "--kill-after"], positional: 1 },
};

/**
 * Commands that run their arguments with other privileges, inputs or timing: they always ask; the
 * inner command is still judged so that a deny rule on it denies (`sudo curl x`).
 */
const RUNNERS: ReadonlySet<string> = new Set([
  "sudo",
  "doas",
  "pkexec",
  "su",
  "runuser",
  "xargs",
  "parallel",
  "watch",
  "chroot",
  "unshare",
  "nsenter",
  "flock",
  "strace",
  "ltrace",
]);

const SHELLS: ReadonlySet<string> = new Set(["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"]);

/** Variables that change which program runs or what the shell executes: setting one asks. */
const LOADER_VARIABLE =
  /^(PATH|LD_\w+|DYLD_\w+|BASH_ENV|ENV|IFS|SHELLOPTS|BASHOPTS|PS4|PROMPT_COMMAND|NODE_OPTIONS|BASH_FUNC_.*|GIT_\w*|PYTHONPATH|PERL5OPT|RUBYOPT)$/;

/**
 * Builtins that take variable names: a name like `a[$(cmd)]` runs `cmd` when its subscript is
 * evaluated, so a name only known at run time (`printf -v "$n"`) is as opaque as one with a
 * substitution in its subscript. The value lists the options whose value is a name; `all`: every
 * argument may be a name.
 */
const NAME_TAKING: Record<string, readonly string[] | "all"> = {
  printf: ["-v"],
  wait: ["-p"],
  test: ["-v", "-R"],
  "[": ["-v", "-R"],
  read: "all",
  mapfile: "all",
  readarray: "all",
  getopts: "all",
  declare: "all",
  typeset: "all",
  local: "all",
  export: "all",
  readonly: "all",
  unset: "all",
};

/** Whether a word given as a variable name could make bash evaluate a subscript with a command in it. */
function evaluatedName(word: Word): boolean {
  return !word.literal || /\[[^\]]*[$`]/.test(word.value);
}

/** The words of a name-taking builtin's arguments that bash reads as variable names. */
function nameWords(base: string, words: readonly Word[]): Word[] {
  const spec = NAME_TAKING[base];
  if (spec === undefined) return [];
  if (spec === "all") return words.slice(1);
  const out: Word[] = [];
  words.forEach((w, i) => {
    const option = spec.find((o) => w.value.startsWith(o));
    if (i === 0 || !option) return;
    // `-v name` or `-vname`.
    const next = words[i + 1];
    if (w.value === option && next) out.push(next);
    else if (w.value !== option) out.push({ value: w.value.slice(option.length), literal: w.literal });
  });
  return out;
}

const ARITHMETIC_TEST = new Set(["-eq", "-ne", "-lt", "-le", "-gt", "-ge"]);

/**
 * Why `node` may run commands hidden in a variable's value, if it can: bash evaluates arithmetic
 * (`$(( x ))`, `(( x ))`, `${a[x]}`, `[[ $x -eq 1 ]]`) recursively, so `x='a[$(curl …)]'` runs curl;
 * `${x@P}` expands `x` as a prompt, command substitutions included.
 */
function evaluatesVariables(node: SyntaxNode): string | undefined {
  const why = "arithmetic on a variable can run commands from its value";
  const numeric = (n: SyntaxNode | null): boolean =>
    !n || n.type === "number" || (n.namedChildCount > 0 && named(n).every((c) => numeric(c)));
  switch (node.type) {
    case "arithmetic_expansion":
    case "c_style_for_statement":
      return named(node).every((c) => numeric(c) || c.type === "do_group") ? undefined : why;
    case "compound_statement":
      return node.text.startsWith("((") && !named(node).every((c) => numeric(c)) ? why : undefined;
    case "subscript": {
      const index = node.childForFieldName("index");
      return index && !numeric(index) && !/^[@*]$/.test(index.text) ? why : undefined;
    }
    case "binary_expression": {
      const op = node.childForFieldName("operator");
      if (!op || !ARITHMETIC_TEST.has(op.text)) return undefined;
      return numeric(node.childForFieldName("left")) && numeric(node.childForFieldName("right"))
        ? undefined
        : why;
    }
    case "expansion": {
      if (/@P\}$/.test(node.text)) return "${…@P} expands a variable as a prompt, which can run commands";
      const parts = node.children.filter((c): c is SyntaxNode => c !== null);
      // `${!n}`: n's value names the variable read, and a subscript in that name is evaluated.
      // (`${!a[@]}`, `${!prefix*}` list keys and names: nothing is evaluated.)
      if (parts[1]?.type === "!" && !/[@*]\]?\}$/.test(node.text))
        return "an indirect expansion reads the variable its value names, which can run commands";
      // `${x:offset:length}`: both are arithmetic.
      const colon = parts.findIndex((c) => !c.isNamed && c.type === ":");
      if (colon !== -1 && !parts.slice(colon + 1).every((c) => !c.isNamed || numeric(c))) return why;
      return undefined;
    }
    case "unary_expression": {
      // `[[ -v name ]]`, `[[ -R name ]]`: a subscript in the name is evaluated.
      const op = node.namedChildren[0];
      const operand = node.namedChildren[1];
      if (!op || !/^-[vR]$/.test(op.text) || !operand) return undefined;
      const name = literal(operand);
      return name === undefined || /\[[^\]]*[$`]/.test(name) ? why : undefined;
    }
    default:
      return undefined;
  }
}

/** What bash expands in text the parser left plain: substitutions, process substitutions, `$[…]`. */
const UNSEEN_SUBSTITUTION = /`|\$\(|\$\[|[<>]\(/;
/** Nodes whose text bash takes literally: quotes, `$'…'`, comments. */
const LITERAL_TEXT: ReadonlySet<string> = new Set(["raw_string", "ansi_c_string", "comment"]);

/**
 * The first node whose own text (what its children do not cover) holds a substitution the parser did
 * not recognise as one: a backquote in the word of `${x-…}`, in an unquoted here-document body, and
 * whatever else the grammar reads as plain text while bash runs it. Nothing the walker cannot see may
 * run under an allow rule, so such a line asks.
 */
function unseenSubstitution(rootNode: SyntaxNode): SyntaxNode | undefined {
  const stack: SyntaxNode[] = [rootNode];
  while (stack.length > 0) {
    const node = stack.pop() as SyntaxNode;
    if (LITERAL_TEXT.has(node.type)) continue;
    const children = node.children.filter((c): c is SyntaxNode => c !== null);
    // `<<'EOF'`, `<<"EOF"`, `<<\EOF`: a quoted delimiter leaves the body as it is.
    const literalBody =
      node.type === "heredoc_redirect" &&
      /['"\\]/.test(children.find((c) => c.type === "heredoc_start")?.text ?? "");
    if (node.isNamed) {
      let own = "";
      let at = node.startIndex;
      for (const child of children) {
        own += node.text.slice(at - node.startIndex, child.startIndex - node.startIndex);
        at = child.endIndex;
      }
      own += node.text.slice(at - node.startIndex);
      if (UNSEEN_SUBSTITUTION.test(own.replace(/\\[\s\S]/g, ""))) return node;
    }
    for (const child of children)
      if (!(literalBody && (child.type === "heredoc_body" || child.type === "heredoc_content")))
        stack.push(child);
  }
  return undefined;
}

/**
 * Long options that name a file the command writes, whatever the command (`git diff --output=F`,
 * `curl --output F`, `wget --output-document F`): judged by the write rules like a redirect target.
 */
const OUTPUT_OPTIONS: ReadonlySet<string> = new Set([
  "--output",
  "--output-file",
  "--output-document",
  "--out-file",
  "--outfile",
  "--log-file",
  "--append-output",
]);

/** Short options that name a written file, for the commands where they mean that (`grep -o` does not). */
const SHORT_OUTPUT_OPTIONS: Record<string, readonly string[]> = {
  sort: ["-o"],
  curl: ["-o"],
  wget: ["-O", "-o", "-a"],
  gcc: ["-o"],
  "g++": ["-o"],
  cc: ["-o"],
  "c++": ["-o"],
  clang: ["-o"],
  "clang++": ["-o"],
  ld: ["-o"],
  as: ["-o"],
  go: ["-o"],
  rustc: ["-o"],
  pandoc: ["-o"],
};

/** `--output json` (aws, az, gcloud): a format, not a file. */
const OUTPUT_FORMATS = /^(json|jsonc|yaml|yml|text|table|tsv|csv|none|wide|name|raw|plain)$/;

/** Redirect targets that are not files. */
const NOT_A_FILE = /^\/dev\/(null|stdin|stdout|stderr|fd\/\d+|tty)$/;

interface Word {
  value: string;
  /** False when the word expands at run time (its value is then its source text). */
  literal: boolean;
}

interface Collected {
  commands: CommandPart[];
  writes: string[];
  reads: string[];
}

function opaque(text: string, why: string): CommandPart {
  return { words: [text], text, opaque: why };
}

/** The literal value of a word after quote removal, or undefined when it expands at run time. */
function literal(node: SyntaxNode): string | undefined {
  switch (node.type) {
    case "word":
    case "command_name":
      if (node.type === "command_name") {
        const only = node.namedChildren[0];
        return only && node.namedChildCount === 1 ? literal(only) : undefined;
      }
      // A word with `$`, backquotes or brace/tilde tricks would have parsed into other nodes; an
      // unquoted backslash escapes the next character.
      return node.text.replace(/\\([\s\S])/g, "$1");
    case "number":
      return node.text;
    case "raw_string":
      return node.text.slice(1, -1);
    case "string": {
      let out = "";
      for (const child of node.namedChildren) {
        if (!child) return undefined;
        if (child.type !== "string_content") return undefined;
        out += child.text.replace(/\\([$`"\\\n])/g, "$1");
      }
      return out;
    }
    case "concatenation": {
      let out = "";
      for (const child of node.namedChildren) {
        const v = child ? literal(child) : undefined;
        if (v === undefined) return undefined;
        out += v;
      }
      return out;
    }
    default:
      return undefined;
  }
}

function named(node: SyntaxNode): SyntaxNode[] {
  return node.namedChildren.filter((c): c is SyntaxNode => c !== null);
}

class Walker {
  readonly out: Collected = { commands: [], writes: [], reads: [] };

  constructor(
    private readonly parser: TsParser,
    private readonly depth: number,
  ) {}

  /** Parses `source` and walks it; a line that does not parse is one opaque part. */
  script(source: string): void {
    if (source.length > MAX_RULE_COMMAND_CHARS) {
      this.out.commands.push(
        opaque(`${source.slice(0, 80)}…`, `it is over ${MAX_RULE_COMMAND_CHARS} characters`),
      );
      return;
    }
    const tree = this.parser.parse(source);
    if (!tree) {
      this.out.commands.push(opaque(source, "it cannot be parsed"));
      return;
    }
    try {
      if (tree.rootNode.hasError) {
        this.out.commands.push(opaque(source, "it cannot be parsed as bash"));
        return;
      }
      // Bash reads these as word characters where the parser sees blanks: the words could differ.
      if (/[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\r(?!\n)/.test(source))
        this.out.commands.push(opaque(source, "it holds control characters"));
      const unseen = unseenSubstitution(tree.rootNode);
      if (unseen)
        this.out.commands.push(
          opaque(unseen.text, "it holds a substitution toolbelt cannot see into (it would run unjudged)"),
        );
      this.visit(tree.rootNode);
    } finally {
      tree.delete();
    }
  }

  private nested(source: string, text: string, why: string): void {
    if (this.depth >= MAX_DEPTH) {
      this.out.commands.push(opaque(text, `${why} nests over ${MAX_DEPTH} levels`));
      return;
    }
    const inner = new Walker(this.parser, this.depth + 1);
    inner.script(source);
    this.out.commands.push(...inner.out.commands);
    this.out.writes.push(...inner.out.writes);
    this.out.reads.push(...inner.out.reads);
  }

  private visit(node: SyntaxNode): void {
    const evaluated = evaluatesVariables(node);
    if (evaluated) this.out.commands.push(opaque(node.text, evaluated));
    switch (node.type) {
      case "command":
        this.command(node);
        return;
      case "variable_assignment":
        this.assignment(node);
        return;
      case "declaration_command":
      case "unset_command":
        // `export PATH=…`, `declare -x`, `local`: judged as a command of their own, so an allow rule
        // covering the rest does not silently cover them; their values may hold substitutions.
        this.out.commands.push({ words: node.text.split(/\s+/), text: node.text });
        this.declaration(node);
        for (const child of named(node))
          if (child.type === "variable_assignment") this.assignment(child);
          else this.visit(child);
        return;
      case "file_redirect":
      case "herestring_redirect":
      case "heredoc_redirect":
        this.redirect(node);
        return;
      default:
        for (const child of named(node)) this.visit(child);
    }
  }

  /** `declare -n`, `unset "$n"`, `export a[$(cmd)]`: names bash evaluates, or references to them. */
  private declaration(node: SyntaxNode): void {
    const args = named(node).filter((c) => c.type !== "variable_assignment");
    if (args.some((c) => /^-[a-zA-Z]*n/.test(c.text))) {
      this.out.commands.push(
        opaque(node.text, "it declares a name reference, which can evaluate a subscript"),
      );
      return;
    }
    const words = args.map((c): Word => {
      const value = literal(c);
      return value === undefined ? { value: c.text, literal: false } : { value, literal: true };
    });
    if (words.some((w) => !w.value.startsWith("-") && evaluatedName(w)))
      this.out.commands.push(
        opaque(node.text, "it takes a variable name that could evaluate a subscript with a command in it"),
      );
  }

  private assignment(node: SyntaxNode): void {
    const name = node.childForFieldName("name")?.text ?? "";
    if (LOADER_VARIABLE.test(name)) this.out.commands.push(opaque(node.text, `it sets ${name}`));
    for (const child of named(node)) if (child.type !== "variable_name") this.visit(child);
  }

  private redirect(node: SyntaxNode): void {
    // Operators are the unnamed children: `>`, `>>`, `&>`, `>|`, `<`, `<>`, `>&`, `<&`...
    const op = node.children
      .filter((c): c is SyntaxNode => c !== null && !c.isNamed)
      .map((c) => c.text)
      .join("");
    if (node.type === "file_redirect") {
      const dest = node.childForFieldName("destination") ?? named(node).at(-1);
      if (!dest) return;
      const value = literal(dest);
      for (const child of named(node)) this.visit(child);
      if (value === undefined) {
        this.out.commands.push(opaque(node.text, "its redirect target is not literal"));
        return;
      }
      // `2>&1`, `>&-`: a descriptor, not a file.
      if ((op.endsWith("&") && /^(\d+|-)$/.test(value)) || NOT_A_FILE.test(value)) return;
      if (/^\/dev\/(tcp|udp)\//.test(value)) {
        this.out.commands.push(opaque(node.text, "it redirects to a network connection"));
        return;
      }
      if (op.startsWith("<") && op !== "<>") this.out.reads.push(value);
      else this.out.writes.push(value);
      return;
    }
    for (const child of named(node)) this.visit(child);
  }

  private command(node: SyntaxNode): void {
    const words: Word[] = [];
    for (const child of named(node)) {
      if (child.type === "variable_assignment") {
        this.assignment(child);
        continue;
      }
      if (child.type.endsWith("_redirect")) {
        this.redirect(child);
        continue;
      }
      if (child.type === "comment") continue;
      const value = literal(child);
      words.push(value === undefined ? { value: child.text, literal: false } : { value, literal: true });
      // Substitutions inside a word run first: each is judged as a command line of its own.
      this.visit(child);
    }
    if (words.length > 0) this.words(words, node.text);
  }

  /** Judges one simple command given as words, seeing through wrappers, shells and eval. */
  private words(words: Word[], text: string): void {
    const first = words[0] as Word;
    // A name from an expansion, or one a glob or brace expansion rewrites (`/usr/bin/cur?`, `{curl,x}`).
    if (!first.literal || /[*?[{]/.test(first.value)) {
      this.out.commands.push(opaque(text, "its command name is only known at run time"));
      return;
    }
    const values = words.map((w) => w.value);
    const base = path.posix.basename(first.value);
    const wrapper = TRANSPARENT[base];
    if (wrapper) {
      const inner = innerCommand(values, wrapper, base === "env");
      if (inner === "opaque") {
        this.out.commands.push(opaque(text, `${base} is given options toolbelt does not follow`));
        return;
      }
      if (inner.loader) this.out.commands.push(opaque(text, `it sets ${inner.loader}`));
      if (inner.at >= words.length) {
        this.out.commands.push({ words: values, text });
        return;
      }
      this.words(words.slice(inner.at), text);
      return;
    }
    if (RUNNERS.has(base)) {
      this.out.commands.push(opaque(text, `${base} runs its arguments as a command`));
      const at = words.findIndex((w, i) => i > 0 && !w.value.startsWith("-"));
      if (at !== -1) this.words(words.slice(at), text);
      return;
    }
    if (SHELLS.has(base)) {
      this.shell(words, text);
      return;
    }
    if (base === "eval") {
      if (words.slice(1).some((w) => !w.literal)) {
        this.out.commands.push(opaque(text, "eval runs text only known at run time"));
        return;
      }
      this.nested(values.slice(1).join(" "), text, "eval");
      return;
    }
    if (base === "let") {
      this.out.commands.push(opaque(text, "let evaluates arithmetic, which can run commands"));
      return;
    }
    if (nameWords(base, words).some(evaluatedName)) {
      this.out.commands.push(
        opaque(text, `${base} takes a variable name that could evaluate a subscript with a command in it`),
      );
      return;
    }
    if (base === "source" || base === "." || base === "trap") {
      this.out.commands.push(opaque(text, `${base} runs commands toolbelt cannot see`));
      return;
    }
    this.out.commands.push({ words: values, text });
    this.optionWrites(base, words, text);
  }

  /** Files a command writes through its options (`--output=FILE`, `sort -o FILE`): writes, like `> FILE`. */
  private optionWrites(base: string, words: readonly Word[], text: string): void {
    const short = SHORT_OUTPUT_OPTIONS[base] ?? [];
    for (let i = 1; i < words.length; i++) {
      const w = words[i] as Word;
      if (w.value === "--") break;
      let target: Word | undefined;
      const long = /^(--[a-z][a-z-]*)(=|$)/.exec(w.value);
      if (long && OUTPUT_OPTIONS.has(long[1] as string)) {
        target = long[2]
          ? { value: w.value.slice((long[1] as string).length + 1), literal: w.literal }
          : words[++i];
      } else {
        const option = short.find((o) => w.value.startsWith(o));
        if (option)
          target =
            w.value === option ? words[++i] : { value: w.value.slice(option.length), literal: w.literal };
      }
      if (!target) continue;
      if (!target.literal) this.out.commands.push(opaque(text, "it writes to a file only known at run time"));
      else if (target.value !== "-" && !NOT_A_FILE.test(target.value) && !OUTPUT_FORMATS.test(target.value))
        this.out.writes.push(target.value);
    }
  }

  private shell(words: Word[], text: string): void {
    const name = (words[0] as Word).value;
    const args = words.slice(path.posix.basename(name) === "busybox" ? 2 : 1);
    let i = 0;
    let dashC = false;
    for (; i < args.length; i++) {
      const a = (args[i] as Word).value;
      if (a === "--") {
        i++;
        break;
      }
      if (!/^[-+]/.test(a)) break;
      if (/^-[a-zA-Z]*c[a-zA-Z]*$/.test(a)) dashC = true;
      // `-o option` / `-O shopt` take a value.
      if (a === "-o" || a === "+o" || a === "-O" || a === "+O") i++;
    }
    const script = args[i];
    if (!dashC || script === undefined) {
      this.out.commands.push(opaque(text, `${name} runs commands from a script or its input`));
      return;
    }
    if (!script.literal) {
      this.out.commands.push(opaque(text, `${name} -c runs text only known at run time`));
      return;
    }
    this.nested(script.value, text, `${name} -c`);
  }
}

/** The command a transparent wrapper runs, after its options (and `env`'s assignments). */
function innerCommand(
  words: string[],
  spec: { takesValue?: string[]; positional?: number },
  isEnv: boolean,
): { at: number; loader?: string } | "opaque" {
  let i = 1;
  let loader: string | undefined;
  for (; i < words.length; i++) {
    const w = words[i] as string;
    if (w === "--") {
      i++;
      break;
    }
    if (isEnv && /^-[a-zA-Z]*S/.test(w)) return "opaque";
    if (isEnv && w === "--split-string") return "opaque";
    if (w.startsWith("-") && w.length > 1) {
      if (spec.takesValue?.includes(w)) i++;
      continue;
    }
    if (isEnv && /^[A-Za-z_]\w*=/.test(w)) {
      const variable = w.slice(0, w.indexOf("="));
      if (LOADER_VARIABLE.test(variable)) loader ??= variable;
      continue;
    }
    break;
  }
  i += spec.positional ?? 0;
  return { at: i, ...(loader ? { loader } : {}) };
}

/** The simple commands and redirect targets of a command line (see the module comment). */
export async function commandLineParts(commandLine: string): Promise<Collected> {
  const parser = await loadParser();
  const walker = new Walker(parser, 0);
  walker.script(commandLine);
  return walker.out;
}

/** `ruleSubjects` for a tool whose input is `{ command, cwd? }`. */
export async function shellRuleSubjects(input: {
  command: string;
  cwd?: string | undefined;
}): Promise<RuleSubjects> {
  const parts = await commandLineParts(input.command);
  return { ...parts, ...(input.cwd ? { cwd: input.cwd } : {}) };
}
