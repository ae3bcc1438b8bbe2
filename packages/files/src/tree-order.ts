/**
 * The order core's renderTree writes paths in: per directory level, subdirectories before files,
 * each group by name. Sorting payloads this way makes their entries read back from the text in
 * the same order, and caps keep what the tree shows first.
 */
export function comparePaths(a: string, b: string): number {
  const pa = a.split("/");
  const pb = b.split("/");
  const n = Math.min(pa.length, pb.length);
  for (let i = 0; i < n; i++) {
    const x = pa[i] as string;
    const y = pb[i] as string;
    if (x === y) continue;
    const xDir = i < pa.length - 1 ? 0 : 1;
    const yDir = i < pb.length - 1 ? 0 : 1;
    if (xDir !== yDir) return xDir - yDir;
    return x < y ? -1 : 1;
  }
  return pa.length - pb.length;
}
