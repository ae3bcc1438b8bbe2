import { lstatSync, readdirSync, statSync } from "node:fs";
import path from "node:path";
import { type ProtectedLayout, protectedLayout } from "./protected-layout.js";

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

/**
 * Fingerprints of the protected paths of `layout` (walked now when not given): everything beneath the
 * read-only ones, only the existence of nested `.git` directories (git changes what is inside them).
 */
export function snapshotProtected(
  root: string,
  layout: ProtectedLayout = protectedLayout(root),
): ProtectedSnapshot {
  const snap: ProtectedSnapshot = new Map();
  for (const rel of layout.present) {
    try {
      snap.set(rel, `${rel}\0present:${lstatSync(path.join(root, rel)).mode & 0o170000}`);
    } catch {
      // Gone already: the comparison sees it missing.
    }
  }
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
  for (const rel of layout.readOnly) visit(rel, rel);
  return snap;
}

/** The protected paths (as listed in PROTECTED_PATHS terms) that differ between two snapshots. */
export function protectedChanges(before: ProtectedSnapshot, after: ProtectedSnapshot): string[] {
  const changed = new Set<string>();
  const topOf = (value: string) => value.slice(0, value.indexOf("\0"));
  for (const [rel, value] of before) if (after.get(rel) !== value) changed.add(topOf(value) || rel);
  for (const [rel, value] of after) if (!before.has(rel)) changed.add(topOf(value) || rel);
  // A repository created whole (`made/.git`) is one change, not also its hooks and config.
  return [...changed].filter((c) => ![...changed].some((o) => c.startsWith(`${o}/`))).sort();
}
