import { spawnSync } from "node:child_process";
import { closeSync, fstatSync, openSync, readSync, realpathSync, statSync } from "node:fs";
import path from "node:path";
import type { CommandSpec, ToolbeltConfig } from "@toolbelt/core";
import { sandboxMode } from "./contrib.js";
import { findHelper, probeSandbox } from "./sandbox.js";

/**
 * How a read-only search process (ripgrep) runs: under Landlock through the helper, reading only
 * beneath its cwd (the root), the files the caller names (`spec.reads`: ignore files above the root)
 * and its own executable, and writing nothing; or unconfined, and why.
 */
export type SearchPlan = { confined: true; prefix: string[] } | { confined: false; reason: string };

const PT_INTERP = 3;

type ElfVerdict = { key: string; problem: string | undefined };
const elfCache = new Map<string, ElfVerdict>();

/**
 * Why `file` cannot run under a Landlock ruleset that grants nothing but itself, or undefined when it
 * can: a static ELF executable (static-pie included, as @vscode/ripgrep's rg is) needs no program
 * interpreter and no shared library. A dynamic one would need its loader and libraries granted too;
 * a script, its interpreter. Cached per (path, inode, size, mtime).
 */
export function staticExecutableProblem(file: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(file, "r");
  } catch (error) {
    return `cannot read ${file}: ${(error as Error).message}`;
  }
  try {
    const st = fstatSync(fd);
    const key = `${st.ino}:${st.size}:${st.mtimeMs}`;
    const cached = elfCache.get(file);
    if (cached?.key === key) return cached.problem;
    const problem = elfProblem(fd, file);
    elfCache.set(file, { key, problem });
    return problem;
  } finally {
    closeSync(fd);
  }
}

function elfProblem(fd: number, file: string): string | undefined {
  const head = Buffer.alloc(64);
  const got = readSync(fd, head, 0, 64, 0);
  if (got < 52 || head.readUInt32BE(0) !== 0x7f454c46) return `${file} is not an ELF executable`;
  const is64 = head[4] === 2;
  const le = head[5] === 1;
  if ((is64 && got < 64) || (head[4] !== 1 && !is64) || (head[5] !== 1 && head[5] !== 2))
    return `${file} is not an ELF executable this host reads`;
  const u16 = (b: Buffer, at: number) => (le ? b.readUInt16LE(at) : b.readUInt16BE(at));
  const u32 = (b: Buffer, at: number) => (le ? b.readUInt32LE(at) : b.readUInt32BE(at));
  const phoff = is64 ? Number(le ? head.readBigUInt64LE(32) : head.readBigUInt64BE(32)) : u32(head, 28);
  const phentsize = u16(head, is64 ? 54 : 42);
  const phnum = u16(head, is64 ? 56 : 44);
  if (phentsize < 4 || phnum === 0 || phnum > 4096) return `${file} has no program headers`;
  const table = Buffer.alloc(phentsize * phnum);
  if (readSync(fd, table, 0, table.length, phoff) !== table.length) return `${file} is truncated`;
  for (let i = 0; i < phnum; i++) {
    if (u32(table, i * phentsize) === PT_INTERP)
      return `${file} is dynamically linked (it would need its loader and libraries)`;
  }
  return undefined;
}

let landlock: { helper: string; built: number; abi: number; reason: string | undefined } | undefined;

/**
 * The helper and the Landlock ABI, asked with `--probe` alone: a search needs no namespace, so the
 * isolation probe probeSandbox() also runs (a fork and three unshares) is not paid by a
 * `run search_files`. Once per process and helper build, as probeSandbox.
 */
function landlockProbe(): { helper: string | undefined; abi: number; reason: string | undefined } {
  const helper = findHelper();
  if (!helper) return { helper, abi: 0, reason: probeSandbox().reason };
  let built = -1;
  try {
    built = statSync(helper).mtimeMs;
  } catch {
    // Gone since findHelper: the probe below says so.
  }
  if (landlock?.helper === helper && landlock.built === built) return landlock;
  const result = spawnSync(helper, ["--probe"], { encoding: "utf8", timeout: 5000 });
  const abi = Number.parseInt(result.stdout ?? "", 10);
  const ok = result.status === 0 && Number.isFinite(abi) && abi >= 1;
  // Why not, in the shell's words (the full probe runs only then).
  landlock = {
    helper,
    built,
    abi: ok ? abi : 0,
    reason: ok ? undefined : (probeSandbox().reason ?? "no Landlock"),
  };
  return landlock;
}

/** The regular files among `reads` (absolute), each once. */
function readableFiles(reads: readonly string[]): string[] {
  const out = new Set<string>();
  for (const p of reads) {
    if (!path.isAbsolute(p)) continue;
    try {
      if (statSync(p).isFile()) out.add(p);
    } catch {
      // Gone since the caller listed it: nothing to grant.
    }
  }
  return [...out];
}

/**
 * The plan for a search process. Confined wherever the helper and Landlock are there, unless
 * `agent.shell_sandbox` is "off" (the user's switch for every sandbox toolbelt applies); the helper
 * applies Landlock only (`--landlock-only`: no namespaces to set up for a read-only process), opens the
 * root without following any symlink on the way (`--read-nofollow`), and handles every write right
 * while granting none.
 */
export function planSearch(config: ToolbeltConfig, spec: CommandSpec): SearchPlan {
  if (process.platform !== "linux")
    return { confined: false, reason: `Landlock is Linux-only (this is ${process.platform})` };
  if (sandboxMode(config) === "off") return { confined: false, reason: 'agent.shell_sandbox is "off"' };
  const probe = landlockProbe();
  if (!probe.helper || probe.abi < 1) return { confined: false, reason: probe.reason ?? "no Landlock" };
  const problem = staticExecutableProblem(spec.file);
  if (problem) return { confined: false, reason: problem };
  let root: string;
  let exe: string;
  try {
    root = realpathSync(spec.cwd);
    exe = realpathSync(spec.file);
  } catch (error) {
    return { confined: false, reason: (error as Error).message };
  }
  const prefix = [probe.helper, "--confine-reads", "--landlock-only", "--read-nofollow", root, "--read", exe];
  for (const file of readableFiles(spec.reads ?? [])) prefix.push("--read", file);
  prefix.push("--");
  return { confined: true, prefix };
}
