import path from "node:path";
import { type ResolvedPath, type ToolContext, z } from "@toolbelt/core";
import type { Diagnostic, Location, LocationLink, Range } from "vscode-languageserver-protocol";
import type { Backend } from "./manager.js";
import { readProjectFile } from "./project-files.js";
import { fromUri } from "./uri.js";

export const SEVERITIES = ["error", "warning", "info", "hint"] as const;
export type Severity = (typeof SEVERITIES)[number];

/** A place in a file, 1-based, with the text of its line when the file is inside the root. */
export const placeSchema = z.object({
  path: z.string().describe("root-relative, or absolute when outside the root (then `outside_root` is set)"),
  line: z.number().int(),
  column: z.number().int(),
  end_line: z.number().int(),
  end_column: z.number().int(),
  text: z.string().optional(),
  outside_root: z.boolean().optional(),
});

export const diagnosticItemSchema = z.object({
  line: z.number().int(),
  column: z.number().int(),
  end_line: z.number().int(),
  end_column: z.number().int(),
  severity: z.enum(SEVERITIES),
  code: z.union([z.string(), z.number()]).optional(),
  source: z.string().optional(),
  message: z.string(),
});

export type Place = z.output<typeof placeSchema>;
export type DiagnosticItem = z.output<typeof diagnosticItemSchema>;

export function severityName(n: number | undefined): Severity {
  return SEVERITIES[(n ?? 1) - 1] ?? "error";
}

const MAX_LINE_TEXT = 200;
/** Bytes of a file read to find the lines of places in it (lines past them get no text). */
const LINE_LOOKUP_MAX_BYTES = 8 * 1024 * 1024;

/**
 * Reads line texts of files inside the root, once per file per call: the text the backend holds, or
 * the file's first bytes through the session's checked open (a regular file only, bounded).
 */
export class LineReader {
  readonly #cache = new Map<string, Promise<string[] | undefined>>();
  readonly #ctx: Pick<ToolContext, "openFile" | "limits">;
  readonly #backend: Backend | undefined;

  constructor(ctx: Pick<ToolContext, "openFile" | "limits">, backend?: Backend) {
    this.#ctx = ctx;
    this.#backend = backend;
  }

  /** Line `line` of the file whose real path (inside the root) is `real`; `named` as the server gave it. */
  async line(real: string, line: number, named: string = real): Promise<string | undefined> {
    let lines = this.#cache.get(real);
    if (!lines) {
      lines = (async () => {
        const synced = this.#backend?.text(named) ?? this.#backend?.text(real);
        if (synced !== undefined) return synced.split(/\r?\n/);
        try {
          const max = Math.min(this.#ctx.limits.fileMaxBytes, LINE_LOOKUP_MAX_BYTES);
          const read = await readProjectFile((p) => this.#ctx.openFile(p), real, real, max, { prefix: true });
          const all = read.text.split(/\r?\n/);
          // The last line of a prefix may be cut short: it is not shown.
          if (!read.complete) all.pop();
          return all;
        } catch {
          // Gone, not a regular file, refused: the place is listed without its text.
          return undefined;
        }
      })();
      this.#cache.set(real, lines);
    }
    const text = (await lines)?.[line - 1];
    if (text === undefined) return undefined;
    const trimmed = text.trim();
    return trimmed.length > MAX_LINE_TEXT ? `${trimmed.slice(0, MAX_LINE_TEXT)}…` : trimmed;
  }
}

/**
 * A root-relative display path, or the absolute path for files outside the root. Lexical: for paths a
 * walk of the root found; a place a server names goes through toPlace, which resolves it.
 */
export function displayPath(ctx: Pick<ToolContext, "root">, abs: string): { path: string; outside: boolean } {
  const rel = path.relative(ctx.root, abs);
  if (rel === "" || rel.startsWith("..") || path.isAbsolute(rel)) return { path: abs, outside: rel !== "" };
  return { path: rel.split(path.sep).join("/"), outside: false };
}

/**
 * A place a server named. It is inside the root only if its real path is (`ctx.resolve`, which
 * refuses a real path leaving the root): a file reached through a symlinked folder that leads out is
 * listed as outside the root, by the path the server gave, without text.
 */
export async function toPlace(
  ctx: Pick<ToolContext, "root" | "resolve">,
  uri: string,
  range: Range,
  lines: LineReader,
): Promise<Place> {
  const abs = fromUri(uri);
  let real: ResolvedPath | undefined;
  if (abs) {
    try {
      real = ctx.resolve(abs);
    } catch {
      // EPATH_ESCAPE (or a path that cannot be resolved): not a place inside the root.
      real = undefined;
    }
  }
  const place: Place = {
    path: abs ?? uri,
    line: range.start.line + 1,
    column: range.start.character + 1,
    end_line: range.end.line + 1,
    end_column: range.end.character + 1,
  };
  if (!abs || !real) {
    place.outside_root = true;
    return place;
  }
  // The path as the server named it when that is inside the root, else where it really is.
  const named = displayPath(ctx, abs);
  place.path = named.outside ? real.rel : named.path;
  const text = await lines.line(real.abs, place.line, abs);
  if (text !== undefined) place.text = text;
  return place;
}

/** Location | Location[] | LocationLink[] | null → uri + range pairs. */
export function locationsOf(result: unknown): Array<{ uri: string; range: Range }> {
  if (!result) return [];
  const list = Array.isArray(result) ? result : [result];
  const out: Array<{ uri: string; range: Range }> = [];
  for (const item of list as Array<Location | LocationLink>) {
    if ("targetUri" in item)
      out.push({ uri: item.targetUri, range: item.targetSelectionRange ?? item.targetRange });
    else if ("uri" in item) out.push({ uri: item.uri, range: item.range });
  }
  return out;
}

export function toDiagnosticItem(d: Diagnostic): DiagnosticItem {
  const item: DiagnosticItem = {
    line: d.range.start.line + 1,
    column: d.range.start.character + 1,
    end_line: d.range.end.line + 1,
    end_column: d.range.end.character + 1,
    severity: severityName(d.severity),
    message: typeof d.message === "string" ? d.message : d.message.value,
  };
  if (d.code !== undefined) item.code = typeof d.code === "object" ? String(d.code) : d.code;
  if (d.source) item.source = d.source;
  return item;
}

/** One line: `error TS2322 (col 14): message` with multi-line messages folded. */
export function diagnosticText(d: DiagnosticItem): string {
  const code =
    d.code === undefined ? "" : ` ${d.source === "typescript" || d.source === "ts" ? "TS" : ""}${d.code}`;
  const message = d.message.replace(/\s*\n\s*/g, " ⏎ ");
  return `${d.severity}${code} (col ${d.column}): ${message}`;
}

/** The sort order every listing uses: by path, then line, then column. */
export function byPlace<T extends { path: string; line: number; column: number }>(a: T, b: T): number {
  if (a.path !== b.path) return a.path < b.path ? -1 : 1;
  return a.line - b.line || a.column - b.column;
}
