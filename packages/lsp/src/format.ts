import { promises as fs } from "node:fs";
import path from "node:path";
import type { ToolContext } from "@toolbelt/core";
import type { Diagnostic, Location, LocationLink, Range } from "vscode-languageserver-protocol";
import type { Backend } from "./manager.js";
import { fromUri } from "./uri.js";

/** A place in a file, 1-based, with the text of its line when the file is inside the root. */
export type Place = {
  /** Root-relative, or absolute when outside the root (then `outside_root` is set). */
  path: string;
  line: number;
  column: number;
  end_line: number;
  end_column: number;
  text?: string;
  outside_root?: boolean;
};

export type DiagnosticItem = {
  line: number;
  column: number;
  end_line: number;
  end_column: number;
  severity: Severity;
  code?: string | number;
  source?: string;
  message: string;
};

export const SEVERITIES = ["error", "warning", "info", "hint"] as const;
export type Severity = (typeof SEVERITIES)[number];

export function severityName(n: number | undefined): Severity {
  return SEVERITIES[(n ?? 1) - 1] ?? "error";
}

const MAX_LINE_TEXT = 200;

/** Reads line texts of files inside the root, once per file per call. */
export class LineReader {
  readonly #cache = new Map<string, Promise<string[] | undefined>>();
  readonly #backend: Backend | undefined;

  constructor(backend?: Backend) {
    this.#backend = backend;
  }

  async line(abs: string, line: number): Promise<string | undefined> {
    let lines = this.#cache.get(abs);
    if (!lines) {
      lines = (async () => {
        const synced = this.#backend?.text(abs);
        if (synced !== undefined) return synced.split(/\r?\n/);
        try {
          return (await fs.readFile(abs, "utf8")).split(/\r?\n/);
        } catch {
          return undefined;
        }
      })();
      this.#cache.set(abs, lines);
    }
    const text = (await lines)?.[line - 1];
    if (text === undefined) return undefined;
    const trimmed = text.trim();
    return trimmed.length > MAX_LINE_TEXT ? `${trimmed.slice(0, MAX_LINE_TEXT)}…` : trimmed;
  }
}

/** A root-relative display path, or the absolute path for files outside the root. */
export function displayPath(ctx: Pick<ToolContext, "root">, abs: string): { path: string; outside: boolean } {
  const rel = path.relative(ctx.root, abs);
  if (rel === "" || rel.startsWith("..") || path.isAbsolute(rel)) return { path: abs, outside: rel !== "" };
  return { path: rel.split(path.sep).join("/"), outside: false };
}

export async function toPlace(
  ctx: Pick<ToolContext, "root">,
  uri: string,
  range: Range,
  lines: LineReader,
): Promise<Place> {
  const abs = fromUri(uri);
  const where = abs ? displayPath(ctx, abs) : { path: uri, outside: true };
  const place: Place = {
    path: where.path,
    line: range.start.line + 1,
    column: range.start.character + 1,
    end_line: range.end.line + 1,
    end_column: range.end.character + 1,
  };
  if (where.outside) place.outside_root = true;
  else if (abs) {
    const text = await lines.line(abs, place.line);
    if (text !== undefined) place.text = text;
  }
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
