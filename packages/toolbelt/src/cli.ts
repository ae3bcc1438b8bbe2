import { fstatSync, readFileSync } from "node:fs";
import path from "node:path";
import {
  addTrustedProject,
  type ClientInfo,
  type CommandWrapper,
  definePlugin,
  describeHooks,
  errorPayload,
  listTrustedProjects,
  normaliseError,
  type Payload,
  type Plugin,
  removeTrustedProject,
  ruleWarnings,
  type Session,
  type ToolbeltConfig,
  ToolbeltError,
  TRUST_FILE,
  type TrustInfo,
  toolJsonSchema,
  userConfigDir,
} from "@toolbelt/core";
import type { Argv } from "yargs";
import { createToolbelt, resolveSessionConfig } from "./create.js";
import { execLineBound, execLines, jsonNestsDeeperThan } from "./exec-lines.js";
import { type FamilyName, loadFamilies } from "./families.js";
import { type FastArgs, normaliseArgv, parseFast } from "./fast-args.js";
import { MAX_JSON_DEPTH } from "./json-depth.js";
import { familyOf, type ManifestSession, manifestSession, toolHelpText, toolsText } from "./manifest.js";
import { familiesFor } from "./run-families.js";
import { isTerminal, writeOut } from "./stdio.js";

/** A usage error: exit code 2. */
class UsageError extends Error {}

const EXIT_OK = 0;
const EXIT_TOOL_ERROR = 1;
const EXIT_USAGE = 2;

function writeLine(value: unknown): void {
  writeOut(`${JSON.stringify(value)}\n`);
}

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
    version: string;
  };
  return pkg.version;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * Whether stdin is a pipe or a file someone redirected (`echo '{...}' | toolbelt run ...`): then it
 * is the input when no --input is given. A terminal, a socket (a parent process's pipe) or nothing
 * is never read, so a run from a supervisor that leaves stdin open does not wait on it.
 */
function stdinIsPiped(): boolean {
  try {
    const stat = fstatSync(0);
    return stat.isFIFO() || stat.isFile();
  } catch {
    return false;
  }
}

async function readInput(args: { input?: string; inputFile?: string }): Promise<unknown> {
  if (args.input !== undefined && args.inputFile !== undefined)
    throw new UsageError("give --input or --input-file, not both");
  let text = "{}";
  let source = "--input";
  if (args.input === undefined && args.inputFile === undefined && stdinIsPiped()) {
    source = "stdin";
    text = (await readStdin()).trim() || "{}";
  } else if (args.inputFile !== undefined) {
    source = args.inputFile;
    try {
      text = readFileSync(args.inputFile, "utf8");
    } catch (error) {
      throw new UsageError(`cannot read --input-file ${args.inputFile}: ${(error as Error).message}`);
    }
  } else if (args.input === "-") {
    source = "stdin";
    text = await readStdin();
  } else if (args.input !== undefined) {
    text = args.input;
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${source} is not valid JSON: ${(error as Error).message}`);
  }
}

interface CommonArgs {
  root: string;
  config?: string;
  profile?: string;
  allow?: string[];
  model?: string;
  /** --trust / --no-trust; undefined: the user's trust list and TOOLBELT_TRUST decide. */
  trust?: boolean;
}

const BUILT_IN_PROFILES = ["default", "mewbo", "mouaif"];

/** An unknown profile is a usage error, not silently the default names. */
function checkProfile(profile: string | undefined, session?: Session): void {
  if (profile === undefined || BUILT_IN_PROFILES.includes(profile)) return;
  const declared = new Set(session?.granted().flatMap((t) => Object.keys(t.profiles ?? {})) ?? []);
  if (declared.has(profile)) return;
  const known = [...new Set([...BUILT_IN_PROFILES, ...declared])].join(", ");
  throw new UsageError(`unknown --profile ${profile}: expected one of ${known}`);
}

const SEARCH_ENGINES = ["ripgrep", "rg", "js"];

/** TOOLBELT_SEARCH_ENGINE forces an engine; a misspelt one would silently pick the default. */
function checkEnvironment(): void {
  const engine = process.env.TOOLBELT_SEARCH_ENGINE?.trim().toLowerCase();
  if (engine && !SEARCH_ENGINES.includes(engine))
    throw new UsageError(
      `TOOLBELT_SEARCH_ENGINE=${process.env.TOOLBELT_SEARCH_ENGINE} is not an engine: expected ripgrep, rg or js (or unset it)`,
    );
}

/**
 * Says on stderr, never silently, what an untrusted project's files asked for and did not get, and
 * (given the config) which permission rules allow more than they seem to.
 */
function reportIgnored(trust: TrustInfo, config?: ToolbeltConfig): void {
  if (trust.ignored.length > 0) {
    const lines = trust.ignored.map((i) => `  ${i.key} (${i.source}): ${i.why}\n`);
    process.stderr.write(
      `toolbelt: ignored ${trust.ignored.length} project setting${trust.ignored.length === 1 ? "" : "s"}: ${trust.reason}\n${lines.join("")}`,
    );
  }
  for (const w of config ? ruleWarnings(config) : [])
    process.stderr.write(`toolbelt: warning: ${w.key} ${JSON.stringify(w.rule)}: ${w.why}\n`);
}

async function openSession(
  args: CommonArgs,
  families?: readonly FamilyName[],
  client?: ClientInfo,
  plugins?: Plugin[],
): Promise<Session> {
  const session = await createToolbelt({
    root: path.resolve(args.root),
    ...(client ? { client } : {}),
    ...(args.config ? { configFile: args.config } : {}),
    ...(args.profile ? { profile: args.profile } : {}),
    ...(args.model ? { model: args.model } : {}),
    ...(args.trust !== undefined ? { trustProject: args.trust } : {}),
    ...(plugins ? { plugins } : {}),
    allow: args.allow ?? [],
    // Only `run` names families: a one-shot session with no config needs no other family's keys.
    ...(families ? { families, familyContributionsOnly: true } : {}),
  });
  try {
    checkProfile(args.profile, session);
  } catch (error) {
    await session.close();
    throw error;
  }
  reportIgnored(session.trust, session.config);
  // Node skips exit handlers on SIGINT/SIGTERM: close the session first so background process
  // groups, language servers and MCP servers do not outlive the CLI.
  const onSignal = (signal: NodeJS.Signals) => {
    void session.close().finally(() => process.exit(signal === "SIGINT" ? 130 : 143));
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  session.onClose(() => {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  });
  return session;
}

function common<T>(y: Argv<T>) {
  return y
    .option("root", {
      type: "string",
      default: process.cwd(),
      describe: "project root (every path stays inside it)",
      defaultDescription: "current directory",
    })
    .option("config", { type: "string", describe: "config file layered over <root>/configs/app.json" })
    .option("profile", { type: "string", describe: "tool profile: default, mewbo, mouaif" })
    .option("model", {
      type: "string",
      describe: "model id (picks the edit backend unless agent.edit_tool pins one)",
    })
    .option("allow", {
      type: "string",
      array: true,
      describe:
        "allow a tool or family the policy would ask about (repeatable), e.g. --allow shell; --allow protected lets tools write protected paths (configs/app.json, .mcp.json, .toolbelt/, .git/, node_modules/.bin/)",
    })
    .option("trust", trustOption);
}

const failOnCommandOption = {
  type: "boolean",
  default: true,
  describe:
    "a shell command that exits non-zero, is killed by a signal or times out makes the CLI exit 1 (the payload is printed all the same)",
} as const;

const trustOption = {
  type: "boolean",
  describe:
    "trust the project: its configs/app.json and .mcp.json may run code and loosen policy (--no-trust refuses)",
  defaultDescription: "when marked with `toolbelt trust` or TOOLBELT_TRUST=1",
} as const;

/**
 * Why a shell result counts as a failed command (non-zero exit, a signal, the timeout), or
 * undefined. CI branches on the CLI's exit code, and `npm test` failing must fail the job.
 */
export function commandFailure(payload: Payload): string | undefined {
  if (payload.kind !== "shell_result") return undefined;
  const p = payload as {
    exit_code?: number | null;
    signal?: string;
    timed_out?: boolean;
    timeout_seconds?: number;
  };
  if (p.timed_out) return `timed out after ${p.timeout_seconds ?? "its"} s`;
  if (p.signal) return `ended by ${p.signal}`;
  if (p.exit_code !== 0) return `exit code ${p.exit_code}`;
  return undefined;
}

/** `toolbelt run TOOL --help`: what the tool does and the input it takes. */
function printToolHelp(session: Session, tool: string): number {
  const binding = session.bindings().find((b) => b.name === tool);
  if (!binding) throw new UsageError(`no tool ${tool} in this session (see toolbelt tools --format names)`);
  const schema = toolJsonSchema(binding.tool, binding.variant?.input);
  const description = binding.variant?.description ?? binding.tool.description;
  return writeToolHelp(tool, description, schema);
}

function writeToolHelp(tool: string, description: string, schema: unknown): number {
  writeOut(toolHelpText(tool, description, schema));
  return EXIT_OK;
}

type RunArgs = CommonArgs & {
  tool: string;
  input?: string;
  inputFile?: string;
  format: string;
  interactive?: boolean;
  failOnCommandError: boolean;
  toolHelp?: boolean;
};

async function runCommand(args: RunArgs): Promise<number> {
  const family = familyOf(args.tool);
  if (args.toolHelp) {
    const known = await manifestSession(args);
    const schema = known?.session.schemas.find((s) => s.name === args.tool);
    if (known && schema) {
      reportIgnored(known.trust);
      return writeToolHelp(args.tool, schema.description, schema.inputSchema);
    }
    const session = await openSession(args, familiesFor(family, false));
    try {
      return printToolHelp(session, args.tool);
    } finally {
      await session.close();
    }
  }
  const piped = args.input === undefined && args.inputFile === undefined && stdinIsPiped();
  const input = await readInput(args);
  // Interactive mode: with a terminal on stdin (and no input read from it), questions and approvals
  // are asked there; headless runs have no client that can ask.
  const interactive = args.interactive ?? (isTerminal(0) && args.input !== "-" && !piped);
  const client = interactive ? (await import("@toolbelt/ui")).terminalClient() : undefined;
  const session = await openSession(args, familiesFor(family, interactive, args.tool), client);
  // A person at a terminal sees a command's output as it comes (stderr: stdout stays one payload).
  if (isTerminal(2)) session.on("shell_output", (e) => process.stderr.write(e.data));
  try {
    let payload: Payload;
    if (args.format === "text") {
      const outcome = await session.callWithText(args.tool, input);
      payload = outcome.payload;
      writeOut(outcome.text.endsWith("\n") ? outcome.text : `${outcome.text}\n`);
    } else {
      // JSON output: the model-facing text is never rendered (it costs as much as a big search).
      payload = await session.call(args.tool, input);
      writeLine(payload);
    }
    if (payload.kind === "error") {
      if (
        payload.code === "EINVAL_INPUT" &&
        args.input === undefined &&
        args.inputFile === undefined &&
        !piped
      )
        process.stderr.write(
          "toolbelt: no input was given: pass --input JSON, --input-file F, or --input - to read it from stdin (toolbelt run TOOL --help shows the fields)\n",
        );
      return EXIT_TOOL_ERROR;
    }
    const failure = commandFailure(payload);
    if (failure && args.failOnCommandError) {
      process.stderr.write(`toolbelt: the command failed (${failure}); --no-fail-on-command-error exits 0\n`);
      return EXIT_TOOL_ERROR;
    }
    return EXIT_OK;
  } finally {
    await session.close();
  }
}

/** What went wrong in an exec run, for the summary line. */
class ExecTally {
  calls = 0;
  errorCount = 0;
  commandCount = 0;
  // Only what the summary shows is kept (ids cut short): a long session of failing calls with large
  // ids must not hold every id until it ends.
  readonly errors: string[] = [];
  readonly commands: string[] = [];

  record(id: unknown, result: Payload): void {
    this.calls++;
    const failure = commandFailure(result);
    if (result.kind !== "error" && !failure) return;
    const who = id === null || id === undefined ? `line ${this.calls}` : `id ${shortId(id)}`;
    if (result.kind === "error" && this.errorCount++ < TALLY_SHOWN)
      this.errors.push(`${who}: ${String(result.code)}`);
    if (failure && this.commandCount++ < TALLY_SHOWN) this.commands.push(`${who}: ${failure}`);
  }

  /** "3 calls: 1 error (id "2": EUNKNOWN_TOOL), 1 failed command (id "4": exit code 1)". */
  summary(countCommands: boolean): string {
    const parts: string[] = [];
    const list = (items: string[], count: number) =>
      `${items.join(", ")}${count > items.length ? ", …" : ""}`;
    if (this.errorCount)
      parts.push(
        `${this.errorCount} error${this.errorCount === 1 ? "" : "s"} (${list(this.errors, this.errorCount)})`,
      );
    if (countCommands && this.commandCount)
      parts.push(
        `${this.commandCount} failed command${this.commandCount === 1 ? "" : "s"} (${list(this.commands, this.commandCount)})`,
      );
    return `${this.calls} call${this.calls === 1 ? "" : "s"}: ${parts.join(", ")}`;
  }

  failed(countCommands: boolean): boolean {
    return this.errorCount > 0 || (countCommands && this.commandCount > 0);
  }
}

const TALLY_SHOWN = 5;

/** An id for the summary: at most about 80 characters, in a string of its own (a slice keeps the whole id alive). */
function shortId(id: unknown): string {
  if (typeof id === "string" && id.length > 80) return `${JSON.stringify(id.slice(0, 80))}…`;
  const json = JSON.stringify(id) ?? String(id);
  return json.length > 80 ? `${Buffer.from(json.slice(0, 80)).toString("utf8")}…` : json;
}

/**
 * One exec answer line. A result JSON cannot carry (a plugin's BigInt, a cycle) is answered as
 * EINTERNAL instead of ending the session with every later line unanswered.
 */
function writeAnswer(id: unknown, tool: string | null, result: Payload): Payload {
  let text: string;
  try {
    text = JSON.stringify({ id, tool, result });
  } catch (error) {
    result = errorPayload("EINTERNAL", `the result cannot be written as JSON: ${(error as Error).message}`);
    text = JSON.stringify({ id, tool, result });
  }
  writeOut(`${text}\n`);
  return result;
}

async function execCommand(
  args: CommonArgs & { events: boolean; failOnError: boolean; failOnCommandError: boolean },
): Promise<number> {
  // Events of the session's start (config_ignored, the first tools_bound) are sent before
  // openSession returns: a plugin's setup subscribes in time, so the lines start at seq 0.
  const notice = definePlugin({
    name: "exec-events",
    tools: [],
    setup(s) {
      if (args.events && s.isRoot) s.on("*", (event) => writeLine({ event }));
    },
  });
  const session = await openSession(args, undefined, undefined, [notice]);
  const tally = new ExecTally();
  const maxLineBytes = execLineBound(session.config.limits.fileWriteMaxBytes);
  try {
    for await (const line of execLines(process.stdin, maxLineBytes)) {
      if (typeof line !== "string") {
        const result = errorPayload(
          "ETOO_LARGE",
          `the line is ${line.overBytes} bytes, over exec's limit of ${maxLineBytes} bytes per line (TOOLBELT_EXEC_MAX_LINE_BYTES sets it); it was skipped`,
          { size: line.overBytes, limit: maxLineBytes },
        );
        tally.record(null, writeAnswer(null, null, result));
        continue;
      }
      if (line.trim() === "") continue;
      // The request object is one level: its input may nest as deep as a tool input may.
      if (jsonNestsDeeperThan(line, MAX_JSON_DEPTH + 1)) {
        const result = errorPayload(
          "EINVAL_INPUT",
          `the line nests deeper than ${MAX_JSON_DEPTH + 1} levels (tool inputs: ${MAX_JSON_DEPTH}); it was not parsed`,
          { limit: MAX_JSON_DEPTH },
        );
        tally.record(null, writeAnswer(null, null, result));
        continue;
      }
      let request: { id?: unknown; tool?: unknown; input?: unknown };
      try {
        request = JSON.parse(line) as typeof request;
      } catch (error) {
        const result = errorPayload("EINVAL_INPUT", `line is not JSON: ${(error as Error).message}`);
        tally.record(null, writeAnswer(null, null, result));
        continue;
      }
      const id = request?.id ?? null;
      if (typeof request !== "object" || request === null || typeof request.tool !== "string") {
        const result = errorPayload("EINVAL_INPUT", 'each line needs {"tool": string, "input": object}', {
          field: "tool",
        });
        tally.record(id, writeAnswer(id, null, result));
        continue;
      }
      const result: Payload = await session.call(
        request.tool,
        request.input ?? {},
        typeof id === "string" ? { callId: id } : {},
      );
      tally.record(id, writeAnswer(id, request.tool, result));
    }
  } finally {
    await session.close();
  }
  if (!tally.failed(args.failOnCommandError)) return EXIT_OK;
  process.stderr.write(`toolbelt exec: ${tally.summary(args.failOnCommandError)}\n`);
  return args.failOnError ? EXIT_TOOL_ERROR : EXIT_OK;
}

async function toolsCommand(args: CommonArgs & { format: string }): Promise<number> {
  // The build's manifest answers for the default config without importing a family.
  const known = await manifestSession(args);
  if (known) {
    reportIgnored(known.trust);
    return printTools(args.format, known.session);
  }
  const session = await openSession(args);
  try {
    const { tools, deferred } = session.bind();
    return printTools(args.format, {
      profile: session.profile,
      edit_backend: session.editBackend(),
      schemas: tools,
      deferred,
    });
  } finally {
    await session.close();
  }
}

/** `toolbelt tools` output, from a live session or the manifest alike. */
function printTools(format: string, bound: ManifestSession): number {
  writeOut(toolsText(format, bound));
  return EXIT_OK;
}

async function serveCommand(
  args: CommonArgs & { mcp?: boolean; http?: boolean; port: number; host: string; token?: string },
): Promise<number> {
  if (!!args.mcp === !!args.http) throw new UsageError("serve needs exactly one of --mcp or --http");
  // Sessions open per client later: only the built-in profiles (and those plugins in config may
  // declare) can be checked here.
  const root = path.resolve(args.root);
  const sessionOptions = {
    ...(args.config ? { configFile: args.config } : {}),
    ...(args.profile ? { profile: args.profile } : {}),
    ...(args.model ? { model: args.model } : {}),
    ...(args.trust !== undefined ? { trustProject: args.trust } : {}),
    allow: args.allow ?? [],
  };
  // A broken config is a usage error before any client connects; what trust dropped is said once here.
  const resolved = await resolveSessionConfig(root, sessionOptions);
  if (resolved.config.plugins.length === 0) checkProfile(args.profile);
  reportIgnored(resolved.trust, resolved.config);
  if (args.mcp) {
    const { serveMcp } = await import("./serve-mcp.js");
    await serveMcp({ root, version: version(), ...sessionOptions });
    return EXIT_OK;
  }
  const { startHttpServer } = await import("./serve-http.js");
  const token = args.token ?? process.env.TOOLBELT_TOKEN;
  let server: Awaited<ReturnType<typeof startHttpServer>>;
  try {
    server = await startHttpServer({
      root,
      host: args.host,
      port: args.port,
      ...(token ? { token } : {}),
      session: sessionOptions,
    });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EADDRINUSE") throw error;
    process.stderr.write(
      `toolbelt: port ${args.port} on ${args.host} is already in use: pick another with --port N, or --port 0 for a free one\n`,
    );
    return EXIT_TOOL_ERROR;
  }
  writeOut(
    `toolbelt serve --http listening on ${server.url}\ntoken: ${server.token}\nconsole: ${server.url}/#token=${encodeURIComponent(server.token)}\n`,
  );
  if (!["127.0.0.1", "::1", "localhost"].includes(args.host))
    process.stderr.write(`toolbelt: warning: listening on ${args.host}, reachable from other machines\n`);
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  await server.close();
  return EXIT_OK;
}

async function doctorCommand(args: {
  root: string;
  config?: string;
  format: string;
  trust?: boolean;
}): Promise<number> {
  const root = path.resolve(args.root);
  const { config, trust } = await resolveSessionConfig(root, {
    ...(args.config ? { configFile: args.config } : {}),
    ...(args.trust !== undefined ? { trustProject: args.trust } : {}),
  });
  const plugins = await loadFamilies();
  // The wrappers a session here would start processes through (the shell family's sandbox), from a
  // session of the families a `run search_files` loads: families say how their processes would run.
  const wrapping = await createToolbelt({
    root,
    ...(args.config ? { configFile: args.config } : {}),
    ...(args.trust !== undefined ? { trustProject: args.trust } : {}),
    families: familiesFor("files", false, "search_files") ?? [],
    allow: [],
  }).catch(() => undefined);
  const wrapCommand: CommandWrapper | undefined = wrapping
    ? (spec, purpose) => wrapping.wrapCommand(spec, purpose)
    : undefined;
  const report: Array<{ family: string; name: string; status: string; detail: string }> = [
    { family: "core", name: "node", status: "ok", detail: process.version },
    { family: "core", name: "toolbelt", status: "ok", detail: version() },
    { family: "core", ...(await import("./oneshot.js")).oneShotCheck() },
    {
      family: "trust",
      name: "project",
      status: trust.trusted ? "ok" : "skipped",
      detail: trust.trusted ? `trusted: ${trust.reason}` : `not trusted: ${trust.reason}`,
    },
    ...trust.ignored.map((i) => ({
      family: "trust",
      name: `ignored ${i.key}`,
      status: "skipped",
      detail: `${i.source}: ${i.why}`,
    })),
    ...describeHooks(config, root).map((h) => ({ family: "hooks", ...h })),
    ...ruleWarnings(config).map((w) => ({
      family: "rules",
      name: w.key,
      status: "warning",
      detail: `${JSON.stringify(w.rule)}: ${w.why}`,
    })),
  ];
  for (const plugin of plugins) {
    if (!plugin.doctor) continue;
    try {
      for (const check of await plugin.doctor({
        root,
        config,
        trust,
        ...(wrapCommand ? { wrapCommand } : {}),
      }))
        report.push({ family: plugin.name, ...check });
    } catch (error) {
      report.push({
        family: plugin.name,
        name: "doctor",
        status: "unavailable",
        detail: (error as Error).message,
      });
    }
  }
  await wrapping?.close();
  if (args.format === "json") writeLine(report);
  else for (const r of report) writeOut(`${r.status.padEnd(11)} ${r.family}/${r.name}: ${r.detail}\n`);
  return EXIT_OK;
}

async function trustCommand(args: { dir?: string; list?: boolean; remove?: boolean }): Promise<number> {
  const store = userConfigDir();
  if (args.list) {
    if (args.dir !== undefined || args.remove)
      throw new UsageError("--list takes no directory and no --remove");
    for (const p of listTrustedProjects(store)) writeOut(`${p.path}\n`);
    return EXIT_OK;
  }
  const dir = path.resolve(args.dir ?? process.cwd());
  if (args.remove) {
    const removed = await removeTrustedProject(dir, store);
    process.stderr.write(
      removed ? `toolbelt: ${dir} is no longer trusted\n` : `toolbelt: ${dir} was not trusted\n`,
    );
    return removed ? EXIT_OK : EXIT_TOOL_ERROR;
  }
  const real = await addTrustedProject(dir, store);
  process.stderr.write(`toolbelt: trusted ${real} (recorded in ${path.join(store, TRUST_FILE)})\n`);
  return EXIT_OK;
}

/** Flags of `run` that take a value (so the word after them is no tool name). */
const RUN_VALUE_FLAGS = new Set([
  "--root",
  "--config",
  "--profile",
  "--model",
  "--allow",
  "--input",
  "--input-file",
  "--format",
]);

/**
 * `toolbelt run TOOL --help` asks about the tool, not the flags: the help flag is taken out and the
 * tool's description and input schema printed instead. `run --help` alone stays yargs' help.
 */
function takeToolHelp(args: string[]): boolean {
  if (args[0] !== "run") return false;
  const help = args.findIndex((a) => a === "--help" || a === "-h");
  if (help < 0) return false;
  let tool = false;
  for (let i = 1; i < args.length; i++) {
    const a = args[i] as string;
    if (RUN_VALUE_FLAGS.has(a)) i++;
    else if (!a.startsWith("-")) tool = true;
  }
  if (tool) args.splice(help, 1);
  return tool;
}

/** Parses argv and runs one command; resolves to the process exit code. */
export async function main(argv: string[]): Promise<number> {
  let exitCode = EXIT_OK;
  const args = normaliseArgv(argv);
  const toolHelp = takeToolHelp(args);
  const fast = parseFast(args);
  if (fast) return runFast(fast, toolHelp).catch(exitCodeOf);
  const { default: yargs } = await import("yargs");
  const cli = yargs(args)
    .scriptName("toolbelt")
    .version(version())
    .strict()
    .demandCommand(1, "name a command: run, exec, tools, serve, doctor, trust, checkpoints")
    .recommendCommands()
    .command(
      "run <tool>",
      "call one tool and print its payload (exit 0 ok, 1 error payload or failed command, 2 usage error); run TOOL --help shows its input",
      (y) =>
        common(y)
          .positional("tool", {
            type: "string",
            demandOption: true,
            describe: "tool name as bound in the profile",
          })
          .option("input", { type: "string", describe: "input as JSON, or - to read it from stdin" })
          .option("input-file", { type: "string", describe: "read the input JSON from a file" })
          .option("interactive", {
            type: "boolean",
            describe: "ask questions and approvals on the terminal",
            defaultDescription: "when stdin is a terminal",
          })
          .option("format", {
            choices: ["json", "text"],
            default: "json",
            describe: "the payload as JSON, or the model-facing text",
          })
          .option("fail-on-command-error", failOnCommandOption),
      async (args) => {
        checkEnvironment();
        exitCode = await runCommand({ ...(args as never as Parameters<typeof runCommand>[0]), toolHelp });
      },
    )
    .command(
      "exec",
      'one session over JSONL: stdin {"id"?, "tool", "input"} per line, stdout {"id", "tool", "result"}',
      (y) =>
        common(y)
          .option("events", {
            type: "boolean",
            default: false,
            describe: 'also write {"event": ...} lines',
          })
          .option("fail-on-error", {
            type: "boolean",
            default: true,
            describe:
              "exit 1 when any call returned an error payload (or, with --fail-on-command-error, a failed command); a summary goes to stderr",
          })
          .option("fail-on-command-error", failOnCommandOption),
      async (args) => {
        checkEnvironment();
        exitCode = await execCommand(args as never);
      },
    )
    .command(
      "tools",
      "print the schemas a session binds now",
      (y) =>
        common(y).option("format", {
          choices: ["json", "openai", "anthropic", "mcp", "names", "text"],
          default: "json",
          describe: "schemas as JSON (json, openai, anthropic, mcp), or for people: names, text",
        }),
      async (args) => {
        checkEnvironment();
        exitCode = await toolsCommand(args as never);
      },
    )
    .command(
      "serve",
      "serve the session's tools: --mcp (MCP on stdio) or --http (HTTP + SSE, client-brought tools, approvals)",
      (y) =>
        common(y)
          .option("mcp", { type: "boolean", describe: "MCP server on stdio" })
          .option("http", { type: "boolean", describe: "HTTP + Server-Sent Events server" })
          .option("port", { type: "number", default: 4317, describe: "HTTP port (0 picks a free one)" })
          .option("host", { type: "string", default: "127.0.0.1", describe: "HTTP address to listen on" })
          .option("token", {
            type: "string",
            describe: "bearer token for HTTP (default: $TOOLBELT_TOKEN, else a random one printed at start)",
          }),
      async (args) => {
        checkEnvironment();
        exitCode = await serveCommand(args as never);
      },
    )
    .command(
      "doctor",
      "report which ripgrep, sandbox, pty and language servers were found",
      (y) =>
        y
          .option("root", { type: "string", default: process.cwd() })
          .option("config", { type: "string" })
          .option("trust", trustOption)
          .option("format", { choices: ["text", "json"], default: "text" }),
      async (args) => {
        exitCode = await doctorCommand(args as never);
      },
    )
    .command(
      "checkpoints <action> [id]",
      "the changes tools made in this root: list, diff ID, restore ID (ID: a checkpoint id, a call id or last)",
      (y) =>
        y
          .positional("action", { choices: ["list", "diff", "restore"], demandOption: true })
          .positional("id", { type: "string", describe: "checkpoint id, call id, or last" })
          .option("root", { type: "string", default: process.cwd(), defaultDescription: "current directory" })
          .option("config", { type: "string", describe: "config file layered over <root>/configs/app.json" })
          .option("allow", {
            type: "string",
            array: true,
            describe: "e.g. --allow protected to restore protected paths",
          })
          .option("trust", trustOption)
          .option("json", { type: "boolean", describe: "JSON instead of text" }),
      async (args) => {
        const { checkpointsCommand } = await import("./checkpoints-command.js");
        exitCode = await checkpointsCommand(args as never);
      },
    )
    .command(
      "trust [dir]",
      "mark a project trusted (its configs/app.json and .mcp.json may run code and loosen policy); --list, --remove",
      (y) =>
        y
          .positional("dir", {
            type: "string",
            describe: "project directory",
            defaultDescription: "current directory",
          })
          .option("list", { type: "boolean", describe: "list the trusted projects" })
          .option("remove", { type: "boolean", describe: "forget the directory instead" }),
      async (args) => {
        exitCode = await trustCommand(args as never);
      },
    )
    .fail((message, error) => {
      // yargs keeps going after a custom fail handler returns: throwing stops it.
      if (error && !(error instanceof UsageError)) throw error;
      throw error ?? new UsageError(message);
    })
    .help()
    .alias("help", "h");
  try {
    await cli.parseAsync();
  } catch (error) {
    return exitCodeOf(error);
  }
  return exitCode;
}

/** A line parseFast could read runs the same handler yargs would have called, without loading yargs. */
async function runFast(fast: FastArgs, toolHelp: boolean): Promise<number> {
  checkEnvironment();
  if (fast.command === "run") return runCommand({ ...(fast.args as never as RunArgs), toolHelp });
  if (fast.command === "exec") return execCommand(fast.args as never);
  return toolsCommand(fast.args as never);
}

/** What a thrown error means for the exit code (and what the caller is told). */
function exitCodeOf(error: unknown): number {
  if (error instanceof UsageError) {
    process.stderr.write(`toolbelt: ${error.message}\nRun toolbelt --help for usage.\n`);
    return EXIT_USAGE;
  }
  const e = normaliseError(error);
  // Config and plugin problems are the caller's to fix: usage errors, on stderr like a bad flag.
  if (ToolbeltError.isInstance(error) && ["EINVAL_CONFIG", "EPLUGIN"].includes(e.code)) {
    process.stderr.write(`toolbelt: ${e.code}: ${e.message}\n`);
    return EXIT_USAGE;
  }
  writeLine(e.toPayload());
  process.stderr.write(`toolbelt: ${e.code}: ${e.message}\n`);
  return EXIT_TOOL_ERROR;
}
