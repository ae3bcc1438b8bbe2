// What a tool card says: the one-line summary and the expanded body, worked out from whatever the
// result carries. Payload shapes differ between families and versions, so every field is probed and
// the model-facing text (read back with parseToolText) fills in what the payload does not say.
import { type CountHeader, type ParsedToolText, parseToolText, type TreeEntry } from "@toolbelt/core";
import type { Json, ToolCard } from "./model.js";

export type CardFamily = "read" | "list" | "search" | "edit" | "write" | "shell" | "other";

export type Tone = "pending" | "ok" | "warn" | "error";

export type DiffLine = { kind: "add" | "del" | "hunk" | "meta" | "ctx"; text: string };

export type DirGroup = { dir: string; entries: TreeEntry[] };

export type CardBody =
  | { type: "pending" }
  | { type: "error"; code: string; message: string }
  | { type: "text"; text: string }
  | { type: "image"; src: string; mime: string }
  | { type: "tree"; groups: DirGroup[]; matches: boolean; empty: string }
  | { type: "diff"; lines: DiffLine[] }
  | { type: "written"; content: string }
  | { type: "shell"; output: string; exitCode?: number; shellId?: string; live?: string }
  | { type: "raw"; text: string };

function isRecord(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function pick(obj: unknown, ...keys: string[]): unknown {
  if (!isRecord(obj)) return undefined;
  for (const key of keys) if (obj[key] !== undefined && obj[key] !== null) return obj[key];
  return undefined;
}

function pickString(obj: unknown, ...keys: string[]): string | undefined {
  if (!isRecord(obj)) return undefined;
  for (const key of keys) if (typeof obj[key] === "string") return obj[key] as string;
  return undefined;
}

function pickNumber(obj: unknown, ...keys: string[]): number | undefined {
  if (!isRecord(obj)) return undefined;
  for (const key of keys) if (typeof obj[key] === "number") return obj[key] as number;
  return undefined;
}

/** Which kind of tool a card is, from the payload kind first and the tool's name second. */
export function cardFamily(card: ToolCard): CardFamily {
  const kind = typeof card.result?.kind === "string" ? card.result.kind : "";
  if (/^(file_list|dir_list)$/.test(kind)) return "list";
  if (kind === "search_results") return "search";
  const name = card.tool.toLowerCase();
  // tool_search finds tools, not text: it is not a search card.
  if (name === "tool_search") return "other";
  if (/read_file|file_read|^read$|view_file/.test(name)) return "read";
  if (/list_files|list_dir|^ls$|glob/.test(name)) return "list";
  if (/search_files|grep|search_code|find_in_files/.test(name)) return "search";
  if (/write_file|file_write|create_file|^write$/.test(name)) return "write";
  if (/edit|replace|patch/.test(name)) return "edit";
  if (/shell|bash|exec|command|terminal/.test(name)) return "shell";
  return "other";
}

// Every render asks again; a listing's text can be large, so each card's parse is kept.
const parseCache = new WeakMap<ToolCard, { text: string; parsed: ParsedToolText }>();

/** The model-facing text read back, with the tree kind supplied when a tree tool's text omits it. */
export function parsedText(card: ToolCard): ParsedToolText | undefined {
  if (card.text === undefined) return undefined;
  const cached = parseCache.get(card);
  if (cached && cached.text === card.text) return cached.parsed;
  let parsed = parseToolText(card.text);
  const family = cardFamily(card);
  if (!parsed.entries && !parsed.error && (family === "list" || family === "search")) {
    const kind = family === "search" ? "search_results" : "file_list";
    parsed = {
      ...parseToolText(`# Kind: ${kind}\n${card.text}`),
      ...(parsed.kind ? { kind: parsed.kind } : {}),
    };
  }
  parseCache.set(card, { text: card.text, parsed });
  return parsed;
}

/** The path (or pattern, or command) a card is about, from its input, then its result. */
export function cardSubject(card: ToolCard): string | undefined {
  const input = card.input;
  const family = cardFamily(card);
  if (family === "shell") {
    const command = pick(input, "command", "cmd", "script", "input");
    // Whole: the card escapes it, so a second line is shown rather than dropped.
    if (typeof command === "string") return command;
    if (Array.isArray(command)) return command.map(String).join(" ");
  }
  if (family === "search") {
    const query = pickString(input, "query", "pattern", "regex");
    const where = pickString(input, "path", "include", "dir");
    if (query !== undefined) return where ? `/${query}/ in ${where}` : `/${query}/`;
  }
  if (family === "list") {
    const pattern = pickString(input, "pattern", "path", "dir", "directory", "glob");
    if (pattern !== undefined) return pattern;
  }
  const path = pickString(input, "path", "file", "file_path", "filePath", "filename", "target");
  if (path !== undefined) return path;
  const fromResult = pickString(card.result, "relPath", "rel_path", "path", "file");
  if (fromResult !== undefined) return fromResult;
  const first = isRecord(input) ? Object.values(input).find((v) => typeof v === "string") : undefined;
  return typeof first === "string" ? first.split("\n")[0] : undefined;
}

const COUNT_KEYS = ["Count", "Matches", "Entries", "Files", "Results", "Total", "Items"];

function unitFor(key: string, family: CardFamily): string {
  if (key === "Count" || key === "Total" || key === "Entries")
    return family === "search" ? "matches" : family === "list" ? "files" : "items";
  return key.toLowerCase();
}

/**
 * `200 matches (capped at 200)`: a count that says when it stopped counting. When a second limit
 * (`/ 1048576 chars`) stopped it short of the first, that limit is the one named.
 */
export function formatCount(count: CountHeader, unit: string): string {
  if (!count.capped) return `${count.count} ${unit}`;
  const cap = count.cap ?? count.count;
  const other = (count.capDetail ?? "")
    .replace(new RegExp(`^${unit}\\b\\s*`), "")
    .replace(/^\/\s*/, "")
    .trim();
  const limit = other && count.count < cap ? other : String(cap);
  return `${count.count} ${unit} (capped at ${limit})`;
}

function countsFromText(parsed: ParsedToolText, family: CardFamily): string | undefined {
  const keys = COUNT_KEYS.filter((k) => parsed.counts[k]);
  if (keys.length === 0) {
    if (!parsed.totals) return undefined;
    const unit = family === "search" ? "matches" : "files";
    const n = family === "search" ? parsed.totals.matches : parsed.totals.files;
    const truncated = Object.entries(parsed.headers).some(
      ([k, v]) => /truncat|capped/i.test(k) && !/^(false|no|0)$/i.test(v.trim()),
    );
    return `${n} ${unit}${truncated ? " (truncated)" : ""}`;
  }
  // A search states its matches first and the files they sit in second.
  const primary = keys.includes("Matches") ? "Matches" : (keys[0] as string);
  const parts = [formatCount(parsed.counts[primary] as CountHeader, unitFor(primary, family))];
  const files = parsed.counts.Files;
  if (primary === "Matches" && files) parts.push(`in ${formatCount(files, "files")}`);
  return parts.join(" ");
}

function countsFromPayload(result: Json, family: CardFamily): string | undefined {
  const entries = Array.isArray(result.entries) ? (result.entries as unknown[]) : undefined;
  const capped = pick(result, "capped", "truncated") === true;
  const cap = pickNumber(result, "cap", "max_matches", "max_entries", "limit", "max");
  if (family === "search") {
    const matches =
      pickNumber(result, "matches", "match_count", "matchCount", "total_matches", "totalMatches", "count") ??
      entries?.reduce<number>(
        (n, e) =>
          n + (isRecord(e) && Array.isArray(e.matches) ? e.matches.filter((m) => !m?.context).length : 0),
        0,
      );
    if (matches === undefined) return undefined;
    return formatCount({ count: matches, capped, ...(cap !== undefined ? { cap } : {}) }, "matches");
  }
  const count = pickNumber(result, "count", "total", "entry_count") ?? entries?.length;
  if (count === undefined) return undefined;
  return formatCount(
    { count, capped, ...(cap !== undefined ? { cap } : {}) },
    family === "list" ? "files" : "items",
  );
}

/** A short human size: `12.3 KB`. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

function diffOf(card: ToolCard): string | undefined {
  const fromPayload = pickString(card.result, "diff", "patch", "unified_diff", "unifiedDiff");
  if (fromPayload) return fromPayload;
  const body = parsedText(card)?.body;
  if (body && /^(@@ |--- |\+\+\+ )/m.test(body)) return body;
  return undefined;
}

export function diffLines(diff: string): DiffLine[] {
  return diff
    .replace(/\n$/, "")
    .split("\n")
    .map((text) => {
      if (text.startsWith("+++") || text.startsWith("---") || /^(diff |index )/.test(text))
        return { kind: "meta", text };
      if (text.startsWith("@@")) return { kind: "hunk", text };
      if (text.startsWith("+")) return { kind: "add", text };
      if (text.startsWith("-")) return { kind: "del", text };
      return { kind: "ctx", text };
    });
}

function shellExitCode(card: ToolCard): number | undefined {
  const fromPayload = pickNumber(card.result, "exit_code", "exitCode", "code", "status");
  if (fromPayload !== undefined) return fromPayload;
  const headers = parsedText(card)?.headers ?? {};
  for (const key of ["Exit-Code", "Exit code", "Exit", "Exit-Status", "Status"]) {
    const value = headers[key];
    if (value !== undefined && /^-?\d+$/.test(value.trim())) return Number(value.trim());
  }
  return undefined;
}

function shellId(card: ToolCard): string | undefined {
  const fromPayload = pickString(card.result, "shell_id", "shellId", "session_id", "sessionId", "id");
  if (fromPayload) return fromPayload;
  const headers = parsedText(card)?.headers ?? {};
  return headers["Shell-Id"] ?? headers.Shell ?? headers["Session-Id"];
}

/** Where a shell's streamed output lives: its own shell id, or the call id for a foreground stream. */
export function shellOutput(card: ToolCard, shells: Record<string, string>): { id?: string; live?: string } {
  const id = shellId(card);
  if (id !== undefined && shells[id] !== undefined) return { id, live: shells[id] };
  if (shells[card.id] !== undefined) return { id: card.id, live: shells[card.id] };
  return id !== undefined ? { id } : {};
}

function isBackground(card: ToolCard): boolean {
  const kind = String(card.result?.kind ?? "");
  return (
    /background|started|running/.test(kind) ||
    pick(card.input, "background", "run_in_background", "detach") === true ||
    pick(card.result, "running", "background") === true
  );
}

export type Outcome = { text: string; tone: Tone };

/** The outcome half of the summary line. */
export function cardOutcome(card: ToolCard, shells: Record<string, string> = {}): Outcome {
  const result = card.result;
  if (!result) return { text: "running…", tone: "pending" };
  const parsed = parsedText(card);
  if (result.kind === "error" || parsed?.error) {
    const code = pickString(result, "code") ?? parsed?.error?.code ?? "ERROR";
    const message = pickString(result, "message") ?? parsed?.error?.message ?? "";
    return { text: `${code}: ${message.split("\n")[0] ?? ""}`, tone: "error" };
  }
  const family = cardFamily(card);
  const counts =
    (parsed && countsFromText(parsed, family)) ??
    (family === "list" || family === "search" ? countsFromPayload(result, family) : undefined);
  if (counts) return { text: counts, tone: /capped|truncated/.test(counts) ? "warn" : "ok" };
  switch (family) {
    case "read": {
      if (/unchanged/.test(String(result.kind))) return { text: "unchanged since the last read", tone: "ok" };
      const image = imageOf(card);
      if (image) {
        const bytes = pickNumber(result, "size", "bytes");
        return { text: `${image.mime}${bytes !== undefined ? `, ${formatBytes(bytes)}` : ""}`, tone: "ok" };
      }
      const headers = parsed?.headers ?? {};
      const truncated =
        pick(result, "truncated") === true ||
        /^yes/i.test(headers.Truncated ?? "") ||
        /\(truncated/.test(card.text ?? "");
      const suffix = truncated ? " (truncated)" : "";
      const tone: Tone = truncated ? "warn" : "ok";
      if (headers.Lines) return { text: `lines ${headers.Lines}${suffix}`, tone };
      const total = pickNumber(result, "total_lines", "totalLines", "lines");
      if (total !== undefined) return { text: `${total} lines${suffix}`, tone };
      return { text: truncated ? "truncated" : "read", tone };
    }
    case "write": {
      const headers = parsed?.headers ?? {};
      const created = pick(result, "created");
      const verb =
        created === true
          ? "created"
          : created === false
            ? "overwritten"
            : (pickString(result, "result", "action", "status") ?? headers.Result ?? "written");
      const lines = pickNumber(result, "lines");
      const chars = pickNumber(result, "chars");
      const bytes =
        pickNumber(result, "bytes", "size") ?? (headers.Bytes ? Number(headers.Bytes) : undefined);
      const size =
        lines !== undefined
          ? `${lines} lines`
          : chars !== undefined
            ? `${chars} chars`
            : bytes !== undefined && Number.isFinite(bytes)
              ? formatBytes(bytes)
              : "";
      return { text: size ? `${verb}, ${size}` : verb, tone: "ok" };
    }
    case "edit": {
      const diff = diffOf(card);
      if (!diff) return { text: String(result.kind), tone: "ok" };
      const lines = diffLines(diff);
      const add = lines.filter((l) => l.kind === "add").length;
      const del = lines.filter((l) => l.kind === "del").length;
      return { text: `+${add} −${del}`, tone: "ok" };
    }
    case "shell": {
      const exit = shellExitCode(card);
      const headers = parsed?.headers ?? {};
      const timedOut = pick(result, "timed_out") === true || headers["Timed-Out"] !== undefined;
      if (timedOut) return { text: `timed out${exit !== undefined ? `, exit ${exit}` : ""}`, tone: "error" };
      if (exit !== undefined) return { text: `exit ${exit}`, tone: exit === 0 ? "ok" : "error" };
      const signal = pickString(result, "signal") ?? headers.Signal;
      if (signal) return { text: `ended by ${signal}`, tone: "error" };
      if (isBackground(card)) {
        const { id } = shellOutput(card, shells);
        return { text: `running in background${id ? ` (${id})` : ""}`, tone: "pending" };
      }
      return { text: String(result.kind), tone: "ok" };
    }
    default: {
      const todos = pick(card.input, "todos");
      if (Array.isArray(todos)) {
        const done = todos.filter((t) => isRecord(t) && t.status === "completed").length;
        return { text: `${todos.length} todos, ${done} done`, tone: "ok" };
      }
      return { text: String(result.kind), tone: "ok" };
    }
  }
}

/** `tool · subject · outcome`, the collapsed card. */
export function cardSummary(card: ToolCard, shells: Record<string, string> = {}): string {
  const subject = cardSubject(card);
  return [card.tool, subject, cardOutcome(card, shells).text].filter(Boolean).join(" · ");
}

const IMAGE_MIME = /^image\/(png|jpeg|gif|webp|bmp|x-icon|vnd\.microsoft\.icon)$/;

function imageOf(card: ToolCard): { src: string; mime: string } | undefined {
  const result = card.result;
  const mime = pickString(result, "mime", "mimeType", "mime_type", "media_type", "mediaType");
  const data = pickString(result, "base64", "data");
  // Only raster types: an SVG is a document, and the data must be plain base64.
  if (!mime || !data || !IMAGE_MIME.test(mime) || !/^[A-Za-z0-9+/=\s]+$/.test(data)) return undefined;
  return { src: `data:${mime};base64,${data.replace(/\s/g, "")}`, mime };
}

function treeEntries(card: ToolCard): TreeEntry[] | undefined {
  const raw = card.result?.entries;
  if (Array.isArray(raw) && raw.every((e) => isRecord(e) && typeof e.path === "string")) {
    return (raw as Json[]).map((e) => ({
      path: e.path as string,
      ...(typeof e.note === "string" ? { note: e.note } : {}),
      ...(Array.isArray(e.matches)
        ? {
            matches: e.matches.filter(isRecord).map((m) => ({
              line: typeof m.line === "number" ? m.line : 0,
              text: typeof m.text === "string" ? m.text : "",
              ...(m.context === true ? { context: true } : {}),
            })),
          }
        : {}),
    }));
  }
  return parsedText(card)?.entries;
}

/** Entries grouped under their directory, directories in path order (`.` for the root). */
export function groupByDirectory(entries: TreeEntry[]): DirGroup[] {
  const groups = new Map<string, TreeEntry[]>();
  for (const entry of entries) {
    const slash = entry.path.lastIndexOf("/");
    const dir = slash < 0 ? "." : entry.path.slice(0, slash);
    let list = groups.get(dir);
    if (!list) {
      list = [];
      groups.set(dir, list);
    }
    list.push(entry);
  }
  return [...groups.entries()]
    .sort(([a], [b]) => (a === "." ? -1 : b === "." ? 1 : a < b ? -1 : a > b ? 1 : 0))
    .map(([dir, list]) => ({ dir, entries: list }));
}

function bodyText(card: ToolCard): string | undefined {
  const parsed = parsedText(card);
  if (parsed && parsed.body.trim() !== "") return parsed.body;
  return pickString(card.result, "content", "text", "output", "body", "message");
}

/** What the expanded card shows. */
export function cardBody(card: ToolCard, shells: Record<string, string> = {}): CardBody {
  const result = card.result;
  const family = cardFamily(card);
  const writtenContent = pickString(card.input, "content", "text", "data", "contents");
  if (!result) {
    if (family === "shell") {
      const { id, live } = shellOutput(card, shells);
      if (live !== undefined) return { type: "shell", output: "", live, ...(id ? { shellId: id } : {}) };
    }
    if (family === "write" && writtenContent !== undefined)
      return { type: "written", content: writtenContent };
    return { type: "pending" };
  }
  const parsed = parsedText(card);
  if (result.kind === "error" || parsed?.error) {
    return {
      type: "error",
      code: pickString(result, "code") ?? parsed?.error?.code ?? "ERROR",
      message: pickString(result, "message") ?? parsed?.error?.message ?? "",
    };
  }
  switch (family) {
    case "read": {
      const image = imageOf(card);
      if (image) return { type: "image", ...image };
      const text = bodyText(card);
      if (text !== undefined) return { type: "text", text };
      break;
    }
    case "list":
    case "search": {
      const entries = treeEntries(card);
      if (entries) {
        return {
          type: "tree",
          groups: groupByDirectory(entries),
          matches: family === "search",
          empty: family === "search" ? "No matches." : "No files.",
        };
      }
      break;
    }
    case "write":
      // The result carries metadata only; what was written is the call's own argument.
      if (writtenContent !== undefined) return { type: "written", content: writtenContent };
      break;
    case "edit": {
      const diff = diffOf(card);
      if (diff) return { type: "diff", lines: diffLines(diff) };
      break;
    }
    case "shell": {
      const stdout = pickString(result, "output", "stdout");
      const stderr = pickString(result, "stderr");
      const output =
        stdout !== undefined || stderr !== undefined
          ? [stdout, stderr].filter((s) => s !== undefined && s !== "").join("\n")
          : (parsed?.body ?? "");
      const exitCode = shellExitCode(card);
      const { id, live } = shellOutput(card, shells);
      return {
        type: "shell",
        output,
        ...(exitCode !== undefined ? { exitCode } : {}),
        ...(id !== undefined ? { shellId: id } : {}),
        ...(live !== undefined ? { live } : {}),
      };
    }
    default:
      break;
  }
  if (card.text !== undefined) return { type: "raw", text: card.text };
  return { type: "raw", text: JSON.stringify(result, null, 2) };
}
