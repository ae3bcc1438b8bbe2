import { fstatSync, readFileSync } from "node:fs";
import { isatty } from "node:tty";
import { type Payload, type Session, toolJsonSchema } from "@toolbelt/core";
import type { Argv } from "yargs";
import { commandFailure } from "../command-failure.js";
import { writeLine } from "../output.js";
import { familiesFor } from "../tool-families.js";
import { EXIT_OK, EXIT_TOOL_ERROR, UsageError } from "./exit.js";
import { type ArgsOf, failOnCommandOption, sessionOptions } from "./options.js";
import { checkEnvironment, openSession } from "./session.js";

export const command = "run <tool>";
export const describe =
  "call one tool and print its payload (exit 0 ok, 1 error payload or failed command, 2 usage error); run TOOL --help shows its input";

export function options(y: Argv) {
  return sessionOptions(y)
    .positional("tool", { type: "string", demandOption: true, describe: "tool name as bound in the profile" })
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
    .option("fail-on-command-error", failOnCommandOption);
}

export type RunArgs = ArgsOf<typeof options>;

/** Flags of `run` that take a value (so the word after them is no tool name). */
const VALUE_FLAGS = new Set([
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
 * `toolbelt run TOOL --help` asks about the tool, not the flags: the help flag is taken out of
 * `argv` (true is returned) and the tool's description and input schema printed instead. `run
 * --help` alone stays yargs' help.
 */
export function takeToolHelp(argv: string[]): boolean {
  if (argv[0] !== "run") return false;
  const help = argv.findIndex((a) => a === "--help" || a === "-h");
  if (help < 0) return false;
  let tool = false;
  for (let i = 1; i < argv.length; i++) {
    const a = argv[i] as string;
    if (VALUE_FLAGS.has(a)) i++;
    else if (!a.startsWith("-")) tool = true;
  }
  if (tool) argv.splice(help, 1);
  return tool;
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

async function readInput(args: {
  input?: string | undefined;
  inputFile?: string | undefined;
}): Promise<unknown> {
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

/** `toolbelt run TOOL --help`: what the tool does and the input it takes. */
export function toolHelpText(tool: string, description: string, schema: unknown): string {
  return `toolbelt run ${tool} --input JSON\n\n${description}\n\n${describeInput(schema)}\nInput schema:\n${JSON.stringify(schema, null, 2)}\n\nFlags: toolbelt run --help\n`;
}

type JsonSchemaLike = {
  properties?: Record<string, { type?: unknown; description?: string; default?: unknown }>;
  required?: string[];
};

/** One line per input field: name, type, required or default, description. */
function describeInput(schema: unknown): string {
  const s = schema as JsonSchemaLike;
  const lines = Object.entries(s.properties ?? {}).map(([name, p]) => {
    const type = Array.isArray(p.type) ? p.type.join("|") : typeof p.type === "string" ? p.type : "value";
    const need =
      s.required?.includes(name) && p.default === undefined
        ? "required"
        : p.default !== undefined
          ? `default ${JSON.stringify(p.default)}`
          : "optional";
    return `  ${name} (${type}, ${need})${p.description ? `: ${p.description}` : ""}\n`;
  });
  return lines.length ? `Input fields:\n${lines.join("")}` : "Input: {} (no fields)\n";
}

function printToolHelp(session: Session, tool: string): number {
  const binding = session.bindings().find((b) => b.name === tool);
  if (!binding) throw new UsageError(`no tool ${tool} in this session (see toolbelt tools --format names)`);
  const schema = toolJsonSchema(binding.tool, binding.variant?.input);
  process.stdout.write(toolHelpText(tool, binding.variant?.description ?? binding.tool.description, schema));
  return EXIT_OK;
}

/** `toolbelt run TOOL`: one call in a session of the tool's own families; `toolHelp`: TOOL --help. */
export async function run(args: RunArgs, toolHelp: boolean): Promise<number> {
  checkEnvironment();
  if (toolHelp) {
    const session = await openSession(args, { families: familiesFor(args.tool, false) });
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
  const interactive = args.interactive ?? (isatty(0) && args.input !== "-" && !piped);
  const client = interactive ? (await import("@toolbelt/ui")).terminalClient() : undefined;
  const session = await openSession(args, {
    families: familiesFor(args.tool, interactive),
    ...(client ? { client } : {}),
  });
  // A person at a terminal sees a command's output as it comes (stderr: stdout stays one payload).
  if (isatty(2)) session.on("shell_output", (e) => process.stderr.write(e.data));
  try {
    let payload: Payload;
    if (args.format === "text") {
      const outcome = await session.callWithText(args.tool, input);
      payload = outcome.payload;
      process.stdout.write(outcome.text.endsWith("\n") ? outcome.text : `${outcome.text}\n`);
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
