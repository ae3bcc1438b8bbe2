import yargs from "yargs";
import * as checkpoints from "./commands/checkpoints.js";
import * as doctor from "./commands/doctor.js";
import * as exec from "./commands/exec.js";
import { EXIT_OK, exitCodeOf, UsageError } from "./commands/exit.js";
import * as mcp from "./commands/mcp.js";
import * as rules from "./commands/rules.js";
import * as run from "./commands/run.js";
import * as serve from "./commands/serve.js";
import * as tools from "./commands/tools.js";
import * as trust from "./commands/trust.js";
import { version } from "./version.js";

// The `toolbelt` command line: yargs reads it, and each command lives in commands/<name>.ts (its
// options, and what it does with them). DESIGN.md's "CLI contract" is what users and tests rely on.

/** yargs reads a lone "-" as a positional; `--input -` (stdin) is passed on as `--input=-`. */
function normaliseArgv(argv: readonly string[]): string[] {
  return argv.flatMap((arg, i) =>
    arg === "--input" && argv[i + 1] === "-"
      ? ["--input=-"]
      : arg === "-" && argv[i - 1] === "--input"
        ? []
        : [arg],
  );
}

/** Parses argv and runs one command; resolves to the process exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  let exitCode = EXIT_OK;
  const args = normaliseArgv(argv);
  const toolHelp = run.takeToolHelp(args);
  const cli = yargs(args)
    .scriptName("toolbelt")
    .version(version())
    .strict()
    .demandCommand(1, "name a command: run, exec, tools, serve, doctor, trust, checkpoints, mcp, rules")
    .recommendCommands()
    // Unwrapped: the terminal wraps long lines at words; yargs' own wrapping would break words apart.
    .wrap(null)
    .command(run.command, run.describe, run.options, async (a) => {
      exitCode = await run.run(a, toolHelp);
    })
    .command(exec.command, exec.describe, exec.options, async (a) => {
      exitCode = await exec.exec(a);
    })
    .command(tools.command, tools.describe, tools.options, async (a) => {
      exitCode = await tools.tools(a);
    })
    .command(serve.command, serve.describe, serve.options, async (a) => {
      exitCode = await serve.serve(a);
    })
    .command(doctor.command, doctor.describe, doctor.options, async (a) => {
      exitCode = await doctor.doctor(a);
    })
    .command(checkpoints.command, checkpoints.describe, checkpoints.options, async (a) => {
      exitCode = await checkpoints.checkpoints(a);
    })
    .command(trust.command, trust.describe, trust.options, async (a) => {
      exitCode = await trust.trust(a);
    })
    .command(mcp.command, mcp.describe, mcp.options, async (a) => {
      exitCode = await mcp.mcp(a);
    })
    .command(rules.command, rules.describe, rules.options, async (a) => {
      exitCode = await rules.rules(a);
    })
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
