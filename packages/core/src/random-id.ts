import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import { nodeCrypto } from "./require-later.js";

// Random ids (sessions, calls, temporary names) without loading node:crypto: on Node 20 that is
// about 3 ms of a one-shot run, for a few random bytes. They come from the kernel's generator
// (/dev/urandom, the source node:crypto's own generator is seeded from), read a pool at a time;
// where it cannot be read (no such device, a sandbox that refuses it) node:crypto gives them.

const POOL_BYTES = 256;
let pool: Buffer | undefined;
let used = POOL_BYTES;
let urandom = process.platform !== "win32";

function refill(): boolean {
  if (!urandom) return false;
  let fd: number | undefined;
  try {
    fd = openSync(
      "/dev/urandom",
      constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0),
    );
    if (!fstatSync(fd).isCharacterDevice()) throw new Error("not a device");
    const next = Buffer.alloc(POOL_BYTES);
    let got = 0;
    while (got < POOL_BYTES) {
      const n = readSync(fd, next, got, POOL_BYTES - got, null);
      if (n <= 0) throw new Error("short read");
      got += n;
    }
    pool = next;
    used = 0;
    return true;
  } catch {
    urandom = false;
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** `n` (≤ 64) bytes from a cryptographically secure generator. */
export function randomBytes(n: number): Buffer {
  if (n <= 64 && (used + n <= POOL_BYTES || refill()) && pool) {
    const out = Buffer.from(pool.subarray(used, used + n));
    pool.fill(0, used, used + n); // handed out once
    used += n;
    return out;
  }
  return nodeCrypto().randomBytes(n);
}

/** A version 4 UUID, as crypto.randomUUID() makes. */
export function randomUUID(): string {
  const b = randomBytes(16);
  b[6] = ((b[6] as number) & 0x0f) | 0x40;
  b[8] = ((b[8] as number) & 0x3f) | 0x80;
  const hex = b.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
