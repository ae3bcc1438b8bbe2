import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { ToolbeltError } from "@toolbelt/core";
import { trackProcessGroup, untrackProcessGroup } from "@toolbelt/core/internal";

/**
 * PDF text extraction with pdf.js (through `unpdf`, which bundles a build of it that needs no worker,
 * no canvas and nothing downloaded). A PDF is a program as much as a document: a few kilobytes can
 * inflate to gigabytes, a page can hold millions of operators, a parser bug can crash its process. So
 * pdf.js never runs in toolbelt's own process: each read starts a Node process that reads the bytes on
 * stdin, parses them and writes one JSON line per page on fd 3. That process is killed when it runs
 * out of time (`pdfTimeoutMs`) or memory (`pdfMaxMemoryBytes`: its JavaScript heap by V8's own
 * limit, and, on Linux, its resident memory, which counts the decompressed buffers the heap limit
 * does not), and whatever it does, the session goes on. unpdf is loaded only there, so a read of
 * anything else never loads it.
 */

/** What to extract: pages `first`..`last` (1-based, inclusive), stopping at `maxBytes` of text. */
export interface PdfRequest {
  first: number;
  last: number;
  maxBytes: number;
}

export interface PdfPage {
  page: number;
  /** The page's text (lines as pdf.js ends them); absent when the page could not be read. */
  text?: string;
  /** Set when the text was cut at the byte budget: the page's whole length in characters. */
  chars?: number;
  /** Why the page could not be read. */
  error?: string;
}

export interface PdfExtract {
  /** Pages the document has; undefined when it could not be opened before the bound. */
  total: number | undefined;
  pages: PdfPage[];
  /** Why extraction ended: every page asked for, the byte budget, or a bound that killed it. */
  ended: "done" | "bytes" | "time" | "memory";
  /** With `bytes`: the first page left out. */
  nextPage?: number;
}

export interface PdfBounds {
  timeoutMs: number;
  maxMemoryBytes: number;
  signal: AbortSignal;
}

/** Bytes a page's section costs besides its text (`# Page: N`, the blank lines around it). */
const SECTION_OVERHEAD = 24;

// Run by `node --input-type=module -e`: imports resolve from its working directory, the files
// package's own, where `unpdf` is installed. Font data and system fonts are not used (only text is
// wanted), fonts are never compiled with eval, and pdf.js's console output goes to stdout, which is
// not read: the answer travels on fd 3 alone.
const PROGRAM = String.raw`
import { writeSync } from "node:fs";
const { first, last, maxBytes, overhead } = JSON.parse(process.argv[1]);
const send = (message) => {
  const bytes = Buffer.from(JSON.stringify(message) + "\n");
  for (let at = 0; at < bytes.length; ) at += writeSync(3, bytes, at);
};
const reason = (error) => String((error && error.message) || error);
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const data = new Uint8Array(Buffer.concat(chunks));
let unpdf;
try {
  unpdf = await import("unpdf");
} catch (error) {
  send({ failure: "unavailable", message: reason(error) });
  process.exit(0);
}
let doc;
try {
  doc = await unpdf.getDocumentProxy(data, {
    isEvalSupported: false,
    useSystemFonts: false,
    disableFontFace: true,
    stopAtErrors: false,
    verbosity: 0,
  });
} catch (error) {
  send({ failure: error && error.name === "PasswordException" ? "password" : "invalid", message: reason(error) });
  process.exit(0);
}
send({ total: doc.numPages });
let left = maxBytes;
const end = Math.min(last, doc.numPages);
for (let n = first; n <= end; n++) {
  let text;
  try {
    const page = await doc.getPage(n);
    const content = await page.getTextContent();
    text = content.items
      .map((item) => (typeof item.str === "string" ? item.str + (item.hasEOL ? "\n" : "") : ""))
      .join("")
      .trimEnd();
    page.cleanup();
  } catch (error) {
    send({ page: n, error: reason(error) });
    continue;
  }
  const size = Buffer.byteLength(text) + overhead;
  if (size > left && n > first) {
    send({ stop: "bytes", page: n });
    process.exit(0);
  }
  if (size > left) {
    // The window's first page alone is over the budget: cut at the last whole character that fits.
    const bytes = Buffer.from(text);
    let cut = Math.max(0, left - overhead);
    while (cut > 0 && (bytes[cut] & 0xc0) === 0x80) cut--;
    send({ page: n, text: bytes.subarray(0, cut).toString("utf8"), chars: text.length });
    left = 0;
    continue;
  }
  send({ page: n, text });
  left -= size;
}
send({ done: true });
process.exit(0);
`;

/** Where `unpdf` resolves from: this package's directory (src/ or dist/ alike sit one level down). */
const PACKAGE_DIR = fileURLToPath(new URL("..", import.meta.url));

/** How often the parsing process's resident memory is looked at (Linux). */
const MEMORY_POLL_MS = 25;

/** Its stderr kept for an error message (the tail: where a crash says why). */
const STDERR_KEEP = 4096;

type Message =
  | { failure: "unavailable" | "password" | "invalid"; message: string }
  | { total: number }
  | { page: number; text?: string; chars?: number; error?: string }
  | { stop: "bytes"; page: number }
  | { done: true };

/** Resident memory of `pid` in bytes (Linux), or undefined where it cannot be read. */
function residentBytes(pid: number): number | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "latin1");
    const kb = /^VmRSS:\s+(\d+) kB/m.exec(status)?.[1];
    return kb === undefined ? undefined : Number(kb) * 1024;
  } catch {
    return undefined;
  }
}

/** Whether PDFs can be parsed in this runtime: the parsing process is Node's. */
function nodeRuntime(): boolean {
  const versions = process.versions as Record<string, string | undefined>;
  return versions.deno === undefined && versions.bun === undefined && process.release?.name === "node";
}

/**
 * Extracts the text of pages `first`..`last` of `bytes`. Throws EENCRYPTED (a password is needed),
 * EMALFORMED (not a PDF pdf.js can open), EUNAVAILABLE (no parser), ETIMEOUT / ETOO_LARGE when a
 * bound killed the parse before any page came out, ECANCELLED when the call was cancelled. A bound
 * reached after some pages answers those pages, with `ended` saying which bound.
 */
export function extractPdf(
  bytes: Uint8Array,
  request: PdfRequest,
  bounds: PdfBounds,
  rel: string,
): Promise<PdfExtract> {
  if (!nodeRuntime())
    return Promise.reject(
      new ToolbeltError(
        "EUNAVAILABLE",
        `reading PDFs (${rel}) runs pdf.js in a Node process; this runtime is not Node`,
      ),
    );
  if (bounds.signal.aborted) return Promise.reject(new ToolbeltError("ECANCELLED", "the call was cancelled"));
  const heapMb = Math.max(64, Math.floor(bounds.maxMemoryBytes / (1024 * 1024)));
  const child = spawn(
    process.execPath,
    [
      `--max-old-space-size=${heapMb}`,
      "--input-type=module",
      "-e",
      PROGRAM,
      JSON.stringify({ ...request, overhead: SECTION_OVERHEAD }),
    ],
    // Nothing of the user's environment: NODE_OPTIONS and the like have no say over the parser.
    { cwd: PACKAGE_DIR, env: {}, stdio: ["pipe", "ignore", "pipe", "pipe"], detached: true },
  );
  const pid = child.pid;
  if (pid !== undefined) trackProcessGroup(pid);
  return new Promise<PdfExtract>((resolve, reject) => {
    const result: PdfExtract = { total: undefined, pages: [], ended: "done" };
    let failure: { failure: string; message: string } | undefined;
    let killedFor: "time" | "memory" | "cancel" | "output" | undefined;
    let finished = false;
    let stderr = "";
    let buffered = "";
    let received = 0;
    // The answer is at most the byte budget plus one JSON line per page; anything past that is a fault.
    const maxOutput = request.maxBytes * 2 + (request.last - request.first + 16) * 256;
    const kill = (why: typeof killedFor) => {
      killedFor ??= why;
      try {
        process.kill(-(pid as number), "SIGKILL");
      } catch {
        child.kill("SIGKILL");
      }
    };
    const timer = setTimeout(() => kill("time"), bounds.timeoutMs);
    const poll =
      process.platform === "linux" && pid !== undefined
        ? setInterval(() => {
            const rss = residentBytes(pid);
            if (rss !== undefined && rss > bounds.maxMemoryBytes) kill("memory");
          }, MEMORY_POLL_MS)
        : undefined;
    const onAbort = () => kill("cancel");
    bounds.signal.addEventListener("abort", onAbort, { once: true });

    const take = (line: string) => {
      if (line === "") return;
      let message: Message;
      try {
        message = JSON.parse(line) as Message;
      } catch {
        return kill("output");
      }
      if ("failure" in message) failure = message;
      else if ("total" in message) result.total = message.total;
      else if ("stop" in message) {
        result.ended = "bytes";
        result.nextPage = message.page;
      } else if ("page" in message) {
        const page: PdfPage = { page: message.page };
        if (message.text !== undefined) page.text = message.text;
        if (message.chars !== undefined) page.chars = message.chars;
        if (message.error !== undefined) page.error = message.error;
        result.pages.push(page);
      } else if ("done" in message) finished = true;
    };
    const answer = child.stdio[3] as NodeJS.ReadableStream;
    answer.setEncoding("utf8");
    answer.on("data", (chunk: string) => {
      received += chunk.length;
      if (received > maxOutput) return kill("output");
      buffered += chunk;
      let nl = buffered.indexOf("\n");
      while (nl !== -1) {
        take(buffered.slice(0, nl));
        buffered = buffered.slice(nl + 1);
        nl = buffered.indexOf("\n");
      }
    });
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => {
      stderr = (stderr + chunk).slice(-STDERR_KEEP);
    });
    child.stdin?.on("error", () => {
      // The process ended before reading everything (killed, or failed to start): 'close' says why.
    });
    child.stdin?.end(bytes);

    child.on("error", (error) => {
      settle();
      reject(
        new ToolbeltError("EUNAVAILABLE", `could not start the PDF parser for ${rel}: ${error.message}`),
      );
    });
    child.on("close", (code, signal) => {
      if (!settle()) return;
      if (killedFor === "cancel") return reject(new ToolbeltError("ECANCELLED", "the call was cancelled"));
      if (failure) return reject(failureError(failure, rel));
      const heapOut = /heap out of memory|Allocation failed/i.test(stderr);
      const bound = killedFor === "time" ? "time" : killedFor === "memory" || heapOut ? "memory" : undefined;
      if (bound) {
        if (result.pages.length > 0 && result.total !== undefined) {
          result.ended = bound;
          return resolve(result);
        }
        const at =
          result.total === undefined ? "opening it" : `reading page ${result.pages.length + request.first}`;
        return reject(boundError(bound, bounds, rel, at));
      }
      if (killedFor === "output")
        return reject(new ToolbeltError("EINTERNAL", `the PDF parser wrote more than expected for ${rel}`));
      if (!finished && result.ended !== "bytes") {
        const why = stderr.trim().split("\n").slice(-3).join(" ").slice(0, 500);
        return reject(
          new ToolbeltError(
            "EINTERNAL",
            `the PDF parser stopped on ${rel} (${signal ?? `exit code ${code}`})${why ? `: ${why}` : ""}`,
          ),
        );
      }
      resolve(result);
    });

    let settled = false;
    function settle(): boolean {
      if (settled) return false;
      settled = true;
      clearTimeout(timer);
      if (poll) clearInterval(poll);
      bounds.signal.removeEventListener("abort", onAbort);
      if (pid !== undefined) untrackProcessGroup(pid);
      return true;
    }
  });
}

function failureError(failure: { failure: string; message: string }, rel: string): ToolbeltError {
  if (failure.failure === "password")
    return new ToolbeltError(
      "EENCRYPTED",
      `${rel} is encrypted and needs a password to be read; read_file takes none (decrypt a copy first, e.g. \`qpdf --decrypt --password=… in.pdf out.pdf\`)`,
      { details: { path: rel } },
    );
  if (failure.failure === "unavailable")
    return new ToolbeltError(
      "EUNAVAILABLE",
      `reading PDFs needs the unpdf package (a dependency of @toolbelt/files), which could not be loaded: ${failure.message}`,
      { details: { path: rel } },
    );
  return new ToolbeltError("EMALFORMED", `${rel} is not a PDF that can be read: ${failure.message}`, {
    details: { path: rel },
  });
}

function boundError(bound: "time" | "memory", bounds: PdfBounds, rel: string, where: string): ToolbeltError {
  if (bound === "time")
    return new ToolbeltError(
      "ETIMEOUT",
      `${rel}: parsing stopped at limits.pdfTimeoutMs (${bounds.timeoutMs} ms) while ${where}; the PDF is too costly to parse (or hostile)`,
      { details: { path: rel, limit: bounds.timeoutMs } },
    );
  return new ToolbeltError(
    "ETOO_LARGE",
    `${rel}: parsing stopped at limits.pdfMaxMemoryBytes (${bounds.maxMemoryBytes} bytes) while ${where}; the PDF inflates to more than that (or is hostile)`,
    { details: { path: rel, limit: bounds.maxMemoryBytes } },
  );
}
