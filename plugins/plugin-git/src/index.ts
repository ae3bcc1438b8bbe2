import { definePlugin, defineTool, renderText, type ToolContext, type ToolResult, z } from "@toolbelt/core";
import { contributions, DEFAULT_LOG_COUNT, DEFAULT_MAX_BYTES, gitConfig } from "./contrib.js";
import { git } from "./git.js";

/** What every git tool returns: the command's output, capped at git.max_output_bytes. */
const gitOutput = z.object({
  kind: z.literal("git_output"),
  command: z.string(),
  output: z.string(),
  truncated: z.boolean(),
  dropped_bytes: z.number().int(),
  cap: z.number().int(),
});

type GitPayload = z.output<typeof gitOutput>;

function relPaths(ctx: ToolContext, paths: string[] | undefined): string[] {
  // Every path goes through core's resolver: nothing outside the root reaches git.
  return (paths ?? []).map((p) => ctx.resolve(p).rel);
}

// The section is validated (with its defaults) when the session's config is parsed with the
// plugin's contribution; a session built without it falls back to the defaults.
function settings(ctx: ToolContext) {
  return (
    gitConfig.read(ctx.config).git ?? {
      max_output_bytes: DEFAULT_MAX_BYTES,
      log_max_count: DEFAULT_LOG_COUNT,
    }
  );
}

async function run(ctx: ToolContext, args: string[], label: string): Promise<GitPayload> {
  const cap = settings(ctx).max_output_bytes;
  const out = await git(args, ctx.root, { maxBytes: cap, signal: ctx.signal });
  if (out.droppedBytes > 0)
    ctx.emit({ type: "git/output_truncated", command: label, dropped_bytes: out.droppedBytes, cap });
  return {
    kind: "git_output",
    command: label,
    output: out.stdout,
    truncated: out.droppedBytes > 0,
    dropped_bytes: out.droppedBytes,
    cap,
  };
}

function render(payload: GitPayload): string {
  return renderText(
    [
      ["Kind", payload.kind],
      ["Command", payload.command],
      [
        "Truncated",
        payload.truncated
          ? `yes (${payload.dropped_bytes} bytes left out, capped at ${payload.cap} bytes)`
          : undefined,
      ],
    ],
    payload.output.trimEnd() || "(no output)",
  );
}

const ref = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[^-\s][^\s]*$/, "a revision may not start with - or contain spaces");

export const gitStatus = defineTool({
  name: "git_status",
  family: "git",
  access: "read",
  description: "Show the working tree status (branch, staged, unstaged and untracked files) in short form.",
  input: z.object({ paths: z.array(z.string()).optional().describe("limit to these paths") }),
  output: gitOutput,
  paths: (input) => input.paths ?? [],
  execute: (input, ctx) =>
    run(ctx, ["status", "--short", "--branch", "--", ...relPaths(ctx, input.paths)], "git status"),
  render,
});

export const gitDiff = defineTool({
  name: "git_diff",
  family: "git",
  access: "read",
  description:
    "Show changes as a unified diff: unstaged by default, staged with `staged`, or against a revision.",
  input: z.object({
    staged: z.boolean().optional().describe("diff the index against HEAD"),
    revision: ref.optional().describe("diff the working tree against this revision"),
    paths: z.array(z.string()).optional(),
    context: z.number().int().min(0).max(20).optional().describe("lines of context (default 3)"),
  }),
  output: gitOutput,
  paths: (input) => input.paths ?? [],
  execute: (input, ctx) => {
    const args = ["diff", `-U${input.context ?? 3}`];
    if (input.staged) args.push("--cached");
    if (input.revision) args.push(input.revision);
    return run(ctx, [...args, "--", ...relPaths(ctx, input.paths)], `git ${args.join(" ")}`);
  },
  render,
});

export const gitLog = defineTool({
  name: "git_log",
  family: "git",
  access: "read",
  description: "Show recent commits (hash, date, author, subject), optionally for some paths.",
  input: z.object({
    max_count: z
      .number()
      .int()
      .min(1)
      .max(200)
      .optional()
      .describe("commits to show (default git.log_max_count, 20)"),
    revision: ref.optional(),
    paths: z.array(z.string()).optional(),
  }),
  output: gitOutput,
  paths: (input) => input.paths ?? [],
  execute: (input, ctx) => {
    const count = input.max_count ?? settings(ctx).log_max_count;
    const args = ["log", `--max-count=${count}`, "--date=short", "--format=%h %ad %an %s"];
    if (input.revision) args.push(input.revision);
    return run(ctx, [...args, "--", ...relPaths(ctx, input.paths)], `git log -n ${count}`);
  },
  render,
});

export const gitBlame = defineTool({
  name: "git_blame",
  family: "git",
  access: "read",
  description: "Show who last changed each line of a file, optionally for a line range (1-based, inclusive).",
  input: z.object({
    path: z.string(),
    start_line: z.number().int().min(1).optional(),
    end_line: z.number().int().min(1).optional(),
  }),
  output: gitOutput,
  paths: (input) => [input.path],
  execute: (input, ctx) => {
    const rel = ctx.resolve(input.path).rel;
    const args = ["blame", "--date=short"];
    if (input.start_line || input.end_line) args.push(`-L${input.start_line ?? 1},${input.end_line ?? ""}`);
    return run(ctx, [...args, "--", rel], `git blame ${rel}`);
  },
  render,
});

/** What each git tool returns, for session.call() (merged into core's ToolResultMap below). */
export interface GitResults {
  git_status: ToolResult<typeof gitStatus>;
  git_diff: ToolResult<typeof gitDiff>;
  git_log: ToolResult<typeof gitLog>;
  git_blame: ToolResult<typeof gitBlame>;
}

declare module "@toolbelt/core" {
  interface ToolResultMap extends GitResults {}
}

/** The git plugin: four read-only tools over the git CLI, a `git` config section and one event. */
const plugin = definePlugin({
  name: "git",
  version: "0.1.0",
  tools: [gitStatus, gitDiff, gitLog, gitBlame],
  contributes: contributions,
});

export default plugin;
export { contributions, gitConfig, gitEvents } from "./contrib.js";
export { plugin };
