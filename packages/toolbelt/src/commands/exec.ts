import { once } from "node:events";
import { definePlugin, errorPayload, type Payload } from "@toolbelt/core";
import { ENV, MAX_JSON_DEPTH, nestsDeeperThan, readEnv } from "@toolbelt/core/internal";
import type { Argv } from "yargs";
import { boundedLines } from "../bounded-lines.js";
import { commandFailure } from "../command-failure.js";
import { writeLine } from "../output.js";
import { EXIT_OK, EXIT_TOOL_ERROR } from "./exit.js";
import { type ArgsOf, failOnCommandOption, sessionOptions } from "./options.js";
import { checkEnvironment, openSession } from "./session.js";

export const command = "exec";
export const describe =
  'one session over JSONL: stdin {"id"?, "tool", "input"} per line, stdout {"id", "tool", "result"}';

export function options(y: Argv) {
  return sessionOptions(y)
    .option("events", { type: "boolean", default: false, describe: 'also write {"event": ...} lines' })
    .option("fail-on-error", {
      type: "boolean",
      default: true,
      describe:
        "exit 1 when any call returned an error payload (or, with --fail-on-command-error, a failed command); a summary goes to stderr",
    })
    .option("fail-on-command-error", failOnCommandOption);
}

export type ExecArgs = ArgsOf<typeof options>;

/** The default bound on one line: room for a write of `fileWriteMaxBytes` escaped at worst. */
const DEFAULT_EXEC_LINE_BYTES = 64 * 1024 * 1024;

/** The byte bound of one line: TOOLBELT_EXEC_MAX_LINE_BYTES, else the larger of 64 MiB and 8× the write limit. */
function execLineBound(fileWriteMaxBytes: number): number {
  return (
    readEnv(ENV.TOOLBELT_EXEC_MAX_LINE_BYTES) ?? Math.max(DEFAULT_EXEC_LINE_BYTES, 8 * fileWriteMaxBytes)
  );
}

const TALLY_SHOWN = 5;

/** An id for the summary: at most about 80 characters, in a string of its own (a slice keeps the whole id alive). */
function shortId(id: unknown): string {
  if (typeof id === "string" && id.length > 80) return `${JSON.stringify(id.slice(0, 80))}…`;
  const json = JSON.stringify(id) ?? String(id);
  return json.length > 80 ? `${Buffer.from(json.slice(0, 80)).toString("utf8")}…` : json;
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

/**
 * One exec answer line. A result JSON cannot carry (a plugin's BigInt, a cycle) is answered as
 * EINTERNAL instead of ending the session with every later line unanswered.
 */
async function writeAnswer(id: unknown, tool: string | null, result: Payload): Promise<Payload> {
  let text: string;
  try {
    text = JSON.stringify({ id, tool, result });
  } catch (error) {
    result = errorPayload("EINTERNAL", `the result cannot be written as JSON: ${(error as Error).message}`);
    text = JSON.stringify({ id, tool, result });
  }
  // A reader slower than the calls would otherwise have every answer queued in memory: the next line
  // is read only once this answer is taken.
  if (!process.stdout.write(`${text}\n`)) await once(process.stdout, "drain");
  return result;
}

/**
 * `toolbelt exec`: one session, a call per stdin line, each answered when done. A line it cannot
 * take (over the byte bound, nesting too deep, not JSON) is answered with an error and the session
 * goes on with the next line.
 */
export async function exec(args: ExecArgs): Promise<number> {
  checkEnvironment();
  // Events of the session's start (config_ignored, the first tools_bound) are sent before
  // openSession returns: a plugin's setup subscribes in time, so the lines start at seq 0.
  const notice = definePlugin({
    name: "exec-events",
    tools: [],
    setup(s) {
      if (args.events && s.isRoot) s.on("*", (event) => writeLine({ event }));
    },
  });
  const session = await openSession(args, { plugins: [notice] });
  const tally = new ExecTally();
  const maxLineBytes = execLineBound(session.config.limits.fileWriteMaxBytes);
  try {
    // `\n`, `\r\n` and a lone `\r` end a line, as readline reads them.
    for await (const line of boundedLines(process.stdin, maxLineBytes, { loneCr: true })) {
      if (typeof line !== "string") {
        const result = errorPayload(
          "ETOO_LARGE",
          `the line is ${line.overBytes} bytes, over exec's limit of ${maxLineBytes} bytes per line (TOOLBELT_EXEC_MAX_LINE_BYTES sets it); it was skipped`,
          { size: line.overBytes, limit: maxLineBytes },
        );
        tally.record(null, await writeAnswer(null, null, result));
        continue;
      }
      if (line.trim() === "") continue;
      // The request object is one level: its input may nest as deep as a tool input may.
      if (nestsDeeperThan(line, MAX_JSON_DEPTH + 1)) {
        const result = errorPayload(
          "EINVAL_INPUT",
          `the line nests deeper than ${MAX_JSON_DEPTH + 1} levels (tool inputs: ${MAX_JSON_DEPTH}); it was not parsed`,
          { limit: MAX_JSON_DEPTH },
        );
        tally.record(null, await writeAnswer(null, null, result));
        continue;
      }
      let request: { id?: unknown; tool?: unknown; input?: unknown };
      try {
        request = JSON.parse(line) as typeof request;
      } catch (error) {
        const result = errorPayload("EINVAL_INPUT", `line is not JSON: ${(error as Error).message}`);
        tally.record(null, await writeAnswer(null, null, result));
        continue;
      }
      const id = request?.id ?? null;
      if (typeof request !== "object" || request === null || typeof request.tool !== "string") {
        const result = errorPayload("EINVAL_INPUT", 'each line needs {"tool": string, "input": object}', {
          field: "tool",
        });
        tally.record(id, await writeAnswer(id, null, result));
        continue;
      }
      const result: Payload = await session.call(
        request.tool,
        request.input ?? {},
        typeof id === "string" ? { callId: id } : {},
      );
      tally.record(id, await writeAnswer(id, request.tool, result));
    }
  } finally {
    await session.close();
  }
  if (!tally.failed(args.failOnCommandError)) return EXIT_OK;
  process.stderr.write(`toolbelt exec: ${tally.summary(args.failOnCommandError)}\n`);
  return args.failOnError ? EXIT_TOOL_ERROR : EXIT_OK;
}
