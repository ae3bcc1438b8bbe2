import { randomBytes } from "node:crypto";
import { promises as fs, readdirSync } from "node:fs";
import path from "node:path";
import { ENV, readEnv, toolbeltHome } from "./env-vars.js";
import { DirRef } from "./safe-open.js";

// The atomic writer's temporary files are `.<name>.<pid: 8 hex><random: 8 hex>.tbtmp`, beside the
// target. A writer killed mid-write (SIGKILL, power) leaves one behind; the pid in the name tells a
// later process whether its writer is gone. Cleaning happens in two places, so startup never walks
// the project:
// - the first write of a process into a directory removes stale temp files there;
// - each process notes the directories it creates temp files in, in a small journal under the user's
//   state dir; the next session start reads the journals of dead processes and cleans just those
//   directories (bounded: MAX_JOURNALS journals, MAX_DIRS directories each, MAX_ENTRIES names each).
const TEMP_NAME = /^\..*\.([0-9a-f]{8})[0-9a-f]{8}\.tbtmp$/;
const MAX_BASE = 100;
const MAX_JOURNALS = 32;
const MAX_DIRS = 256;
const MAX_ENTRIES = 20_000;
const MAX_JOURNAL_BYTES = 256 * 1024;

const live = new Set<string>();
const recorded = new Set<string>();
const swept = new Set<string>();

/** The temp file name for a write of `base`, carrying this process's pid. */
export function tempName(base: string): string {
  const pid = (process.pid >>> 0).toString(16).padStart(8, "0").slice(-8);
  return `.${base.slice(0, MAX_BASE)}.${pid}${randomBytes(4).toString("hex")}.tbtmp`;
}

/** Marks a temp file (by absolute path) as being written by this process, or done. */
export function markLive(abs: string, on: boolean): void {
  if (on) live.add(abs);
  else live.delete(abs);
}

/** Whether process `pid` exists (EPERM: it does, under another user). */
export function alive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists under another user.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Whether `name` in `dir` is one of our temp files whose writer is gone. */
export function isStaleTemp(dir: string, name: string): boolean {
  const match = TEMP_NAME.exec(name);
  if (!match) return false;
  const pid = Number.parseInt(match[1] as string, 16);
  if (pid === process.pid) return !live.has(path.join(dir, name));
  return !alive(pid);
}

/** Removes stale temp files directly in `dir` (an open, verified directory). Returns how many. */
export async function sweepDir(dir: DirRef): Promise<number> {
  let removed = 0;
  let seen = 0;
  const handle = await fs.opendir(dir.listPath()).catch(() => undefined);
  if (!handle) return 0;
  try {
    for await (const entry of handle) {
      if (++seen > MAX_ENTRIES) break;
      if (!entry.isFile() || !isStaleTemp(dir.path, entry.name)) continue;
      try {
        await fs.unlink(dir.at(entry.name));
        removed++;
      } catch {
        // Gone already, or not ours to remove.
      }
    }
  } catch {
    // A directory that vanished mid-listing has nothing left to clean.
  }
  return removed;
}

/** Sweeps `dir` the first time this process writes there. */
export async function sweepOnFirstWrite(dir: DirRef): Promise<void> {
  if (swept.has(dir.path) || swept.size >= 4096) return;
  swept.add(dir.path);
  await sweepDir(dir);
}

/** Where the journals live: `$TOOLBELT_STATE_DIR`, else `$TOOLBELT_HOME/state`, else `~/.toolbelt/state`. */
export function stateDir(): string {
  return readEnv(ENV.TOOLBELT_STATE_DIR) ?? path.join(toolbeltHome(), "state");
}

function journalDir(): string {
  return path.join(stateDir(), "writes");
}

/** Notes that this process is about to create a temp file in `dir`, before it does. */
export async function recordTempDir(dir: string): Promise<void> {
  if (recorded.has(dir) || recorded.size >= MAX_DIRS) return;
  recorded.add(dir);
  try {
    const jd = journalDir();
    await fs.mkdir(jd, { recursive: true, mode: 0o700 });
    await fs.appendFile(path.join(jd, `${process.pid}.dirs`), `${dir}\n`, { mode: 0o600 });
  } catch {
    // A read-only home only loses the start-up cleanup; the first-write sweep still runs.
  }
}

/**
 * Drops this process's journal once no temp file is being written (a session closing): a clean exit
 * leaves nothing for the next start to look at.
 */
export async function releaseJournal(): Promise<void> {
  if (live.size > 0 || recorded.size === 0) return;
  recorded.clear();
  await fs.unlink(path.join(journalDir(), `${process.pid}.dirs`)).catch(() => {});
}

let startSweep: Promise<number> | undefined;

/**
 * Cleans the directories named in the journals of dead processes, once per process. Costs one
 * readdir of the journal folder when there is nothing to clean.
 */
export function sweepJournals(): Promise<number> {
  startSweep ??= runJournalSweep().catch(() => 0);
  return startSweep;
}

async function runJournalSweep(): Promise<number> {
  const jd = journalDir();
  let names: string[];
  try {
    // Synchronous: the journal directory holds a few names, and a run that finds none (most) then
    // starts no thread-pool thread and loads no node:fs/promises for it.
    names = readdirSync(jd);
  } catch {
    return 0;
  }
  let removed = 0;
  let journals = 0;
  for (const name of names) {
    const match = /^(\d+)\.dirs$/.exec(name);
    if (!match) continue;
    const pid = Number(match[1]);
    // A journal under our own pid before we wrote anything is a dead predecessor's.
    const dead = pid === process.pid ? recorded.size === 0 : !alive(pid);
    if (!dead) continue;
    if (++journals > MAX_JOURNALS) break;
    const file = path.join(jd, name);
    let text = "";
    try {
      const handle = await fs.open(file, "r");
      try {
        const buffer = Buffer.alloc(MAX_JOURNAL_BYTES);
        const { bytesRead } = await handle.read(buffer, 0, MAX_JOURNAL_BYTES, 0);
        text = buffer.subarray(0, bytesRead).toString("utf8");
      } finally {
        await handle.close();
      }
    } catch {
      continue;
    }
    const dirs = [...new Set(text.split("\n").filter((l) => path.isAbsolute(l)))].slice(0, MAX_DIRS);
    for (const dir of dirs) {
      const ref = await DirRef.open(dir).catch(() => undefined);
      if (!ref) continue;
      try {
        removed += await sweepDir(ref);
      } finally {
        await ref.close();
      }
    }
    await fs.unlink(file).catch(() => {});
  }
  return removed;
}
