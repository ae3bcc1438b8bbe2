import path from "node:path";
import {
  defineTool,
  type ErrorCode,
  type ErrorPayload,
  errorPayload,
  type ToolContext,
  z,
} from "@toolbelt/core";
import {
  commitAll,
  type EditResult,
  editResult,
  editResultPayload,
  type LoadedFile,
  loadFile,
  type PendingWrite,
  resolveIn,
  withFileLocks,
} from "./apply.js";
import { type EditBlock, parseBlocks, splitElisions } from "./blocks.js";
import {
  fromRaw,
  hasFinalNewline,
  keepFinalNewline,
  spliceDocument,
  type TextDocument,
  toLf,
} from "./document.js";
import { isFailure, strategyName } from "./match-report.js";
import { ALL_STRATEGIES, locate, STRICT_STRATEGIES } from "./matcher.js";
import { renderEdit } from "./render.js";

const input = z.object({
  content: z
    .string()
    .describe(
      "One or more SEARCH/REPLACE blocks: the file path alone on a line, then a fenced block holding <<<<<<< SEARCH, the exact lines, =======, the new lines, >>>>>>> REPLACE.",
    ),
  files: z.array(z.string()).optional().describe("If given, the only files the blocks may edit"),
  tolerant: z
    .boolean()
    .optional()
    .describe(
      "Also match SEARCH ignoring indentation and formatting, as edit_file does (default false: exact)",
    ),
  root: z.string().optional().describe("Directory the file paths are relative to (inside the project)"),
});

const mewboInput = z.object({
  content: z.string().describe("SEARCH/REPLACE block content"),
  root: z.string().optional().describe("Project root directory"),
  files: z.array(z.string()).optional().describe("Files the blocks may edit"),
});

const DESCRIPTION =
  "Edit files with SEARCH/REPLACE blocks:\n" +
  "path/to/file.ts\n```ts\n<<<<<<< SEARCH\nexact existing lines\n=======\nnew lines\n>>>>>>> REPLACE\n```\n" +
  "The path goes on the line right before the opening fence. Several blocks and files per call; every block applies or none does. " +
  "SEARCH must match the file exactly (line endings aside) and exactly once; a failure shows the closest candidate with line numbers. " +
  "A line of only `...` in both SEARCH and REPLACE keeps the lines between unchanged. An empty SEARCH creates the file (or appends). " +
  "Never put shell commands here.";

type Args = {
  content: string;
  files?: string[] | undefined;
  tolerant?: boolean | undefined;
  root?: string | undefined;
};

type Failure = { block: number; file: string; code: ErrorCode; message: string };

function appendText(doc: TextDocument, addition: string): TextDocument {
  const text = toLf(addition);
  if (doc.text === "") return { ...fromRaw(text.endsWith("\n") ? text : `${text}\n`), bom: doc.bom };
  const joiner = hasFinalNewline(doc) ? "" : "\n";
  return spliceDocument(
    doc,
    doc.text.length,
    doc.text.length,
    joiner + text + (text.endsWith("\n") ? "" : "\n"),
  );
}

/** Applies one file's blocks in memory, in order; returns the new document or the failures. */
function applyBlocks(
  file: LoadedFile,
  blocks: EditBlock[],
  tolerant: boolean,
  offerTolerant: boolean,
): { doc: TextDocument; strategies: string[]; failures: Failure[] } {
  let doc = file.doc;
  const strategies: string[] = [];
  const failures: Failure[] = [];
  const fail = (block: EditBlock, code: ErrorCode, message: string) =>
    failures.push({ block: block.index, file: file.rel, code, message });
  for (const block of blocks) {
    const searches = splitElisions(block.search);
    const replaces = splitElisions(block.replace);
    if (searches.length !== replaces.length) {
      fail(
        block,
        "EINVAL_INPUT",
        `SEARCH has ${searches.length - 1} \`...\` lines and REPLACE has ${replaces.length - 1}; they must pair up`,
      );
      continue;
    }
    if (block.search.trim() === "" && block.search !== "") {
      fail(
        block,
        "EINVAL_INPUT",
        "SEARCH holds only blank lines, which would match almost anywhere; include a non-blank line of context (an empty SEARCH creates or appends)",
      );
      continue;
    }
    if (block.search === "") {
      if (doc.text === "" || !file.exists) {
        doc = {
          ...fromRaw(toLf(block.replace).endsWith("\n") ? toLf(block.replace) : `${toLf(block.replace)}\n`),
          bom: doc.bom,
        };
        strategies.push("create");
      } else {
        doc = appendText(doc, block.replace);
        strategies.push("append");
      }
      continue;
    }
    if (!file.exists) {
      fail(block, "ENOENT", `${file.rel} does not exist (an empty SEARCH section creates it)`);
      continue;
    }
    let working = doc;
    let from = 0;
    const used: string[] = [];
    let failed = false;
    for (let k = 0; k < searches.length; k++) {
      const search = searches[k] as string;
      const replace = replaces[k] as string;
      if (search.trim() === "") {
        if (replace.trim() !== "") {
          fail(
            block,
            "EINVAL_INPUT",
            "a part of SEARCH next to a `...` line is empty while its REPLACE part is not; say where the new lines go with a line of context",
          );
          failed = true;
          break;
        }
        continue;
      }
      const label = searches.length > 1 ? `part ${k + 1} of SEARCH` : "SEARCH";
      const match = locate(working, search, replace, {
        strategies: tolerant ? ALL_STRATEGIES : STRICT_STRATEGIES,
        from,
        label,
      });
      if (isFailure(match)) {
        const exactNote =
          tolerant || match.code !== "ENO_MATCH"
            ? ""
            : offerTolerant
              ? " SEARCH must match exactly; set tolerant: true to also ignore indentation and formatting."
              : " SEARCH must match exactly: copy the lines as the file has them, indentation included.";
        fail(block, match.code, match.message + exactNote);
        failed = true;
        break;
      }
      working = spliceDocument(working, match.start, match.end, match.replacement);
      from = match.start + match.replacement.length;
      used.push(strategyName(match));
    }
    if (failed) continue;
    doc = keepFinalNewline(doc, working);
    strategies.push(used.length ? used.join("+") : "no-op");
  }
  return { doc, strategies, failures };
}

export async function searchReplaceBlock(ctx: ToolContext, args: Args): Promise<EditResult | ErrorPayload> {
  const parsed = parseBlocks(args.content);
  if (!parsed.ok) return errorPayload("EINVAL_INPUT", parsed.message);
  const byFile = new Map<string, { rel: string; blocks: EditBlock[] }>();
  const failures: Failure[] = [];
  const allowed = args.files?.map((f) => resolveIn(ctx, f, args.root).abs);
  for (const block of parsed.blocks) {
    const target = resolveIn(ctx, block.file, args.root);
    if (allowed && !allowed.includes(target.abs)) {
      failures.push({
        block: block.index,
        file: target.rel,
        code: "EDENIED",
        message: `${target.rel} is not in files (${(args.files ?? []).join(", ")})`,
      });
      continue;
    }
    const entry = byFile.get(target.abs) ?? { rel: target.rel, blocks: [] };
    entry.blocks.push(block);
    byFile.set(target.abs, entry);
  }
  return withFileLocks(ctx, [...byFile.keys()], async () => {
    const pending: PendingWrite[] = [];
    // Everything is matched in memory first; nothing is written unless every block applies.
    for (const [abs, { rel, blocks }] of byFile) {
      const file = await loadFile(ctx, abs, rel);
      // mewbo's schema has no `tolerant`, so its errors must not point the model at one.
      const result = applyBlocks(file, blocks, args.tolerant === true, ctx.profile !== "mewbo");
      failures.push(...result.failures);
      if (result.doc.text !== file.doc.text || !file.exists)
        pending.push({ file, after: result.doc, strategies: result.strategies });
    }
    if (failures.length > 0) {
      failures.sort((a, b) => a.block - b.block);
      const first = failures[0] as Failure;
      const total = parsed.blocks.length;
      const message = `${failures.length} of ${total} block${total === 1 ? "" : "s"} failed; nothing was written.\n\n${failures
        .map((f) => `block ${f.block} (${f.file}): [${f.code}] ${f.message}`)
        .join("\n\n")}`;
      return errorPayload(first.code, message, { failures, blocks: total });
    }
    if (pending.length === 0)
      return errorPayload("EINVAL_INPUT", "every block's REPLACE equals its SEARCH; nothing to change");
    const { edits, notes } = await commitAll(ctx, pending);
    return editResult(edits, notes);
  });
}

function blockPaths(args: Args): string[] {
  const parsed = parseBlocks(args.content);
  if (!parsed.ok) return [];
  const names = [...new Set(parsed.blocks.map((b) => b.file))];
  return names.map((n) => (args.root && !path.isAbsolute(n) ? path.join(args.root, n) : n));
}

export const searchReplaceBlockTool = defineTool({
  name: "search_replace_block",
  family: "edit",
  access: "write",
  editBackend: "search_replace_block",
  description: DESCRIPTION,
  input,
  output: editResultPayload,
  paths: blockPaths,
  execute: (i, ctx) => searchReplaceBlock(ctx, i),
  render: renderEdit,
  profiles: {
    mewbo: {
      name: "aider_edit_block_tool",
      description: DESCRIPTION,
      input: mewboInput,
    },
  },
});
