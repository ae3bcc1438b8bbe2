import {
  type Checkpoint,
  type CheckpointFile,
  createSession,
  type FileState,
  normaliseError,
  type Session,
} from "@toolbelt/core";
import type { Argv } from "yargs";
import { openToolbelt, resolveSessionConfig } from "../create.js";
import { EXIT_OK, EXIT_TOOL_ERROR, EXIT_USAGE } from "./exit.js";
import { type ArgsOf, trustOption, workspaceOption } from "./options.js";
import { sessionRoot } from "./session.js";

export const command = "checkpoints <action> [id]";
export const describe =
  "the changes tools made in this root (or in the workspace's): list, diff ID, restore ID (ID: a checkpoint id, a call id or last)";

export function options(y: Argv) {
  return y
    .positional("action", { choices: ["list", "diff", "restore"], demandOption: true })
    .positional("id", { type: "string", describe: "checkpoint id, call id, or last" })
    .option("root", {
      type: "string",
      describe: "project root; in a remote workspace, the path there",
      defaultDescription: "current directory",
    })
    .option("workspace", workspaceOption)
    .option("config", { type: "string", describe: "config file layered over <root>/configs/app.json" })
    .option("allow", {
      type: "string",
      array: true,
      describe: "e.g. --allow protected to restore protected paths",
    })
    .option("trust", trustOption)
    .option("json", { type: "boolean", describe: "JSON instead of text" });
}

export type CheckpointsArgs = ArgsOf<typeof options>;

const ACTIONS = ["list", "diff", "restore"];

function mib(n: number): string {
  return `${(n / (1024 * 1024)).toFixed(1)} MiB`;
}

function state(s: FileState): string {
  if (s === null) return "absent";
  if (s === "too_large") return "not recorded (too large)";
  if (s === "unknown") return "unknown";
  return s.slice(0, 12);
}

function fileLabel(f: CheckpointFile): string {
  if (f.before === null) return `${f.path} (new)`;
  if (f.after === null) return `${f.path} (removed)`;
  if (f.before === "too_large" || f.after === "too_large") return `${f.path} (not recorded: too large)`;
  return f.path;
}

function line(cp: Checkpoint): string {
  const files = cp.files.map(fileLabel);
  const shown = files.length > 4 ? [...files.slice(0, 4), `+${files.length - 4} more`] : files;
  const notes = [
    cp.call ? `call ${cp.call}` : "",
    cp.restore_of ? `restore to before ${cp.restore_of}` : "",
    cp.state === "pending" ? "pending: never confirmed written" : "",
  ].filter(Boolean);
  return `${cp.id}  ${cp.at}  ${cp.tool}${notes.length ? ` (${notes.join("; ")})` : ""}: ${shown.join(", ")}`;
}

/**
 * The session whose checkpoints the command reads: one in the root on this machine (its store here),
 * or, with --workspace, one whose checkpoints are the workspace's, reached through the same link as
 * its tools (the host's --config and --allow travel, as for any session there).
 */
async function openCheckpoints(args: CheckpointsArgs): Promise<Session> {
  const { root, workspace } = await sessionRoot(args);
  if (workspace !== undefined)
    return openToolbelt({
      root,
      workspace,
      ...(args.config ? { configFile: args.config } : {}),
      ...(args.trust !== undefined ? { trustProject: args.trust } : {}),
      allow: args.allow ?? [],
    });
  const { config, trust } = await resolveSessionConfig(root, {
    ...(args.config ? { configFile: args.config } : {}),
    ...(args.trust !== undefined ? { trustProject: args.trust } : {}),
  });
  return createSession({ root, config, trust, allow: args.allow ?? [] });
}

/**
 * `toolbelt checkpoints list | diff ID | restore ID`: the changes tools made in a root, read from
 * the store outside it, and restores through the same write path tools use (policy, protected
 * paths), so a restore is itself a checkpoint.
 */
export async function checkpoints(args: CheckpointsArgs): Promise<number> {
  const usage = !ACTIONS.includes(args.action)
    ? `checkpoints: unknown action ${args.action}; use list, diff ID or restore ID`
    : args.action !== "list" && !args.id
      ? `checkpoints ${args.action} needs a checkpoint id, a call id or "last"`
      : undefined;
  if (usage) {
    process.stderr.write(`toolbelt: ${usage}\nRun toolbelt checkpoints --help for usage.\n`);
    return EXIT_USAGE;
  }
  const session = await openCheckpoints(args);
  const out = (value: unknown, text: string) =>
    process.stdout.write(args.json ? `${JSON.stringify(value)}\n` : text.endsWith("\n") ? text : `${text}\n`);
  try {
    const recorded = session.checkpoints;
    if (args.action === "list") {
      const list = await recorded.list();
      const { where, bytes: used, config } = await recorded.summary();
      const max = config.maxBytes;
      const head = `# Checkpoints: ${list.length} (store ${where}: ${mib(used)} of ${mib(max)}; oldest pruned first, older than ${config.maxAgeDays} days pruned; files over ${mib(config.maxFileBytes)} not recorded)${config.enabled ? "" : "\n# Recording is off (checkpoints.enabled: false)"}`;
      out(
        { kind: "checkpoints", store: where, bytes: used, max_bytes: max, checkpoints: list },
        [head, ...list.map(line)].join("\n"),
      );
      return EXIT_OK;
    }
    if (args.action === "diff") {
      const diff = await recorded.diff(args.id as string);
      const text = [
        `# Checkpoint: ${diff.checkpoint.id}`,
        `# Tool: ${diff.checkpoint.tool}${diff.checkpoint.call ? ` (call ${diff.checkpoint.call})` : ""}`,
        `# At: ${diff.checkpoint.at}`,
        ...diff.files.map((f) => `# File: ${f.path} ${state(f.before)} -> ${state(f.after)}`),
        ...diff.files.map((f) => f.diff),
      ].join("\n");
      out({ kind: "checkpoint_diff", ...diff }, text);
      return EXIT_OK;
    }
    const result = await recorded.restore(args.id as string, { tool: "checkpoints_restore" });
    const text = [
      `# Restored: every file changed at or after ${result.restored_to} is as it was before it`,
      ...result.files.map((f) => `${f.action}: ${f.path}`),
      ...result.unchanged.map((u) => `unchanged: ${u}`),
      result.checkpoint
        ? `# Undo this restore with: toolbelt checkpoints restore ${result.checkpoint}`
        : "# Nothing needed changing",
    ].join("\n");
    out(result, text);
    return EXIT_OK;
  } catch (error) {
    const e = normaliseError(error);
    if (args.json) process.stdout.write(`${JSON.stringify(e.toPayload())}\n`);
    process.stderr.write(`toolbelt: ${e.code}: ${e.message}\n`);
    return EXIT_TOOL_ERROR;
  } finally {
    await session.close();
  }
}
