import { promises as fs, statSync } from "node:fs";
import path from "node:path";
import {
  countWithCap,
  defineTool,
  escapePath,
  renderEntries,
  renderText,
  ToolbeltError,
  type ToolContext,
  type TreeEntry,
  z,
} from "@toolbelt/core";
import { listingDecision } from "@toolbelt/core/internal";
import { loadPicomatch } from "./glob-libs.js";
import { decodeText, imageMimeType } from "./text-decode.js";
import { comparePaths } from "./tree-order.js";
import { walkFiles } from "./walk.js";

export const fileListPayload = z.object({
  kind: z.literal("file_list"),
  pattern: z.string(),
  path: z.string(),
  entries: z.array(z.object({ path: z.string(), note: z.string().optional() })),
  count: z.number().int(),
  capped: z.boolean(),
  max_entries: z.number().int(),
  profile: z
    .literal("mouaif")
    .optional()
    .describe("set in the mouaif profile, whose text reads `# Listing: <pattern>` / `# Count: N`"),
  structure: z
    .literal("flat")
    .optional()
    .describe('set when `toolOutput.structure` is `"flat"`: the text lists one full path per row'),
});

export const dirListPayload = z.object({
  kind: z.literal("dir_list"),
  path: z.string(),
  files: z.array(z.string()),
  count: z.number().int(),
  capped: z.boolean(),
  max_entries: z.number().int(),
});

export type FileListPayload = z.output<typeof fileListPayload>;
export type DirListPayload = z.output<typeof dirListPayload>;

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
  // A synchronous stat, as the walk's own readdirs are: a thread-pool round trip cost more than it.
  if (!statSync(resolved.abs).isDirectory()) {
    throw new ToolbeltError("ENOTDIR", `${resolved.rel} is not a directory`, {
      details: { path: resolved.rel },
    });
  }
  return resolved;
}

/**
 * The allowlist decision on a listing's directory, and the filter for what it finds: a directory is
 * admitted when an allowed file could lie beneath it, and only allowed files are listed.
 */
function listingScope(
  ctx: ToolContext,
  tool: string,
  dir: { rel: string },
): ((rels: readonly string[]) => boolean[]) | undefined {
  const subject = { tool, calledAs: ctx.calledAs, family: "files" };
  const { denied, filter } = listingDecision(subject, ctx.config, { rel: dir.rel, directory: true });
  if (denied)
    throw new ToolbeltError("EDENIED", `${ctx.calledAs}: ${denied}`, {
      details: { tool: ctx.calledAs, path: dir.rel },
    });
  return filter;
}

/** Whether a file's first bytes look binary the way ripgrep judges it (a NUL byte, no UTF-16 BOM). */
async function looksBinary(ctx: ToolContext, rel: string): Promise<boolean> {
  let handle: Awaited<ReturnType<ToolContext["openFile"]>> | undefined;
  try {
    handle = await ctx.openFile(path.join(ctx.root, rel));
    const buf = Buffer.alloc(8192);
    const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
    return decodeText(buf.subarray(0, bytesRead)) === undefined;
  } catch {
    // Unreadable now (removed, a special file): leave it out rather than list what cannot be read.
    return true;
  } finally {
    await handle?.close();
  }
}

/**
 * Collects matching root-relative paths under `start`, sorted, at most `cap` of them, keeping only
 * those `admit` lets through (the allowlist) and, with `textOnly`, text and image files.
 */
async function collect(
  ctx: ToolContext,
  start: string,
  accept: (rel: string) => boolean,
  cap: number,
  options: { admit?: (rels: readonly string[]) => boolean[]; textOnly?: boolean } = {},
): Promise<{ paths: string[]; capped: boolean }> {
  let found: string[] = [];
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
  if (options.admit) {
    const ok = options.admit(found);
    found = found.filter((_p, i) => ok[i]);
  }
  found.sort(comparePaths);
  if (options.textOnly) {
    // Judged in order and only until one past the cap: a listing opens at most cap + 1 text files.
    const kept: string[] = [];
    for (const rel of found) {
      if (kept.length > cap) break;
      if (imageMimeType(rel) || !(await looksBinary(ctx, rel))) kept.push(rel);
    }
    found = kept;
  }
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
  output: fileListPayload,
  // No paths for the session's allowlist check: a directory is judged by listingScope, and the
  // listing is filtered by the allowlist, so `.` lists the allowed files instead of failing.
  paths: () => [],
  async execute(input, ctx): Promise<FileListPayload> {
    const base = await directoryOf(ctx, input.path);
    const admit = listingScope(ctx, "list_files", base);
    const mouaif = ctx.profile === "mouaif";
    const picomatch = loadPicomatch();
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
    // `s`: a name may hold a newline or carriage return, and `*` must match it (rg's globs do).
    const globOptions = { dot: true, nocase: true, flags: "is" };
    let isMatch: (rel: string) => boolean = picomatch(pattern, globOptions);
    if (!scan.isGlob) {
      const bare = pattern.replace(/\/+$/, "");
      const target = ctx.resolve(path.join(base.abs, pattern));
      if (target.exists && (await fs.stat(target.abs)).isDirectory()) {
        pattern = `${bare}/**`;
        isMatch = picomatch(pattern, globOptions);
      } else {
        // A bare name that is no directory as written may still name one in another case (`SRC`):
        // it then lists that directory, as globs match case-insensitively.
        const under = picomatch(`${bare}/**`, globOptions);
        const exact = isMatch;
        isMatch = (rel: string) => exact(rel) || under(rel);
      }
    }
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
      // The mouaif spec lists text and image files only; the default profile lists every file.
      { ...(admit ? { admit } : {}), textOnly: mouaif },
    );
    return {
      kind: "file_list",
      pattern: input.pattern,
      path: base.rel,
      entries: paths.map((p) => (imageMimeType(p) ? { path: p, note: "(image)" } : { path: p })),
      count: paths.length,
      capped,
      max_entries: cap,
      ...(mouaif ? { profile: "mouaif" as const } : {}),
      ...(ctx.config.toolOutput.structure === "flat" ? { structure: "flat" as const } : {}),
    };
  },
  render(payload) {
    const body = renderEntries(payload.entries as TreeEntry[], payload.structure);
    if (payload.profile === "mouaif") {
      return renderText(
        [
          ["Listing", payload.pattern],
          ["Count", countWithCap(payload.count, payload.max_entries, payload.capped)],
          ["Structure", payload.structure],
        ],
        body,
      );
    }
    return renderText(
      [
        ["Kind", "file_list"],
        ["Pattern", payload.pattern],
        ["Path", payload.path],
        ["Count", countWithCap(payload.count, payload.max_entries, payload.capped)],
        ["Structure", payload.structure],
      ],
      body,
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
  output: dirListPayload,
  // Judged by listingScope instead, like list_files.
  paths: () => [],
  async execute(input, ctx): Promise<DirListPayload> {
    const dir = await directoryOf(ctx, input.path);
    const admit = listingScope(ctx, "list_dir", dir);
    const cap = ctx.limits.fileListMaxEntries;
    const { paths, capped } = await collect(ctx, dir.abs, () => true, cap, admit ? { admit } : {});
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
