import { lstatSync, readdirSync, statSync } from "node:fs";
import path from "node:path";
import { sandboxProtectedPaths } from "./sandbox.js";

/** Entries of a protected directory looked at; past this the snapshot notes that it stopped. */
const MAX_ENTRIES = 2000;

/**
 * What the protected paths look like now: one fingerprint per path (and per entry beneath a
 * protected directory). A read-only bind mount cannot cover a file that does not exist yet, nor stop
 * a command from renaming the directory above it, so the shell compares before and after and says
 * when a command created or changed one.
 */
export type ProtectedSnapshot = Map<string, string>;

function fingerprint(abs: string): string | undefined {
  try {
    const l = lstatSync(abs, { bigint: true });
    // A symlink's target counts too: writing through it changes what the protected name reads as.
    let target = "";
    if (l.isSymbolicLink()) {
      try {
        const t = statSync(abs, { bigint: true });
        target = ` -> ${t.ino}:${t.size}:${t.mtimeNs}:${t.mode}`;
      } catch {
        target = " -> (dangling)";
      }
    }
    return `${l.dev}:${l.ino}:${l.size}:${l.mtimeNs}:${l.ctimeNs}:${l.mode}${target}`;
  } catch {
    return undefined;
  }
}

export function snapshotProtected(root: string): ProtectedSnapshot {
  const snap: ProtectedSnapshot = new Map();
  let budget = MAX_ENTRIES;
  const visit = (rel: string, top: string) => {
    if (budget-- <= 0) {
      snap.set(`${top}\0truncated`, "1");
      return;
    }
    const abs = path.join(root, rel);
    const print = fingerprint(abs);
    if (print === undefined) return;
    snap.set(rel, `${top}\0${print}`);
    if (!print.includes("->") && (Number(print.split(":")[5]) & 0o170000) === 0o040000) {
      let names: string[] = [];
      try {
        names = readdirSync(abs).sort();
      } catch {
        return;
      }
      for (const name of names) visit(path.join(rel, name), top);
    }
  };
  for (const rel of sandboxProtectedPaths()) visit(rel, rel);
  return snap;
}

/** The protected paths (as listed in PROTECTED_PATHS terms) that differ between two snapshots. */
export function protectedChanges(before: ProtectedSnapshot, after: ProtectedSnapshot): string[] {
  const changed = new Set<string>();
  const topOf = (value: string) => value.slice(0, value.indexOf("\0"));
  for (const [rel, value] of before) if (after.get(rel) !== value) changed.add(topOf(value) || rel);
  for (const [rel, value] of after) if (!before.has(rel)) changed.add(topOf(value) || rel);
  return [...changed].sort();
}
