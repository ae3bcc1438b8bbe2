// Shared by this package's tests (kept free of vitest so it type-checks with the sources).
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createSession, type Session, type ToolbeltConfigInput } from "@toolbelt/core";
import { family } from "./index.js";
import {
  findHelper,
  type NetworkOffMechanism,
  networkOffMechanism,
  networkOffUnavailable,
  probeSandbox,
  type SandboxProbe,
} from "./sandbox.js";

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

/** What a sandbox test lacks here: Linux, the helper (built where there is a C compiler) or the kernel's part. */
export type SandboxLack = "linux" | "sandbox-helper" | "landlock" | "network-namespace";

/** The lack behind a probe that cannot run the helper; `kernel` when the helper runs. */
function lackOf(probe: SandboxProbe, kernel: SandboxLack): SandboxLack {
  if (process.platform !== "linux") return "linux";
  return probe.runs ? kernel : "sandbox-helper";
}

/** Whether real Landlock enforcement can be tested here, and if not why and what is missing. */
export function landlockHere(): { ok: boolean; reason: string; lack: SandboxLack } {
  ensureHelper();
  const probe = probeSandbox();
  return probe.abi > 0
    ? { ok: true, reason: `Landlock ABI ${probe.abi}`, lack: "landlock" }
    : { ok: false, reason: probe.reason ?? "no Landlock", lack: lackOf(probe, "landlock") };
}

/** How agent.shell_network "off" is enforced here, and if it cannot be, what is missing. */
export function networkOffHere(): { mechanism: NetworkOffMechanism; reason: string; lack: SandboxLack } {
  ensureHelper();
  const probe = probeSandbox();
  const mechanism = networkOffMechanism(probe);
  return {
    mechanism,
    reason: mechanism === "unavailable" ? networkOffUnavailable(probe) : mechanism,
    lack: lackOf(probe, "network-namespace"),
  };
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
