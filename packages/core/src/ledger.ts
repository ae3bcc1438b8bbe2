import { nodeCrypto } from "./require-later.js";

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

function sha1Hex(content: Uint8Array): string {
  const crypto = nodeCrypto();
  // crypto.hash (Node ≥ 20.12) is the one-shot form of the same digest, without a Hash object per read.
  const oneShot = (crypto as { hash?: (algorithm: string, data: Uint8Array, encoding: "hex") => string })
    .hash;
  return oneShot ? oneShot("sha1", content, "hex") : crypto.createHash("sha1").update(content).digest("hex");
}

/** Contents up to this size are hashed when the hash is first compared, not when read. */
const LAZY_HASH_MAX_BYTES = 1024 * 1024;

/** The one fingerprint whose hash is not computed yet (see {@link fingerprintOf}). */
let pending: { settle: () => void } | undefined;

/**
 * The fingerprint of a file version. Its hash is only compared when size and mtime match an earlier
 * read of the same file, which a session's first read of a file (a one-shot run's only one) never
 * meets: so the hash of a file up to 1 MiB is computed when first asked for, or when the next
 * fingerprint is made, whichever comes first. At most one copy of content waits at a time, and the
 * copy is this function's own, so nothing the caller does to `content` later changes the hash.
 */
export function fingerprintOf(content: Uint8Array, stat: { size: number; mtimeMs: number }): FileFingerprint {
  pending?.settle();
  if (content.length > LAZY_HASH_MAX_BYTES)
    return { size: stat.size, mtimeMs: stat.mtimeMs, hash: sha1Hex(content) };
  let copy: Uint8Array | undefined = Uint8Array.prototype.slice.call(content);
  let hash: string | undefined;
  const settle = (): string => {
    if (hash === undefined) {
      hash = sha1Hex(copy as Uint8Array);
      copy = undefined;
      if (pending === waiting) pending = undefined;
    }
    return hash;
  };
  const waiting = { settle };
  pending = waiting;
  return {
    size: stat.size,
    mtimeMs: stat.mtimeMs,
    get hash() {
      return settle();
    },
  };
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
