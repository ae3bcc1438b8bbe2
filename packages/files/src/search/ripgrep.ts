import { spawn } from "node:child_process";
import { ToolbeltError } from "@toolbelt/core";
import { collectionBound, type EngineResult, type FileMatches } from "./results.js";

export type RipgrepSearch = {
  rg: string;
  /** The root: ripgrep runs there, so override globs and reported paths are root-relative. */
  cwd: string;
  /** Root-relative path to search (`.` for the root). */
  target: string;
  query: string;
  include?: string;
  maxMatches: number;
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

/** Runs ripgrep with --json and collects matches per file; files ripgrep found binary are dropped. */
export function searchWithRipgrep(search: RipgrepSearch): Promise<EngineResult> {
  const bound = collectionBound(search.maxMatches);
  return new Promise((resolve, reject) => {
    const child = spawn(search.rg, ripgrepArgs(search), {
      cwd: search.cwd,
      stdio: ["ignore", "pipe", "pipe"],
      signal: search.signal,
    });
    const files: FileMatches[] = [];
    let current: FileMatches | undefined;
    let total = 0;
    let stoppedEarly = false;
    let stderr = "";
    let partial: Buffer[] = [];
    let partialBytes = 0;
    let oversized = false;

    const onLine = (line: string) => {
      if (stoppedEarly || line.length === 0) return;
      let msg: RgMessage;
      try {
        msg = JSON.parse(line) as RgMessage;
      } catch {
        return;
      }
      if (msg.type === "begin") {
        current = { path: normalisePath(textOf(msg.data.path)), matches: [] };
      } else if (msg.type === "match" && current) {
        current.matches.push({ line: msg.data.line_number ?? 0, text: stripEol(textOf(msg.data.lines)) });
      } else if (msg.type === "end" && current) {
        // ripgrep reports matches found before it saw a NUL byte; a binary file is skipped whole.
        if (msg.data.binary_offset == null && current.matches.length > 0) {
          files.push(current);
          total += current.matches.length;
          if (total >= bound) {
            stoppedEarly = true;
            child.kill();
          }
        }
        current = undefined;
      }
    };

    child.stdout.on("data", (chunk: Buffer) => {
      let start = 0;
      while (start < chunk.length) {
        const nl = chunk.indexOf(10, start);
        const end = nl === -1 ? chunk.length : nl;
        if (!oversized) {
          partialBytes += end - start;
          if (partialBytes > MAX_JSON_LINE) {
            oversized = true;
            partial = [];
          } else partial.push(chunk.subarray(start, end));
        }
        if (nl === -1) break;
        if (!oversized) onLine(Buffer.concat(partial).toString("utf8"));
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
      if (stoppedEarly) return resolve({ files, stoppedEarly });
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
      if (code === 2 && /glob|--iglob/i.test(stderr) && files.length === 0) {
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
      resolve({ files, stoppedEarly });
    });
  });
}
