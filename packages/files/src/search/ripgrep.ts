import { spawn } from "node:child_process";
import { ToolbeltError } from "@toolbelt/core";
import { type EngineResult, type FileMatches, TopFiles } from "./results.js";

export type RipgrepSearch = {
  rg: string;
  /** The root: ripgrep runs there, so override globs and reported paths are root-relative. */
  cwd: string;
  /** Root-relative path to search (`.` for the root). */
  target: string;
  query: string;
  include?: string;
  maxMatches: number;
  /** The allowlist: a file with matches it refuses is counted in `skipped`, not kept. */
  admit?: (rel: string) => boolean;
  signal?: AbortSignal;
};

/** JSON lines longer than this (a match inside a huge minified line) are dropped, not buffered. */
const MAX_JSON_LINE = 8 * 1024 * 1024;

/** The flags that give ripgrep the walk semantics documented in walk.ts. */
export function ripgrepArgs(search: Pick<RipgrepSearch, "target" | "query" | "include">): string[] {
  const args = [
    "--no-config",
    "--json",
    "--hidden",
    "--no-require-git",
    "--no-ignore-global",
    "--glob",
    "!.git",
  ];
  if (search.include) args.push("--iglob", search.include);
  args.push("--regexp", search.query, "--", search.target);
  return args;
}

type RgMessage = {
  type: string;
  data: {
    path?: { text?: string; bytes?: string };
    lines?: { text?: string; bytes?: string };
    line_number?: number;
    binary_offset?: number | null;
  };
};

function textOf(field: { text?: string; bytes?: string } | undefined): string {
  if (!field) return "";
  if (field.text !== undefined) return field.text;
  return Buffer.from(field.bytes ?? "", "base64").toString("utf8");
}

function normalisePath(p: string): string {
  return p.startsWith("./") ? p.slice(2) : p;
}

function stripEol(line: string): string {
  if (line.endsWith("\r\n")) return line.slice(0, -2);
  if (line.endsWith("\n")) return line.slice(0, -1);
  return line;
}

/** Bytes before the first letter of the message type in every `--json` line: `{"type":"`. */
const TYPE_AT = 9;
const TYPE_PREFIX = Buffer.from('{"type":"');
const B = 0x62; // begin
const M = 0x6d; // match
const E = 0x65; // end

const LINES_TEXT = Buffer.from('"lines":{"text":"');
const LINE_NUMBER = Buffer.from('"line_number":');

/**
 * A match line's number and text without parsing the whole message (its path and submatches are
 * not needed, and parsing them dominated a search with many matches). JSON escapes every quote
 * inside a string, so the first unescaped `"lines":{"text":"` is the field itself. Undefined for
 * anything else (text given as base64 `bytes`), which is then parsed in full.
 */
function matchFields(buf: Buffer, from: number, to: number): { line: number; text: string } | undefined {
  const at = buf.indexOf(LINES_TEXT, from);
  if (at === -1 || at >= to) return undefined;
  const open = at + LINES_TEXT.length - 1;
  let close = open + 1;
  while (true) {
    close = buf.indexOf(0x22, close);
    if (close === -1 || close >= to) return undefined;
    let slashes = 0;
    while (buf[close - 1 - slashes] === 0x5c) slashes++;
    if (slashes % 2 === 0) break;
    close++;
  }
  const numAt = buf.indexOf(LINE_NUMBER, close);
  if (numAt === -1 || numAt >= to) return undefined;
  let line = 0;
  for (let i = numAt + LINE_NUMBER.length; i < to; i++) {
    const d = (buf[i] as number) - 48;
    if (d < 0 || d > 9) break;
    line = line * 10 + d;
  }
  let text: string;
  try {
    text = JSON.parse(buf.toString("utf8", open, close + 1)) as string;
  } catch {
    return undefined;
  }
  return { line, text: stripEol(text) };
}

/**
 * Runs ripgrep with --json over the whole target and hands each file's matches to a TopFiles, so
 * the capped answer does not depend on which of ripgrep's threads finished first. ripgrep writes
 * each file's messages together, so the decision taken at a file's `begin` holds for its lines:
 * a file the kept set cannot take is skipped by looking at one byte per line, never parsed.
 * Files ripgrep found binary are dropped.
 */
export function searchWithRipgrep(search: RipgrepSearch): Promise<EngineResult> {
  const top = new TopFiles(search.maxMatches, search.admit);
  return new Promise((resolve, reject) => {
    const child = spawn(search.rg, ripgrepArgs(search), {
      cwd: search.cwd,
      stdio: ["ignore", "pipe", "pipe"],
      signal: search.signal,
    });
    let current: FileMatches | undefined;
    let stderr = "";
    let partial: Buffer[] = [];
    let partialBytes = 0;
    let oversized = false;
    const parse = (buf: Buffer, from: number, to: number): RgMessage | undefined => {
      try {
        return JSON.parse(buf.toString("utf8", from, to)) as RgMessage;
      } catch {
        return undefined;
      }
    };
    const onLine = (buf: Buffer, from: number, to: number) => {
      if (to - from <= TYPE_AT) return;
      let kind = buf[from + TYPE_AT];
      if (buf.compare(TYPE_PREFIX, 0, TYPE_AT, from, from + TYPE_AT) !== 0) {
        // Not the key order ripgrep writes today: fall back to reading the type.
        const type = parse(buf, from, to)?.type;
        kind = type === "begin" ? B : type === "match" ? M : type === "end" ? E : undefined;
      }
      if (kind === B) {
        const msg = parse(buf, from, to);
        const rel = normalisePath(textOf(msg?.data.path));
        current = top.wants(rel) ? { path: rel, matches: [] } : undefined;
      } else if (kind === M && current) {
        if (current.matches.length >= top.perFile) {
          top.markMore();
          return;
        }
        const fast = matchFields(buf, from, to);
        if (fast) {
          current.matches.push(fast);
          return;
        }
        const msg = parse(buf, from, to);
        if (msg?.type === "match")
          current.matches.push({ line: msg.data.line_number ?? 0, text: stripEol(textOf(msg.data.lines)) });
      } else if (kind === E && current) {
        const msg = parse(buf, from, to);
        // ripgrep reports matches found before it saw a NUL byte; a binary file is skipped whole.
        if (msg?.type === "end" && msg.data.binary_offset == null) top.offer(current);
        current = undefined;
      }
    };
    child.stdout.on("data", (chunk: Buffer) => {
      let start = 0;
      while (start < chunk.length) {
        const nl = chunk.indexOf(10, start);
        const end = nl === -1 ? chunk.length : nl;
        if (nl !== -1 && partialBytes === 0 && !oversized) {
          // The whole line is in this chunk: no copy.
          onLine(chunk, start, end);
          start = nl + 1;
          continue;
        }
        if (!oversized) {
          partialBytes += end - start;
          if (partialBytes > MAX_JSON_LINE) {
            oversized = true;
            partial = [];
          } else partial.push(chunk.subarray(start, end));
        }
        if (nl === -1) break;
        if (!oversized) {
          const line = Buffer.concat(partial);
          onLine(line, 0, line.length);
        }
        partial = [];
        partialBytes = 0;
        oversized = false;
        start = nl + 1;
      }
    });
    child.stderr.on("data", (chunk: Buffer) => {
      if (stderr.length < 64 * 1024) stderr += chunk.toString("utf8");
    });
    child.on("error", (error) => {
      if ((error as Error).name === "AbortError") reject(error);
      else reject(new ToolbeltError("EUNAVAILABLE", `ripgrep failed to start: ${error.message}`));
    });
    child.on("close", (code) => {
      if (code === 2 && /regex parse error|error parsing|regex could not be compiled/i.test(stderr)) {
        reject(
          new ToolbeltError(
            "EINVAL_INPUT",
            `invalid regex ${JSON.stringify(search.query)}: ${stderr.trim()}`,
            {
              details: { field: "query" },
            },
          ),
        );
        return;
      }
      const result = { ...top.result(), skipped: top.skipped };
      if (code === 2 && /glob|--iglob/i.test(stderr) && result.files.length === 0) {
        reject(
          new ToolbeltError("EINVAL_INPUT", `invalid include glob: ${stderr.trim()}`, {
            details: { field: "include" },
          }),
        );
        return;
      }
      if (code !== 0 && code !== 1 && code !== 2) {
        reject(new ToolbeltError("EINTERNAL", `ripgrep exited with ${code}: ${stderr.trim().slice(0, 500)}`));
        return;
      }
      resolve(result);
    });
  });
}
