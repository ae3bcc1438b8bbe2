import { createHash } from "node:crypto";

/** What identifies one version of a file: size and mtime are cheap, the hash catches same-size same-mtime edits. */
export interface FileFingerprint {
  size: number;
  mtimeMs: number;
  hash: string;
}

/** A 1-based inclusive line window; `end` is Infinity when the read reached the end of the file. */
export interface LineWindow {
  start: number;
  end: number;
}

interface Entry {
  fingerprint: FileFingerprint;
  /** Sorted, disjoint and not adjacent: lines 1-10 and 11-20 are kept as 1-20. */
  windows: LineWindow[];
}

function merge(windows: LineWindow[]): LineWindow[] {
  const sorted = [...windows].sort((a, b) => a.start - b.start);
  const out: LineWindow[] = [];
  for (const w of sorted) {
    const last = out[out.length - 1];
    if (last && w.start <= last.end + 1) last.end = Math.max(last.end, w.end);
    else out.push({ ...w });
  }
  return out;
}

/** The fingerprint of a file version, hashed as it is read. */
export function fingerprintOf(content: Uint8Array, stat: { size: number; mtimeMs: number }): FileFingerprint {
  return { size: stat.size, mtimeMs: stat.mtimeMs, hash: createHash("sha1").update(content).digest("hex") };
}

function sameVersion(a: FileFingerprint, b: FileFingerprint): boolean {
  return a.size === b.size && a.mtimeMs === b.mtimeMs && a.hash === b.hash;
}

/**
 * The read ledger: which windows of which file versions this session has already been shown.
 * A sub-agent gets its own ledger; any write through toolbelt invalidates the file's entry.
 */
export class ReadLedger {
  readonly #entries = new Map<string, Entry>();

  /** True when `window` of this exact version was already returned (alone or inside a larger window). */
  covers(abs: string, fingerprint: FileFingerprint, window: LineWindow): boolean {
    const seen = this.seenWithin(abs, fingerprint, window);
    return seen.length === 1 && seen[0]?.start === window.start && seen[0]?.end === window.end;
  }

  /**
   * The parts of `window` this exact version already returned, as sorted disjoint windows (empty
   * when none, or when the version differs): what a read may leave out and name instead.
   */
  seenWithin(abs: string, fingerprint: FileFingerprint, window: LineWindow): LineWindow[] {
    const entry = this.#entries.get(abs);
    if (!entry || !sameVersion(entry.fingerprint, fingerprint)) return [];
    const out: LineWindow[] = [];
    for (const w of entry.windows) {
      const start = Math.max(w.start, window.start);
      const end = Math.min(w.end, window.end);
      if (start <= end) out.push({ start, end });
    }
    return out;
  }

  /** Whether this session has read any version of the file, and whether that version differs from `current`. */
  status(abs: string, current?: FileFingerprint): "unread" | "current" | "stale" {
    const entry = this.#entries.get(abs);
    if (!entry) return "unread";
    if (!current) return "current";
    return sameVersion(entry.fingerprint, current) ? "current" : "stale";
  }

  record(abs: string, fingerprint: FileFingerprint, window: LineWindow): void {
    const entry = this.#entries.get(abs);
    if (!entry || !sameVersion(entry.fingerprint, fingerprint)) {
      this.#entries.set(abs, { fingerprint, windows: [{ ...window }] });
      return;
    }
    entry.windows = merge([...entry.windows, window]);
  }

  /** Forget a file, so the next read returns its full content. */
  invalidate(abs: string): void {
    this.#entries.delete(abs);
  }

  clear(): void {
    this.#entries.clear();
  }

  get size(): number {
    return this.#entries.size;
  }
}
