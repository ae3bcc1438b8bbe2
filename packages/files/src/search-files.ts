import { promises as fs } from "node:fs";
import path from "node:path";
import {
  countWithCap,
  defineTool,
  type ResolvedPath,
  renderEntries,
  renderText,
  ToolbeltError,
  type ToolContext,
  z,
} from "@toolbelt/core";
import { listingDecision } from "@toolbelt/core/internal";
import { chooseEngine } from "./search/engine.js";
import { searchWithJs } from "./search/js-search.js";
import { ProgressThrottle } from "./search/progress-events.js";
import { compileQuery } from "./search/regex.js";
import { capResults, type EngineResult } from "./search/results.js";
import {
  ignoreFilesAbove,
  type RipgrepCommand,
  SearchSandboxError,
  searchWithRipgrep,
} from "./search/ripgrep.js";
import { verifyShown } from "./search/verify.js";

export const searchResultsPayload = z.object({
  kind: z.literal("search_results"),
  query: z.string(),
  path: z
    .string()
    .describe("the root-relative path searched (absolute for a saved output file outside the root)"),
  include: z.string().optional(),
  note: z
    .string()
    .optional()
    .describe("set when the requested path did not exist and an ancestor was searched instead"),
  engine: z.enum(["ripgrep", "js"]),
  entries: z.array(
    z.object({
      path: z.string(),
      matches: z.array(z.object({ line: z.number().int(), text: z.string() })),
    }),
  ),
  files: z.number().int(),
  matches: z.number().int(),
  capped: z.boolean(),
  max_matches: z.number().int(),
  max_chars: z.number().int(),
  skipped: z
    .number()
    .int()
    .optional()
    .describe("files with matches left out because the allowlist does not admit them"),
  changed: z
    .number()
    .int()
    .optional()
    .describe(
      "lines ripgrep reported that were dropped: read again (ripgrep ran unconfined), they were no longer that line of that file, which changed during the search (or was swapped for a symlink)",
    ),
  profile: z
    .literal("mouaif")
    .optional()
    .describe("set in the mouaif profile, whose text reads `# Search: <query>` / `# Matches: N`"),
  structure: z
    .literal("flat")
    .optional()
    .describe(
      'set when `toolOutput.structure` is `"flat"`: the text has one `path:line: text` row per match',
    ),
});

export type SearchResultsPayload = z.output<typeof searchResultsPayload>;

const searchInput = z.object({
  query: z.string().min(1).describe("regular expression (ripgrep syntax), matched line by line"),
  path: z.string().default(".").describe("directory or file to search (default: the project root)"),
  include: z
    .string()
    .optional()
    .describe("only files matching this glob, e.g. `*.ts` or `src/**/*.{ts,tsx}`"),
});

/** The requested path, or its nearest existing ancestor inside the root with a note saying so. */
function existingTarget(ctx: ToolContext, requested: string): { target: ResolvedPath; note?: string } {
  const first = ctx.resolve(requested);
  if (first.exists) return { target: first };
  let cursor = first.abs;
  while (true) {
    const up = path.dirname(cursor);
    const candidate = ctx.resolve(up);
    if (candidate.exists) {
      return {
        target: candidate,
        note: `${first.rel} does not exist; searched its nearest existing ancestor ${candidate.rel}`,
      };
    }
    if (up === cursor) throw new ToolbeltError("ENOENT", `no such path: ${first.rel}`);
    cursor = up;
  }
}

export const searchFilesTool = defineTool({
  name: "search_files",
  family: "files",
  access: "read",
  description:
    "Search file contents with a regular expression (ripgrep). Honours .gitignore/.ignore, skips binary files, includes hidden files except .git. Answers matching lines grouped under their files as `line: text`, capped (the cap is stated).",
  input: searchInput,
  output: searchResultsPayload,
  // No paths for the session's allowlist check: a directory is admitted when an allowed file could lie
  // beneath it, and the results of either engine are then filtered by the allowlist.
  paths: () => [],
  readsSavedOutput: true,
  async execute(input, ctx): Promise<SearchResultsPayload> {
    if (/[\n\r]/.test(input.query)) {
      throw new ToolbeltError("EINVAL_INPUT", "query must be a single line (matching is line by line)", {
        details: { field: "query" },
      });
    }
    const { target, note } = existingTarget(ctx, input.path);
    // A file of saved command output (outside the root) is searched from its own directory, and its
    // matches are named by its absolute path.
    const base = target.outside ? path.dirname(target.abs) : ctx.root;
    const within = target.outside ? path.basename(target.abs) : target.rel;
    const stat = await fs.stat(target.abs);
    if (!stat.isFile() && !stat.isDirectory()) {
      throw new ToolbeltError("EINVAL_INPUT", `${target.rel} is neither a file nor a directory`, {
        details: { field: "path" },
      });
    }
    const { denied, filter } = listingDecision(
      { tool: "search_files", calledAs: ctx.calledAs, family: "files" },
      ctx.config,
      { rel: target.rel, directory: stat.isDirectory() },
    );
    if (denied)
      throw new ToolbeltError("EDENIED", `${ctx.calledAs}: ${denied}`, {
        details: { tool: ctx.calledAs, path: target.rel },
      });
    const choice = await chooseEngine(ctx.config);
    if (choice.engine === "unavailable") throw new ToolbeltError("EUNAVAILABLE", choice.reason);
    const maxMatches = ctx.limits.fileSearchMaxMatches;
    const maxChars = ctx.limits.fileSearchMaxBytes;
    // The allowlist is applied while collecting, so files it refuses never take a place in the cap.
    const admit = filter ? (rel: string) => filter([rel])[0] === true : undefined;
    // What the search found so far goes out as search_progress events while it runs, a few a second.
    const progress = new ProgressThrottle((found) => {
      if (ctx.session.closed) return;
      try {
        ctx.emit({ type: "search_progress", call_id: ctx.callId, ...found });
      } catch {
        // Sent from ripgrep's output handler or a timer, where a throw would end the process: a
        // session that does not know the event (the tool registered without its family) goes without.
      }
    });
    const onProgress = progress.update.bind(progress);
    let result: EngineResult;
    // Whether every ripgrep run was confined by the session's wrapper (the shell family's Landlock);
    // if not, what the answer shows is read again and checked before it is shown.
    let verify = false;
    try {
      if (choice.engine === "ripgrep") {
        const rg = choice.rg.path;
        const search = {
          rg,
          cwd: base,
          target: within,
          query: input.query,
          ...(input.include ? { include: input.include } : {}),
          maxMatches,
          ...(admit ? { admit } : {}),
          signal: ctx.signal,
          onProgress,
        };
        const reads = ignoreFilesAbove(base);
        const launch = (args: string[]): RipgrepCommand => {
          const spec = ctx.session.wrapCommand(
            { file: rg, args, cwd: base, env: process.env, reads },
            "search",
          );
          if (spec.confined !== true) verify = true;
          return spec;
        };
        // One slot of the process pool for the whole search: its ripgrep runs one after another.
        const slot = await ctx.processSlot();
        try {
          result = await searchWithRipgrep({ ...search, launch });
        } catch (error) {
          if (!(error instanceof SearchSandboxError)) throw error;
          // The sandbox would not start (a helper older than this code, Landlock refused after the
          // probe): ripgrep runs unconfined, and what it shows is checked.
          verify = true;
          result = await searchWithRipgrep(search);
        } finally {
          slot.release();
        }
      } else {
        result = await searchWithJs({
          root: base,
          start: target.abs,
          isFile: stat.isFile(),
          fileRel: within,
          query: compileQuery(input.query),
          ...(input.include ? { include: input.include } : {}),
          maxMatches,
          ...(admit ? { admit } : {}),
          signal: ctx.signal,
          onProgress,
        });
      }
    } finally {
      progress.stop();
    }
    const skipped = result.skipped ?? 0;
    const capped = capResults(result, maxMatches, maxChars);
    let changed = 0;
    if (verify) {
      const checked = verifyShown(capped.files, base, (abs) => ctx.session.openFileSync(abs));
      changed = checked.changed;
      capped.files = checked.files;
      capped.matchCount -= changed;
    }
    if (target.outside) capped.files = capped.files.map((f) => ({ ...f, path: path.join(base, f.path) }));
    return {
      kind: "search_results",
      query: input.query,
      path: target.rel,
      ...(input.include ? { include: input.include } : {}),
      ...(note ? { note } : {}),
      engine: choice.engine,
      entries: capped.files,
      files: capped.files.length,
      matches: capped.matchCount,
      capped: capped.capped,
      max_matches: maxMatches,
      max_chars: maxChars,
      ...(skipped ? { skipped } : {}),
      ...(changed ? { changed } : {}),
      ...(ctx.profile === "mouaif" ? { profile: "mouaif" as const } : {}),
      ...(ctx.config.toolOutput.structure === "flat" ? { structure: "flat" as const } : {}),
    };
  },
  render(payload) {
    const matches = countWithCap(
      payload.matches,
      payload.max_matches,
      payload.capped,
      `matches / ${payload.max_chars} chars`,
    );
    const skipped = payload.skipped ? `${payload.skipped} files (not in the allowlist)` : undefined;
    const changed = payload.changed
      ? `${payload.changed} ${payload.changed === 1 ? "line" : "lines"} (changed during the search; not shown)`
      : undefined;
    const body = renderEntries(payload.entries, payload.structure);
    if (payload.profile === "mouaif") {
      return renderText(
        [
          ["Search", payload.query],
          ["Matches", matches],
          ["Skipped", skipped],
          ["Changed", changed],
          ["Structure", payload.structure],
        ],
        body,
      );
    }
    return renderText(
      [
        ["Kind", "search_results"],
        ["Query", payload.query],
        ["Path", payload.path],
        ["Include", payload.include],
        ["Note", payload.note],
        ["Files", payload.files],
        ["Matches", matches],
        ["Skipped", skipped],
        ["Changed", changed],
        ["Structure", payload.structure],
      ],
      body,
    );
  },
});
