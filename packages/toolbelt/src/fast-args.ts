// A parser for the plain, well-formed command lines of `run`, `exec` and `tools`, so a one-shot call
// does not load yargs (≈ 50–90 ms of a cold start: yargs, cliui and string-width). It only says
// "yes" when it is sure yargs would read the line the same way; for anything else (help, aliases,
// unknown or repeated flags, values that look like flags, extra words) it says undefined and the
// caller hands the line to yargs, which also owns every usage message.

type Kind = "string" | "strings" | "boolean";

interface FlagSpec {
  kind: Kind;
  /** For string flags: the values yargs' `choices` accepts. */
  choices?: readonly string[];
}

const COMMON: Record<string, FlagSpec> = {
  root: { kind: "string" },
  config: { kind: "string" },
  profile: { kind: "string" },
  model: { kind: "string" },
  allow: { kind: "strings" },
  trust: { kind: "boolean" },
};

const COMMANDS = {
  run: {
    positional: "tool",
    flags: {
      ...COMMON,
      input: { kind: "string" },
      "input-file": { kind: "string" },
      interactive: { kind: "boolean" },
      format: { kind: "string", choices: ["json", "text"] },
      "fail-on-command-error": { kind: "boolean" },
    },
    defaults: { format: "json", failOnCommandError: true },
  },
  exec: {
    positional: undefined,
    flags: {
      ...COMMON,
      events: { kind: "boolean" },
      "fail-on-error": { kind: "boolean" },
      "fail-on-command-error": { kind: "boolean" },
    },
    defaults: { events: false, failOnError: true, failOnCommandError: true },
  },
  tools: {
    positional: undefined,
    flags: {
      ...COMMON,
      format: { kind: "string", choices: ["json", "openai", "anthropic", "mcp", "names", "text"] },
    },
    defaults: { format: "json" },
  },
} satisfies Record<
  string,
  { positional: string | undefined; flags: Record<string, FlagSpec>; defaults: Record<string, unknown> }
>;

export type FastCommand = keyof typeof COMMANDS;

export interface FastArgs {
  command: FastCommand;
  args: Record<string, unknown> & { root: string };
}

/** yargs reads a lone "-" as a positional; `--input -` (stdin) is passed on as `--input=-`. */
export function normaliseArgv(argv: readonly string[]): string[] {
  return argv.flatMap((arg, i) =>
    arg === "--input" && argv[i + 1] === "-"
      ? ["--input=-"]
      : arg === "-" && argv[i - 1] === "--input"
        ? []
        : [arg],
  );
}

const camel = (flag: string) => flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

/** The parsed line, or undefined when yargs must read it. */
export function parseFast(argv: readonly string[], cwd = process.cwd()): FastArgs | undefined {
  const command = argv[0];
  if (command !== "run" && command !== "exec" && command !== "tools") return undefined;
  const spec: {
    positional: string | undefined;
    flags: Record<string, FlagSpec>;
    defaults: Record<string, unknown>;
  } = COMMANDS[command];
  const out: Record<string, unknown> = { root: cwd, ...spec.defaults };
  const seen = new Set<string>();
  const positionals: string[] = [];
  for (let i = 1; i < argv.length; i++) {
    const token = argv[i] as string;
    if (!token.startsWith("--")) {
      // A lone "-x" is an alias or a negative number: yargs' business.
      if (token.startsWith("-")) return undefined;
      positionals.push(token);
      continue;
    }
    if (token === "--") return undefined;
    const eq = token.indexOf("=");
    let name = eq < 0 ? token.slice(2) : token.slice(2, eq);
    let inline = eq < 0 ? undefined : token.slice(eq + 1);
    let negated = false;
    if (!(name in spec.flags) && name.startsWith("no-") && spec.flags[name.slice(3)]?.kind === "boolean") {
      name = name.slice(3);
      negated = true;
      if (inline !== undefined) return undefined;
    }
    const flag = spec.flags[name];
    if (!flag) return undefined;
    if (seen.has(name) && flag.kind !== "strings") return undefined;
    seen.add(name);
    const key = camel(name);
    if (flag.kind === "boolean") {
      // `--trust false` (value as the next word) is read by yargs in ways not worth mirroring.
      const next = argv[i + 1];
      if (inline === undefined && (next === "true" || next === "false")) return undefined;
      if (inline !== undefined && inline !== "true" && inline !== "false") return undefined;
      out[key] = negated ? false : inline === undefined ? true : inline === "true";
      continue;
    }
    if (inline === undefined) {
      const next = argv[i + 1];
      if (next === undefined || next.startsWith("-")) return undefined;
      inline = next;
      i++;
      // An array flag takes every following word: `--allow a b` is two values to yargs.
      if (flag.kind === "strings" && argv[i + 1] !== undefined && !argv[i + 1]?.startsWith("-"))
        return undefined;
    }
    if (flag.choices && !flag.choices.includes(inline)) return undefined;
    if (flag.kind === "strings") out[key] = [...((out[key] as string[] | undefined) ?? []), inline];
    else out[key] = inline;
  }
  if (spec.positional === undefined ? positionals.length !== 0 : positionals.length !== 1) return undefined;
  if (spec.positional) out[spec.positional] = positionals[0];
  return { command, args: out as FastArgs["args"] };
}
