import { promises as fs } from "node:fs";
import path from "node:path";
import {
  countWithCap,
  defineTool,
  escapePath,
  renderText,
  renderTree,
  ToolbeltError,
  type ToolContext,
  type TreeEntry,
} from "@toolbelt/core";
import picomatch from "picomatch";
import { z } from "zod";
import { imageMimeType } from "./text-decode.js";
import { comparePaths } from "./tree-order.js";
import { walkFiles } from "./walk.js";

export type FileListPayload = {
  kind: "file_list";
  pattern: string;
  path: string;
  entries: Array<{ path: string; note?: string }>;
  count: number;
  capped: boolean;
  max_entries: number;
};

export type DirListPayload = {
  kind: "dir_list";
  path: string;
  files: string[];
  count: number;
  capped: boolean;
  max_entries: number;
};

/** Walks stop collecting past this many entries; the sorted list is then capped for display. */
function collectionBound(cap: number): number {
  return Math.max(cap * 20, 10_000);
}

async function directoryOf(ctx: ToolContext, p: string) {
  const resolved = ctx.resolve(p);
  if (!resolved.exists)
    throw new ToolbeltError("ENOENT", `no such directory: ${resolved.rel}`, {
      details: { path: resolved.rel },
    });
  if (!(await fs.stat(resolved.abs)).isDirectory()) {
    throw new ToolbeltError("ENOTDIR", `${resolved.rel} is not a directory`, {
      details: { path: resolved.rel },
    });
  }
  return resolved;
}

/** Collects matching root-relative paths under `start`, sorted, at most `cap` of them. */
async function collect(
  ctx: ToolContext,
  start: string,
  accept: (rel: string) => boolean,
  cap: number,
): Promise<{ paths: string[]; capped: boolean }> {
  const found: string[] = [];
  const bound = collectionBound(cap);
  let stoppedEarly = false;
  await walkFiles({ root: ctx.root, start, signal: ctx.signal }, ({ rel }) => {
    if (!accept(rel)) return true;
    found.push(rel);
    if (found.length >= bound) {
      stoppedEarly = true;
      return false;
    }
    return true;
  });
  found.sort(comparePaths);
  return { paths: found.slice(0, cap), capped: stoppedEarly || found.length > cap };
}

const listFilesInput = z.object({
  pattern: z
    .string()
    .default("**")
    .describe(
      "glob relative to `path`, e.g. `src/**/*.ts`; a bare directory such as `src` means `src/**`; case-insensitive",
    ),
  path: z.string().default(".").describe("directory the pattern is relative to (default: the project root)"),
});

export const listFilesTool = defineTool({
  name: "list_files",
  family: "files",
  access: "read",
  description:
    "List files matching a glob (case-insensitive; a bare directory lists everything under it), honouring .gitignore. Answers an indented tree of root-relative paths; images are marked (image).",
  input: listFilesInput,
  paths: (input) => [input.path],
  async execute(input, ctx): Promise<FileListPayload> {
    const base = await directoryOf(ctx, input.path);
    let pattern = input.pattern.trim().replace(/^\.\/+/, "") || "**";
    if (path.isAbsolute(pattern)) {
      // An absolute pattern must lie inside the root; it is taken relative to `path` from here on.
      const scanBase = picomatch.scan(pattern).base || path.sep;
      const resolvedBase = ctx.resolve(scanBase);
      const rest = pattern.slice(scanBase.length).replace(/^\/+/, "");
      const relBase = path.relative(base.abs, resolvedBase.abs).split(path.sep).join("/");
      if (relBase.startsWith("..")) {
        throw new ToolbeltError("EINVAL_INPUT", `pattern ${pattern} is not under ${base.rel}`, {
          details: { field: "pattern" },
        });
      }
      pattern = [relBase, rest].filter(Boolean).join("/") || "**";
    }
    const scan = picomatch.scan(pattern);
    if (!scan.isGlob) {
      const target = ctx.resolve(path.join(base.abs, pattern));
      if (target.exists && (await fs.stat(target.abs)).isDirectory())
        pattern = `${pattern.replace(/\/+$/, "")}/**`;
    }
    // `s`: a name may hold a newline or carriage return, and `*` must match it (rg's globs do).
    const isMatch = picomatch(pattern, { dot: true, nocase: true, flags: "is" });
    // Walk from the pattern's static prefix when it exists as written; otherwise from the base,
    // since a case-insensitive prefix may name the directory in another case.
    let start = base.abs;
    const prefix = picomatch.scan(pattern).base;
    if (prefix) {
      const candidate = ctx.resolve(path.join(base.abs, prefix));
      if (candidate.exists && (await fs.stat(candidate.abs)).isDirectory()) start = candidate.abs;
    }
    const baseRel = base.rel === "." ? "" : `${base.rel}/`;
    const cap = ctx.limits.fileListMaxEntries;
    const { paths, capped } = await collect(
      ctx,
      start,
      (rel) => isMatch(baseRel ? rel.slice(baseRel.length) : rel),
      cap,
    );
    return {
      kind: "file_list",
      pattern: input.pattern,
      path: base.rel,
      entries: paths.map((p) => (imageMimeType(p) ? { path: p, note: "(image)" } : { path: p })),
      count: paths.length,
      capped,
      max_entries: cap,
    };
  },
  render(payload) {
    return renderText(
      [
        ["Kind", "file_list"],
        ["Pattern", payload.pattern],
        ["Path", payload.path],
        ["Count", countWithCap(payload.count, payload.max_entries, payload.capped)],
      ],
      renderTree(payload.entries as TreeEntry[]),
    );
  },
});

const listDirInput = z.object({
  path: z.string().default(".").describe("directory to list (default: the project root)"),
});

export const listDirTool = defineTool({
  name: "list_dir",
  family: "files",
  access: "read",
  description:
    "List every file under a directory, recursively, as paths relative to the project root (honours .gitignore).",
  input: listDirInput,
  paths: (input) => [input.path],
  async execute(input, ctx): Promise<DirListPayload> {
    const dir = await directoryOf(ctx, input.path);
    const cap = ctx.limits.fileListMaxEntries;
    const { paths, capped } = await collect(ctx, dir.abs, () => true, cap);
    return { kind: "dir_list", path: dir.rel, files: paths, count: paths.length, capped, max_entries: cap };
  },
  render(payload) {
    return renderText(
      [
        ["Kind", "dir_list"],
        ["Path", payload.path],
        ["Count", countWithCap(payload.count, payload.max_entries, payload.capped)],
      ],
      payload.files.map(escapePath).join("\n"),
    );
  },
  profiles: {
    mewbo: {
      name: "aider_list_dir_tool",
      description: "List files under a directory (recursive, root-relative paths).",
    },
  },
});
