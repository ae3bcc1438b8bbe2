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
  windows: LineWindow[];
}

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
    const entry = this.#entries.get(abs);
    if (!entry || !sameVersion(entry.fingerprint, fingerprint)) return false;
    return entry.windows.some((w) => w.start <= window.start && w.end >= window.end);
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
      this.#entries.set(abs, { fingerprint, windows: [window] });
      return;
    }
    entry.windows = [
      ...entry.windows.filter((w) => !(w.start >= window.start && w.end <= window.end)),
      window,
    ];
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
