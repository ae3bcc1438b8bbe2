// Shared by this package's tests (kept free of vitest so it type-checks with the sources).
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createSession, type Session, type ToolbeltConfigInput } from "@toolbelt/core";
import { family } from "./index.js";
import { findHelper, probeSandbox } from "./sandbox.js";

export function tempDir(prefix = "tb-shell-"): string {
  return realpathSync(mkdtempSync(path.join(os.tmpdir(), prefix)));
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

/** A session with the shell family, allowed to run the shell (as `--allow shell` does). */
export function openSession(
  root: string,
  config: ToolbeltConfigInput = {},
  profile?: string,
): Promise<Session> {
  return createSession({
    root,
    config,
    plugins: [family],
    allow: ["shell"],
    ...(profile ? { profile } : {}),
  });
}

/** Live (non-zombie) processes whose command line contains every given argument, in order. */
export function processesWithArgs(...args: string[]): number[] {
  const needle = `${args.join("\0")}\0`;
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, "latin1");
      if (!cmdline.includes(needle)) continue;
      const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
      const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
      if (state !== "Z" && state !== "X") found.push(pid);
    } catch {
      // exited meanwhile
    }
  }
  return found;
}

/** Builds the Landlock helper if it is missing (tests run against src, possibly before a build). */
export function ensureHelper(): string | undefined {
  if (!findHelper()) {
    const script = fileURLToPath(new URL("../scripts/build-native.mjs", import.meta.url));
    spawnSync(process.execPath, [script], { stdio: "inherit" });
  }
  return findHelper();
}

/** Whether real Landlock enforcement can be tested here, and if not why. */
export function landlockHere(): { ok: boolean; reason: string } {
  ensureHelper();
  const probe = probeSandbox();
  return probe.abi > 0
    ? { ok: true, reason: `Landlock ABI ${probe.abi}` }
    : { ok: false, reason: probe.reason ?? "no Landlock" };
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
