import { readFileSync } from "node:fs";
import path from "node:path";
import { createInterface } from "node:readline";
import {
  addTrustedProject,
  type ClientInfo,
  definePlugin,
  errorPayload,
  listTrustedProjects,
  normaliseError,
  type Payload,
  type Plugin,
  removeTrustedProject,
  type Session,
  ToolbeltError,
  TRUST_FILE,
  type TrustInfo,
  toAnthropicTool,
  toMcpTool,
  toOpenAITool,
  userConfigDir,
} from "@toolbelt/core";
import yargs, { type Argv } from "yargs";
import { createToolbelt, resolveSessionConfig } from "./create.js";
import { FAMILY_NAMES, type FamilyName, loadFamilies } from "./families.js";

/** A usage error: exit code 2. */
class UsageError extends Error {}

const EXIT_OK = 0;
const EXIT_TOOL_ERROR = 1;
const EXIT_USAGE = 2;

function writeLine(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
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

async function readInput(args: { input?: string; inputFile?: string }): Promise<unknown> {
  if (args.input !== undefined && args.inputFile !== undefined)
    throw new UsageError("give --input or --input-file, not both");
  let text = "{}";
  let source = "--input";
  if (args.inputFile !== undefined) {
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

/** The family that owns a tool name, from the manifest the build writes; undefined means "load all". */
function familyOf(tool: string): FamilyName | undefined {
  try {
    const manifest = JSON.parse(
      readFileSync(new URL("./tool-manifest.json", import.meta.url), "utf8"),
    ) as Record<string, FamilyName>;
    const family = manifest[tool];
    return family && FAMILY_NAMES.includes(family) ? family : undefined;
  } catch {
    return undefined;
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

/** Says on stderr, never silently, what an untrusted project's files asked for and did not get. */
function reportIgnored(trust: TrustInfo): void {
  if (trust.ignored.length === 0) return;
  const lines = trust.ignored.map((i) => `  ${i.key} (${i.source}): ${i.why}\n`);
  process.stderr.write(
    `toolbelt: ignored ${trust.ignored.length} project setting${trust.ignored.length === 1 ? "" : "s"}: ${trust.reason}\n${lines.join("")}`,
  );
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
    ...(families ? { families } : {}),
  });
  reportIgnored(session.trust);
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
      describe: "allow a tool or family the policy would ask about (repeatable), e.g. --allow shell",
    })
    .option("trust", trustOption);
}

const trustOption = {
  type: "boolean",
  describe:
    "trust the project: its configs/app.json and .mcp.json may run code and loosen policy (--no-trust refuses)",
  defaultDescription: "when marked with `toolbelt trust` or TOOLBELT_TRUST=1",
} as const;

async function runCommand(
  args: CommonArgs & {
    tool: string;
    input?: string;
    inputFile?: string;
    format: string;
    interactive?: boolean;
  },
): Promise<number> {
  const input = await readInput(args);
  const family = familyOf(args.tool);
  // Interactive mode: with a terminal on stdin (and no input read from it), questions and approvals
  // are asked there; headless runs have no client that can ask.
  const interactive = args.interactive ?? (process.stdin.isTTY === true && args.input !== "-");
  const client = interactive ? (await import("@toolbelt/ui")).terminalClient() : undefined;
  const families = family ? (interactive && family !== "ui" ? [family, "ui" as const] : [family]) : undefined;
  const session = await openSession(args, families, client);
  try {
    const { payload, text } = await session.callWithText(args.tool, input);
    if (args.format === "text") process.stdout.write(text.endsWith("\n") ? text : `${text}\n`);
    else writeLine(payload);
    return payload.kind === "error" ? EXIT_TOOL_ERROR : EXIT_OK;
  } finally {
    await session.close();
  }
}

async function execCommand(args: CommonArgs & { events: boolean }): Promise<number> {
  // config_ignored is sent while the session starts, before openSession returns: a plugin's setup
  // listens for it in time.
  let offNotice: (() => void) | undefined;
  const notice = definePlugin({
    name: "exec-trust-events",
    tools: [],
    setup(s) {
      if (args.events && s.isRoot) offNotice = s.on("config_ignored", (event) => writeLine({ event }));
    },
  });
  const session = await openSession(args, undefined, undefined, [notice]);
  offNotice?.();
  if (args.events) session.on("*", (event) => writeLine({ event }));
  let failed = false;
  const lines = createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY });
  try {
    for await (const line of lines) {
      if (line.trim() === "") continue;
      let request: { id?: unknown; tool?: unknown; input?: unknown };
      try {
        request = JSON.parse(line) as typeof request;
      } catch (error) {
        writeLine({
          id: null,
          tool: null,
          result: errorPayload("EINVAL_INPUT", `line is not JSON: ${(error as Error).message}`),
        });
        failed = true;
        continue;
      }
      const id = request?.id ?? null;
      if (typeof request !== "object" || request === null || typeof request.tool !== "string") {
        writeLine({
          id,
          tool: null,
          result: errorPayload("EINVAL_INPUT", 'each line needs {"tool": string, "input": object}', {
            field: "tool",
          }),
        });
        failed = true;
        continue;
      }
      const result: Payload = await session.call(
        request.tool,
        request.input ?? {},
        typeof id === "string" ? { callId: id } : {},
      );
      if (result.kind === "error") failed = true;
      writeLine({ id, tool: request.tool, result });
    }
  } finally {
    await session.close();
  }
  return failed ? EXIT_TOOL_ERROR : EXIT_OK;
}

async function toolsCommand(args: CommonArgs & { format: string }): Promise<number> {
  const session = await openSession(args);
  try {
    const { tools, deferred } = session.bind();
    switch (args.format) {
      case "openai":
        writeLine(tools.map(toOpenAITool));
        break;
      case "anthropic":
        writeLine(tools.map(toAnthropicTool));
        break;
      case "mcp":
        writeLine({ tools: tools.map(toMcpTool) });
        break;
      default:
        writeLine({ profile: session.profile, edit_backend: session.editBackend(), tools, deferred });
    }
    return EXIT_OK;
  } finally {
    await session.close();
  }
}

async function serveCommand(
  args: CommonArgs & { mcp?: boolean; http?: boolean; port: number; host: string; token?: string },
): Promise<number> {
  if (!!args.mcp === !!args.http) throw new UsageError("serve needs exactly one of --mcp or --http");
  const root = path.resolve(args.root);
  const sessionOptions = {
    ...(args.config ? { configFile: args.config } : {}),
    ...(args.profile ? { profile: args.profile } : {}),
    ...(args.model ? { model: args.model } : {}),
    ...(args.trust !== undefined ? { trustProject: args.trust } : {}),
    allow: args.allow ?? [],
  };
  // A broken config is a usage error before any client connects; what trust dropped is said once here.
  reportIgnored((await resolveSessionConfig(root, sessionOptions)).trust);
  if (args.mcp) {
    const { serveMcp } = await import("./serve-mcp.js");
    await serveMcp({ root, version: version(), ...sessionOptions });
    return EXIT_OK;
  }
  const { startHttpServer } = await import("./serve-http.js");
  const token = args.token ?? process.env.TOOLBELT_TOKEN;
  const server = await startHttpServer({
    root,
    host: args.host,
    port: args.port,
    ...(token ? { token } : {}),
    session: sessionOptions,
  });
  process.stdout.write(
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
  const report: Array<{ family: string; name: string; status: string; detail: string }> = [
    { family: "core", name: "node", status: "ok", detail: process.version },
    { family: "core", name: "toolbelt", status: "ok", detail: version() },
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
  ];
  for (const plugin of plugins) {
    if (!plugin.doctor) continue;
    try {
      for (const check of await plugin.doctor({ root, config, trust }))
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
  if (args.format === "json") writeLine(report);
  else
    for (const r of report)
      process.stdout.write(`${r.status.padEnd(11)} ${r.family}/${r.name}: ${r.detail}\n`);
  return EXIT_OK;
}

async function trustCommand(args: { dir?: string; list?: boolean; remove?: boolean }): Promise<number> {
  const store = userConfigDir();
  if (args.list) {
    if (args.dir !== undefined || args.remove)
      throw new UsageError("--list takes no directory and no --remove");
    for (const p of listTrustedProjects(store)) process.stdout.write(`${p.path}\n`);
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

/** Parses argv and runs one command; resolves to the process exit code. */
export async function main(argv: string[]): Promise<number> {
  let exitCode = EXIT_OK;
  // yargs reads a lone "-" as a positional; `--input -` means stdin.
  const args = argv.flatMap((arg, i) =>
    arg === "--input" && argv[i + 1] === "-"
      ? ["--input=-"]
      : arg === "-" && argv[i - 1] === "--input"
        ? []
        : [arg],
  );
  const cli = yargs(args)
    .scriptName("toolbelt")
    .version(version())
    .strict()
    .demandCommand(1, "name a command: run, exec, tools, serve, doctor, trust")
    .recommendCommands()
    .command(
      "run <tool>",
      "call one tool and print its payload (exit 0 ok, 1 error payload, 2 usage error)",
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
          }),
      async (args) => {
        exitCode = await runCommand(args as never);
      },
    )
    .command(
      "exec",
      'one session over JSONL: stdin {"id"?, "tool", "input"} per line, stdout {"id", "tool", "result"}',
      (y) =>
        common(y).option("events", {
          type: "boolean",
          default: false,
          describe: 'also write {"event": ...} lines',
        }),
      async (args) => {
        exitCode = await execCommand(args as never);
      },
    )
    .command(
      "tools",
      "print the schemas a session binds now",
      (y) => common(y).option("format", { choices: ["json", "openai", "anthropic", "mcp"], default: "json" }),
      async (args) => {
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
    if (error instanceof UsageError) {
      process.stderr.write(`toolbelt: ${error.message}\nRun toolbelt --help for usage.\n`);
      return EXIT_USAGE;
    }
    const e = normaliseError(error);
    writeLine(e.toPayload());
    // Config and plugin problems are the caller's to fix: usage errors.
    return ToolbeltError.isInstance(error) && ["EINVAL_CONFIG", "EPLUGIN"].includes(e.code)
      ? EXIT_USAGE
      : EXIT_TOOL_ERROR;
  }
  return exitCode;
}
