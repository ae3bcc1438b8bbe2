/**
 * The order core's renderTree writes paths in: per directory level, subdirectories before files,
 * each group by name (UTF-16 code units, as `<` compares strings). Sorting payloads this way makes
 * their entries read back from the text in the same order, caps keep what the tree shows first, and
 * the walker visits files in this order (so a capped walk is a prefix of the full answer).
 */
export function comparePaths(a: string, b: string): number {
  // Allocation-free up to the first difference: sorts of large result sets call this O(n log n)
  // times, and splitting both paths per call dominated them.
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  if (i === a.length && i === b.length) return 0;
  const segStart = a.lastIndexOf("/", i - 1) + 1;
  const aEnd = a.indexOf("/", segStart);
  const bEnd = b.indexOf("/", segStart);
  const aDir = aEnd === -1 ? 1 : 0;
  const bDir = bEnd === -1 ? 1 : 0;
  const aSegEnd = aEnd === -1 ? a.length : aEnd;
  const bSegEnd = bEnd === -1 ? b.length : bEnd;
  // Same segment: one path is a directory the other path is the plain name of.
  if (aSegEnd === bSegEnd && aSegEnd <= i) return aDir === bDir ? 0 : bDir - aDir;
  if (aDir !== bDir) return aDir - bDir;
  // The segments first differ at i, or one of them ends there (the shorter name sorts first).
  if (i >= aSegEnd) return -1;
  if (i >= bSegEnd) return 1;
  return a.charCodeAt(i) < b.charCodeAt(i) ? -1 : 1;
}

/** Compares two names of one directory the way comparePaths orders them within a group. */
export function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
