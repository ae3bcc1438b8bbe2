import { closeSync, fstatSync, readSync } from "node:fs";
import { BudgetedWorker, openForReadSync } from "@toolbelt/core/internal";
import { sniffBom } from "../text-decode.js";
import { makeOverride, TreeWalk } from "../walk.js";
import { decodeResponse, ENCODING_CODE, type MatchResponse, matchProgram } from "./match-program.js";
import type { CompiledQuery } from "./regex.js";
import { type EngineResult, type LineMatch, type SearchProgress, TopFiles } from "./results.js";

export type JsSearch = {
  root: string;
  /** Absolute real path of the directory or file to search. */
  start: string;
  isFile: boolean;
  /** Root-relative form of `start` when it is a file. */
  fileRel?: string;
  query: CompiledQuery;
  include?: string;
  maxMatches: number;
  /** The allowlist: a file with matches it refuses is counted in `skipped`, not kept. */
  admit?: (rel: string) => boolean;
  signal?: AbortSignal;
  /** Told the totals found so far after each batch the worker answered with matches. */
  onProgress?: (found: SearchProgress) => void;
};

const inProcess = matchProgram();

/**
 * Searches one file's bytes on this thread; undefined when it is binary (a NUL byte), as ripgrep
 * skips it. For tests and trusted callers: the tool runs the same matching in the search worker.
 */
export function searchBuffer(buf: Buffer, query: CompiledQuery): LineMatch[] | undefined {
  const bom = sniffBom(buf);
  const encoding = bom.encoding === "utf-8-bom" ? "utf-8" : bom.encoding;
  const data = buf.subarray(bom.length);
  const [result] = decodeResponse(
    inProcess({ query: query.spec, data, files: [0, data.length, ENCODING_CODE[encoding]] }),
  );
  return result ?? undefined;
}

/** Bytes read first: a NUL in them marks a binary file, whose rest is never read. */
const HEAD_BYTES = 64 * 1024;

/**
 * Reads the file open on `fd` (and closes it), except that a binary one (a NUL byte in its first
 * 64 KiB, ripgrep's tell too) is given up after that first read: installed trees hold executables of
 * 100 MB and more. Only a regular file is read: the descriptor was opened O_NONBLOCK, and a FIFO, a
 * socket or a device swapped in for the file since it was listed is skipped, never waited on.
 * Synchronous on purpose: per-file promise round trips through the thread pool cost more than
 * the reads themselves on page-cached trees; the caller yields between short slices instead.
 */
function readUnlessBinary(fd: number): Buffer | undefined {
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return undefined;
    // Read until EOF into one scratch buffer reused across files (allocating per file made the
    // walk GC-bound). A file that has given its whole size is done without the read that would say
    // EOF; one whose size says 0 (some file systems) is read until EOF.
    const size = stat.size;
    let filled = readSync(fd, scratch, 0, Math.min(HEAD_BYTES, scratch.length), 0);
    if (filled === 0) return scratch.subarray(0, 0);
    const bom = sniffBom(scratch.subarray(0, filled));
    const utf16 = bom.encoding === "utf-16le" || bom.encoding === "utf-16be";
    if (!utf16 && scratch.subarray(0, filled).indexOf(0) !== -1) return undefined;
    while (size === 0 || filled < size) {
      if (filled === scratch.length) {
        const bigger = Buffer.allocUnsafe(scratch.length * 2);
        scratch.copy(bigger, 0, 0, filled);
        scratch = bigger;
      }
      const read = readSync(fd, scratch, filled, scratch.length - filled, filled);
      if (read === 0) break;
      filled += read;
    }
    const view = scratch.subarray(0, filled);
    // Give a huge buffer back to the GC rather than holding it for the life of the process.
    if (scratch.length > SCRATCH_KEEP) scratch = Buffer.allocUnsafe(SCRATCH_KEEP);
    return view;
  } finally {
    closeSync(fd);
  }
}

const SCRATCH_KEEP = 4 * 1024 * 1024;
let scratch = Buffer.allocUnsafe(1024 * 1024);

/** Text handed to the worker per request: big enough to amortise the hand-off, small enough to budget. */
const BATCH_BYTES = 1024 * 1024;
/** Requests in flight: one being matched while the next is read, so both cores work. */
const MAX_IN_FLIGHT = 2;
/** Main-thread slice between yields to the event loop (as the walker's). */
const SLICE_MS = 8;

/**
 * The regex budget of one request: generous for any pattern that runs in linear or near-linear time
 * (irregexp does hundreds of MB/s), hopeless for catastrophic backtracking.
 */
export const SEARCH_BUDGET_BASE_MS = 2000;
export const SEARCH_BUDGET_PER_MIB_MS = 1000;

export function searchBudgetMs(bytes: number): number {
  return SEARCH_BUDGET_BASE_MS + Math.ceil((bytes / (1024 * 1024)) * SEARCH_BUDGET_PER_MIB_MS);
}

let worker: BudgetedWorker | undefined;

type Batch = { buf: Buffer; used: number; rels: string[]; files: number[] };

function newBatch(atLeast = 0): Batch {
  // Its own ArrayBuffer (never Node's shared pool), so it can be moved into the worker.
  return { buf: Buffer.allocUnsafeSlow(Math.max(BATCH_BYTES, atLeast)), used: 0, rels: [], files: [] };
}

const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

function kib(bytes: number): string {
  return bytes < 1024 * 1024 ? `${Math.ceil(bytes / 1024)} KiB` : `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

/**
 * The JS engine: the shared walker lists files, this thread reads them (and drops those without the
 * required literal), and the regex matching runs in a worker under a time budget, so no pattern can
 * hold the event loop or outlive its budget.
 */
export async function searchWithJs(search: JsSearch): Promise<EngineResult> {
  // The walk yields files in comparePaths order, so once the kept set is settled no file still to
  // read can get in: the search stops there, and its answer is the one ripgrep's full run gives.
  const top = new TopFiles(search.maxMatches, search.admit);
  let stop = false;
  let failure: unknown;
  worker ??= new BudgetedWorker(`(${String(matchProgram)})()`);
  const matcher = worker;
  const inFlight: Array<Promise<void>> = [];
  let batch = newBatch();
  const found: SearchProgress = { files: 0, matches: 0 };

  const finish = (): EngineResult => {
    return { ...top.result(), skipped: top.skipped };
  };

  const send = (b: Batch): Promise<void> => {
    const data = new Uint8Array(b.buf.buffer, b.buf.byteOffset, b.used);
    const budgetMs = searchBudgetMs(b.used);
    const shown = b.rels.slice(0, 3).join(", ") + (b.rels.length > 3 ? `, … (${b.rels.length} files)` : "");
    return matcher
      .run<MatchResponse>(
        { query: search.query.spec, data, files: b.files },
        {
          budgetMs,
          timeoutMessage: `the regex did not finish within its budget of ${budgetMs} ms (${SEARCH_BUDGET_BASE_MS} ms + ${SEARCH_BUDGET_PER_MIB_MS} ms per MiB) over ${kib(b.used)} of text in ${shown}: it backtracks catastrophically (nested quantifiers such as (a+)+, overlapping alternatives such as (a|aa)+, or a repeated group of .*). Rewrite it without the nesting, or use the ripgrep engine, whose matching is linear`,
          transfer: [b.buf.buffer as ArrayBuffer],
          ...(search.signal ? { signal: search.signal } : {}),
        },
      )
      .then((response) => {
        const results = decodeResponse(response);
        // Every result is offered, even after the stop: a batch answered late may hold files
        // that sort before the ones kept so far.
        const before = found.files;
        results.forEach((matches, i) => {
          if (!matches?.length) return;
          const rel = b.rels[i] as string;
          top.offer({ path: rel, matches });
          if (search.admit && !search.admit(rel)) return;
          found.files += 1;
          found.matches += matches.length;
        });
        if (found.files !== before) search.onProgress?.({ ...found });
        if (top.settled) stop = true;
      })
      .catch((error: unknown) => {
        failure ??= error;
        stop = true;
      });
  };

  const flush = () => {
    if (batch.rels.length === 0) return;
    inFlight.push(send(batch));
    batch = newBatch();
  };

  /** `open` opens the file race-free (see TreeWalk and openForReadSync); any failure skips it. */
  const addFile = (open: () => number, rel: string) => {
    let buf: Buffer | undefined;
    try {
      buf = readUnlessBinary(open());
    } catch {
      return;
    }
    if (!buf) return;
    const bom = sniffBom(buf);
    const encoding = bom.encoding === "utf-8-bom" ? "utf-8" : bom.encoding;
    const literal = search.query.literal;
    // A file without the literal every match needs cannot match: it never leaves this thread.
    if (literal && encoding === "utf-8" && buf.indexOf(literal, bom.length) === -1) return;
    const length = buf.length - bom.length;
    if (batch.used > 0 && batch.used + length > batch.buf.length) flush();
    if (length > batch.buf.length) batch = newBatch(length);
    buf.copy(batch.buf, batch.used, bom.length);
    batch.files.push(batch.used, batch.used + length, ENCODING_CODE[encoding]);
    batch.rels.push(rel);
    batch.used += length;
    if (batch.used >= BATCH_BYTES) flush();
  };

  if (search.isFile) {
    // The file's directory checked and the file opened in it, as read_file opens one.
    addFile(() => openForReadSync(search.start, { root: search.root }), search.fileRel ?? search.start);
  } else {
    // Each file is read as soon as the walk gives it, while its directory is still held open: the walk
    // lists a directory through its descriptor and the file is opened by name inside it.
    const walk = new TreeWalk({
      root: search.root,
      start: search.start,
      ...(search.include ? { override: makeOverride(search.include) } : {}),
    });
    try {
      let walked = false;
      while (!stop && !walked) {
        search.signal?.throwIfAborted();
        const sliceEnd = performance.now() + SLICE_MS;
        while (!stop && inFlight.length < MAX_IN_FLIGHT) {
          const file = walk.next();
          if (file === undefined) {
            walked = true;
            break;
          }
          if (file !== null) addFile(() => file.dir.openFile(file.name), file.rel);
          if (performance.now() > sliceEnd) break;
        }
        if (inFlight.length >= MAX_IN_FLIGHT) await inFlight.shift();
        else if (!walked) await yieldToLoop();
      }
    } finally {
      walk.close();
    }
    if (!stop && !failure) flush();
    await Promise.all(inFlight);
    if (failure) throw failure;
    return finish();
  }
  flush();
  await Promise.all(inFlight);
  if (failure) throw failure;
  return finish();
}
