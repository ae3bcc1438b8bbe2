import { isAscii } from "node:buffer";
import { spawn } from "node:child_process";
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import path from "node:path";
import { ToolbeltError } from "@toolbelt/core";
import { comparePaths } from "../tree-order.js";
import {
  type EngineResult,
  type FileMatches,
  type LineMatch,
  type SearchProgress,
  TopFiles,
} from "./results.js";

/** The process to start for one ripgrep run (the session's wrapper may put it in a sandbox). */
export type RipgrepCommand = {
  file: string;
  args: string[];
  env?: Record<string, string | undefined>;
  /** The wrapper confined it (see CommandSpec.confined): a sandbox that fails to start is then told apart. */
  confined?: true;
};

export type RipgrepSearch = {
  rg: string;
  /** Turns ripgrep's arguments into the command to start; default: `rg` itself, unwrapped. */
  launch?: (args: string[]) => RipgrepCommand;
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
  /** Read every match from `--json`, never plain output: the reference the plain reading is tested against. */
  jsonOnly?: boolean;
  /** Told the totals found so far while the count pass streams (each batch of its output). */
  onProgress?: (found: SearchProgress) => void;
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

/** The ignore files ripgrep reads in the search path's every ancestor (walk.ts honours the same). */
const IGNORE_FILES = [".rgignore", ".ignore", ".gitignore", ".git/info/exclude"];

/**
 * The ignore files ripgrep may read above `root` (absolute, real): it reads each ancestor's, from the
 * filesystem root down. A sandbox confining ripgrep to the root grants reading these (those that exist).
 */
export function ignoreFilesAbove(root: string): string[] {
  const out: string[] = [];
  let dir = path.dirname(root);
  for (let prev = root; dir !== prev; prev = dir, dir = path.dirname(dir))
    for (const name of IGNORE_FILES) out.push(path.join(dir, name));
  return out;
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

/** Receives ripgrep's stdout a line at a time (without its LF). */
type LineSink = {
  line(buf: Buffer, from: number, to: number): void;
  /** A line past `maxLine` bytes: only its first bytes are handed over, never the whole line. */
  oversized?(head: Buffer): void;
};

/** Bytes of an oversized line's start handed to `oversized` (room for the path before it). */
const OVERSIZED_HEAD = 64 * 1024;

/** The sandbox helper around ripgrep could not set it up (it exits 125; ripgrep itself never does). */
export class SearchSandboxError extends Error {
  override name = "SearchSandboxError";
}

/** Exit code of the sandbox helper when it could not set the command up. */
const SANDBOX_SETUP_FAILED = 125;

/** Starts one ripgrep run through `search.launch`. */
function startRipgrep(search: RipgrepSearch, args: string[]) {
  const command = search.launch ? search.launch(args) : { file: search.rg, args };
  const child = spawn(command.file, command.args, {
    cwd: search.cwd,
    ...(command.env ? { env: command.env } : {}),
    stdio: ["ignore", "pipe", "pipe"],
    signal: search.signal,
  });
  return { child, confined: command.confined === true };
}

function sandboxFailed(confined: boolean, code: number | null, stderr: string): boolean {
  return confined && code === SANDBOX_SETUP_FAILED && /toolbelt-sandbox/.test(stderr);
}

/**
 * Spawns ripgrep and splits its stdout into lines without copying those that arrive whole in one
 * chunk. Resolves with the exit code and the start of stderr, whatever the code: callers word errors.
 */
function runRipgrep(
  search: RipgrepSearch,
  args: string[],
  sink: LineSink,
  maxLine: number,
): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const { child, confined } = startRipgrep(search, args);
    let stderr = "";
    let partial: Buffer[] = [];
    let partialBytes = 0;
    let oversized = false;
    child.stdout.on("data", (chunk: Buffer) => {
      let start = 0;
      while (start < chunk.length) {
        const nl = chunk.indexOf(10, start);
        const end = nl === -1 ? chunk.length : nl;
        if (nl !== -1 && partialBytes === 0) {
          // The whole line is in this chunk: no copy.
          if (end - start <= maxLine) sink.line(chunk, start, end);
          else sink.oversized?.(chunk.subarray(start, Math.min(end, start + OVERSIZED_HEAD)));
          start = nl + 1;
          continue;
        }
        const had = partialBytes;
        partialBytes += end - start;
        if (!oversized) {
          if (partialBytes > maxLine) {
            oversized = true;
            const head = Buffer.concat(partial);
            partial = [
              head.length >= OVERSIZED_HEAD ? head : Buffer.concat([head, chunk.subarray(start, end)]),
            ];
          } else partial.push(chunk.subarray(start, end));
        } else if (had < OVERSIZED_HEAD) partial.push(chunk.subarray(start, end));
        if (nl === -1) break;
        const line = Buffer.concat(partial);
        if (oversized) sink.oversized?.(line.subarray(0, OVERSIZED_HEAD));
        else sink.line(line, 0, line.length);
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
      if (sandboxFailed(confined, code, stderr))
        reject(new SearchSandboxError(`the search sandbox did not start: ${stderr.trim().slice(0, 500)}`));
      else resolve({ code, stderr });
    });
  });
}

/**
 * Runs ripgrep with --json and hands each file's matches to `top`. ripgrep writes each file's
 * messages together, so the decision taken at a file's `begin` holds for its lines: a file the
 * kept set cannot take is skipped by looking at one byte per line, never parsed. Files ripgrep
 * found binary are dropped.
 */
async function jsonPass(search: RipgrepSearch, args: string[], top: TopFiles): Promise<void> {
  let current: FileMatches | undefined;
  const parse = (buf: Buffer, from: number, to: number): RgMessage | undefined => {
    try {
      return JSON.parse(buf.toString("utf8", from, to)) as RgMessage;
    } catch {
      return undefined;
    }
  };
  const line = (buf: Buffer, from: number, to: number) => {
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
  const { code, stderr } = await runRipgrep(search, args, { line }, MAX_JSON_LINE);
  await checkExit(search, code, stderr);
}

/**
 * Turns ripgrep's exit into the error a caller can act on. Exit 2 is also what a file ripgrep could
 * not read gives (permission denied: a file the sandbox refuses, a name swapped for a symlink): such
 * a file is just skipped. Whether the 2 came from the query instead is asked of ripgrep itself, on
 * empty input, never read from this run's stderr, where file names (anyone's) are printed too.
 */
async function checkExit(search: RipgrepSearch, code: number | null, stderr: string): Promise<void> {
  if (code === 2) await checkQuery(search);
  if (code !== 0 && code !== 1 && code !== 2) {
    throw new ToolbeltError("EINTERNAL", `ripgrep exited with ${code}: ${stderr.trim().slice(0, 500)}`);
  }
}

const checkedQueries = new WeakMap<RipgrepSearch, Promise<void>>();

/** Throws EINVAL_INPUT when ripgrep refuses the query or the include glob (asked once per search). */
function checkQuery(search: RipgrepSearch): Promise<void> {
  let checked = checkedQueries.get(search);
  if (!checked) {
    checked = (async () => {
      const regex = await ripgrepOnEmptyInput(search, ["--regexp", search.query]);
      if (regex.code === 2)
        throw new ToolbeltError(
          "EINVAL_INPUT",
          `invalid regex ${JSON.stringify(search.query)}: ${regex.stderr.trim()}`,
          { details: { field: "query" } },
        );
      if (search.include === undefined) return;
      const glob = await ripgrepOnEmptyInput(search, ["--iglob", search.include, "--regexp", "x"]);
      if (glob.code === 2)
        throw new ToolbeltError("EINVAL_INPUT", `invalid include glob: ${glob.stderr.trim()}`, {
          details: { field: "include" },
        });
    })();
    checkedQueries.set(search, checked);
  }
  return checked;
}

/** ripgrep with `args` over empty standard input: exit 2 means the arguments themselves are refused. */
function ripgrepOnEmptyInput(
  search: RipgrepSearch,
  args: string[],
): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(search.rg, ["--no-config", ...args, "-"], {
      cwd: search.cwd,
      stdio: ["ignore", "ignore", "pipe"],
      signal: search.signal,
    });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      if (stderr.length < 64 * 1024) stderr += chunk.toString("utf8");
    });
    child.on("error", (error) => {
      if ((error as Error).name === "AbortError") reject(error);
      else reject(new ToolbeltError("EUNAVAILABLE", `ripgrep failed to start: ${error.message}`));
    });
    child.on("close", (code) => resolve({ code, stderr }));
  });
}

/**
 * A plain-output line longer than this sends its file to a JSON pass instead. Its JSON message is
 * at most about 64 bytes per byte of line (escapes, plus a submatch object per possible match), so
 * below this it stays under MAX_JSON_LINE, which the JSON pass drops at: both read the same lines.
 */
const PLAIN_LINE_MAX = 96 * 1024;

/** ripgrep's line for a file it was handed by name and found binary: `path: binary file matches …`. */
const BINARY_NOTICE =
  /: (?:binary file matches|WARNING: stopped searching binary file after match) \(found "\\0" byte around offset \d+\)$/;

/**
 * ripgrep's plain output for named files, `path NUL line-number : text LF` (`--null
 * --line-number --no-heading`): a quarter of the bytes of `--json`, and read without a JSON parse.
 * Only for batches whose names hold no LF and are UTF-8 (the count pass checked), so every output
 * line is one record. Whatever the JSON pass would read differently goes to it: a file with a line
 * too long to be sure of (`redo`), and one whose last match ends in CR without the file ending in
 * LF (a CR at the very end of a file, which plain output cannot tell from CRLF). Anything
 * unexpected (a name not asked for, a file's lines not together, an unknown line) answers
 * undefined, and the caller reads the whole batch as JSON. Nothing reaches `top` from here.
 */
async function plainPass(
  search: RipgrepSearch,
  args: string[],
  batch: Counted[],
  perFile: number,
): Promise<{ files: FileMatches[]; redo: Counted[]; more: boolean } | undefined> {
  const byName = new Map(batch.map((c) => [c.printed, c]));
  type Collected = {
    counted: Counted;
    matches: LineMatch[];
    endsInCr: boolean;
    redo: boolean;
    binary: boolean;
  };
  const seen = new Map<string, Collected>();
  let current: Collected | undefined;
  let currentName: Buffer | undefined;
  // Most output is ASCII: such a chunk is decoded once and each line's text sliced from it (a
  // decode per line cost more than the rest of the parse).
  let chunk: Buffer | undefined;
  let chunkText: string | undefined;
  let more = false;
  let surprise = false;
  const open = (name: string): Collected | undefined => {
    const counted = byName.get(name);
    if (!counted || seen.has(name)) return undefined;
    const entry: Collected = { counted, matches: [], endsInCr: false, redo: false, binary: false };
    seen.set(name, entry);
    return entry;
  };
  const line = (buf: Buffer, from: number, to: number) => {
    if (surprise) return;
    const nul = buf.indexOf(0, from);
    if (nul === -1 || nul >= to) {
      const notice = BINARY_NOTICE.exec(buf.toString("utf8", from, to));
      const name = notice ? buf.toString("utf8", from, from + notice.index) : undefined;
      // A binary file is dropped whole, as the JSON pass drops one with a binary offset.
      const entry = name === undefined ? undefined : (seen.get(name) ?? open(name));
      if (entry) {
        entry.binary = true;
        entry.matches = [];
      } else surprise = true;
      // Lines of the same file may follow: they belong to the entry, which keeps none of them.
      current = entry;
      currentName = name === undefined ? undefined : Buffer.from(name, "utf8");
      return;
    }
    if (!current || !currentName || !sameBytes(currentName, buf, from, nul)) {
      current = open(buf.toString("utf8", from, nul));
      if (!current) {
        surprise = true;
        return;
      }
      currentName = Buffer.from(buf.subarray(from, nul));
    }
    if (current.binary || current.redo) return;
    let at = nul + 1;
    let lineNumber = 0;
    for (; at < to; at++) {
      const d = (buf[at] as number) - 48;
      if (d < 0 || d > 9) break;
      lineNumber = lineNumber * 10 + d;
    }
    if (at === nul + 1 || buf[at] !== 0x3a) {
      surprise = true;
      return;
    }
    if (current.matches.length >= perFile) {
      more = true;
      return;
    }
    const cr = to > at + 1 && buf[to - 1] === 0x0d;
    current.endsInCr = cr;
    if (buf !== chunk) {
      chunk = buf;
      chunkText = isAscii(buf) ? buf.toString("latin1") : undefined;
    }
    const end = cr ? to - 1 : to;
    const text = chunkText !== undefined ? chunkText.slice(at + 1, end) : buf.toString("utf8", at + 1, end);
    current.matches.push({ line: lineNumber, text });
  };
  const oversized = (head: Buffer) => {
    if (surprise) return;
    const nul = head.indexOf(0);
    const name = nul === -1 ? undefined : head.toString("utf8", 0, nul);
    const entry = name === undefined ? undefined : (seen.get(name) ?? open(name));
    if (!entry) surprise = true;
    else entry.redo = true;
    // The file's other lines still follow: the JSON pass reads them all again.
    current = entry;
    currentName = entry ? Buffer.from(head.subarray(0, nul)) : undefined;
  };
  const { code, stderr } = await runRipgrep(search, args, { line, oversized }, PLAIN_LINE_MAX);
  if (surprise) return undefined;
  await checkExit(search, code, stderr);
  const files: FileMatches[] = [];
  const redo: Counted[] = [];
  for (const entry of seen.values()) {
    if (entry.binary) continue;
    if (entry.redo || (entry.endsInCr && !endsInLf(path.join(search.cwd, entry.counted.printed))))
      redo.push(entry.counted);
    else files.push({ path: entry.counted.rel, matches: entry.matches });
  }
  return { files, redo, more };
}

/** Whether `name` holds the bytes of `buf` from `from` to `to` (a short loop beats Buffer#compare). */
function sameBytes(name: Buffer, buf: Buffer, from: number, to: number): boolean {
  if (name.length !== to - from) return false;
  for (let i = 0; i < name.length; i++) if (name[i] !== buf[from + i]) return false;
  return true;
}

/**
 * Whether a regular file's last byte is LF (then every line of it ended in LF, and a match line
 * printed with CR before the LF ended in CRLF). False when unsure: not a regular file, unreadable.
 */
function endsInLf(abs: string): boolean {
  let fd: number | undefined;
  try {
    // Non-blocking: a name that became a FIFO since ripgrep read it must not hang the search.
    fd = openSync(abs, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
    const st = fstatSync(fd);
    if (!st.isFile() || st.size === 0) return false;
    const last = Buffer.alloc(1);
    return readSync(fd, last, 0, 1, st.size - 1) === 1 && last[0] === 0x0a;
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Past this much `--count` output the two-pass search gives way to one full JSON pass. */
const COUNT_OUTPUT_MAX = 16 * 1024 * 1024;
/** Bytes of paths handed to one JSON pass (argument lists are bounded by the OS). */
const PATHS_PER_PASS_BYTES = 96 * 1024;

type Counted = { printed: string; rel: string; count: number };

/**
 * Reads `path NUL count LF` records as they stream, across chunk boundaries, and reports the totals
 * after each chunk that completed one. A name holds any byte but NUL, so the NUL ends it; the count
 * is digits up to the LF. A name is decoded only when an allowlist must judge it.
 */
function countTally(search: RipgrepSearch, report: (found: SearchProgress) => void): (chunk: Buffer) => void {
  const found: SearchProgress = { files: 0, matches: 0 };
  let name: Buffer[] = [];
  let inCount = false;
  let count = 0;
  return (chunk) => {
    const before = found.files;
    let at = 0;
    while (at < chunk.length) {
      if (!inCount) {
        const nul = chunk.indexOf(0, at);
        if (search.admit) name.push(chunk.subarray(at, nul === -1 ? chunk.length : nul));
        if (nul === -1) break;
        inCount = true;
        at = nul + 1;
        continue;
      }
      const nl = chunk.indexOf(10, at);
      const end = nl === -1 ? chunk.length : nl;
      for (let i = at; i < end; i++) count = count * 10 + ((chunk[i] as number) - 48);
      if (nl === -1) break;
      if (!search.admit || search.admit(normalisePath(Buffer.concat(name).toString("utf8")))) {
        found.files += 1;
        found.matches += count;
      }
      name = [];
      count = 0;
      inCount = false;
      at = nl + 1;
    }
    if (found.files !== before) report({ ...found });
  };
}

/**
 * Which files match and how many lines each, from `rg --count --null` (`path NUL count LF`, so
 * any byte may be in a name). Undefined when the listing is too large or a name is not UTF-8
 * (it could not be passed back as an argument): the caller then runs one full JSON pass.
 */
async function countPass(search: RipgrepSearch): Promise<Counted[] | undefined> {
  const args = ripgrepArgs(search).map((a) => (a === "--json" ? "--count" : a));
  // --with-filename: a single file's count is printed without its name otherwise.
  args.splice(args.indexOf("--count") + 1, 0, "--null", "--with-filename");
  const run = await new Promise<{ code: number | null; out: Buffer | undefined }>((resolve, reject) => {
    const { child, confined } = startRipgrep(search, args);
    const chunks: Buffer[] = [];
    let bytes = 0;
    let tooLarge = false;
    let stderr = "";
    const tally = search.onProgress ? countTally(search, search.onProgress) : undefined;
    child.stdout.on("data", (chunk: Buffer) => {
      tally?.(chunk);
      bytes += chunk.length;
      if (bytes > COUNT_OUTPUT_MAX) {
        tooLarge = true;
        child.kill();
      } else chunks.push(chunk);
    });
    child.stderr.on("data", (chunk: Buffer) => {
      if (stderr.length < 64 * 1024) stderr += chunk.toString("utf8");
    });
    child.on("error", (error) => {
      if ((error as Error).name === "AbortError") reject(error);
      else reject(new ToolbeltError("EUNAVAILABLE", `ripgrep failed to start: ${error.message}`));
    });
    child.on("close", (code) => {
      if (sandboxFailed(confined, code, stderr))
        return reject(
          new SearchSandboxError(`the search sandbox did not start: ${stderr.trim().slice(0, 500)}`),
        );
      resolve({ code, out: tooLarge ? undefined : Buffer.concat(chunks) });
    });
  });
  // Exit 1: nothing matched. Exit 2: the query is refused (thrown here), or files could not be read
  // (they are skipped; the counts of the others hold). Anything else: the JSON pass says what.
  if (run.code === 2) await checkQuery(search);
  const out = run.out;
  if (!out || (run.code !== 0 && run.code !== 1 && run.code !== 2)) return undefined;
  const counted: Counted[] = [];
  let at = 0;
  while (at < out.length) {
    const nul = out.indexOf(0, at);
    const nl = nul === -1 ? -1 : out.indexOf(10, nul);
    // Not the shape asked for: trust nothing of it and read everything as JSON instead.
    if (nul === -1 || nl === -1) return undefined;
    const name = out.subarray(at, nul);
    const printed = name.toString("utf8");
    if (!Buffer.from(printed, "utf8").equals(name)) return undefined;
    counted.push({
      printed,
      rel: normalisePath(printed),
      count: Number(out.toString("latin1", nul + 1, nl)),
    });
    at = nl + 1;
  }
  return counted;
}

/**
 * The ripgrep engine, in two passes: `rg --count` lists the matching files and their match
 * counts (output a line per file, however many lines match), then `rg --json` reads matches only
 * from the first files in comparePaths order, as many as the cap needs and one more match to know
 * it cuts. The answer does not depend on which of ripgrep's threads finished first, and a capped
 * search of a common word costs about a count, not the JSON of every match.
 */
export async function searchWithRipgrep(search: RipgrepSearch): Promise<EngineResult> {
  const top = new TopFiles(search.maxMatches, search.admit);
  const counted = await countPass(search);
  if (!counted) {
    await jsonPass(search, ripgrepArgs(search), top);
    return { ...top.result(), skipped: top.skipped };
  }
  if (counted.length === 0) return { ...top.result(), skipped: 0 };
  const admitted = counted.filter((c) => top.wants(c.rel)).sort((a, b) => comparePaths(a.rel, b.rel));
  // Explicit paths: ignore rules and the include glob were applied by the count pass.
  const base = ripgrepArgs({ target: ".", query: search.query }).slice(0, -1);
  const plainBase = base.flatMap((a) =>
    a === "--json" ? ["--null", "--line-number", "--no-heading", "--with-filename", "--color=never"] : [a],
  );
  let next = 0;
  while (next < admitted.length && !top.settled) {
    const batch: Counted[] = [];
    let sum = 0;
    let bytes = 0;
    while (
      next < admitted.length &&
      (batch.length === 0 || (sum <= search.maxMatches && bytes < PATHS_PER_PASS_BYTES))
    ) {
      const c = admitted[next++] as Counted;
      batch.push(c);
      sum += c.count;
      bytes += c.printed.length + 1;
    }
    // A name with LF would make plain output ambiguous (it is one record per line).
    const plain =
      search.jsonOnly || batch.some((c) => c.printed.includes("\n"))
        ? undefined
        : await plainPass(search, [...plainBase, ...batch.map((c) => c.printed)], batch, top.perFile);
    if (!plain) {
      await jsonPass(search, [...base, ...batch.map((c) => c.printed)], top);
      continue;
    }
    if (plain.more) top.markMore();
    for (const file of plain.files) top.offer(file);
    if (plain.redo.length) await jsonPass(search, [...base, ...plain.redo.map((c) => c.printed)], top);
  }
  if (next < admitted.length) top.markMore();
  return { ...top.result(), skipped: top.skipped };
}
