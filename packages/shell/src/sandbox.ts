import { spawnSync } from "node:child_process";
import { accessSync, constants, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type SandboxMode, sandboxMode, type ToolbeltConfig, ToolbeltError } from "@toolbelt/core";

/** What a result says about the sandbox it ran under. */
export type SandboxStatus = "landlock" | "unavailable" | "off";

export interface SandboxProbe {
  /** The helper binary, when one was found. */
  helper: string | undefined;
  /** The kernel's Landlock ABI version (0: none or not known). */
  abi: number;
  /** Why the sandbox cannot be used, when it cannot. */
  reason: string | undefined;
}

/** Device files a shell and common tools write to. */
const DEVICE_PATHS = [
  "/dev/null",
  "/dev/zero",
  "/dev/full",
  "/dev/random",
  "/dev/urandom",
  "/dev/tty",
  "/dev/ptmx",
  "/dev/pts",
];

/** Where programs and their data live, for `shell_sandbox_confine_reads`. */
const SYSTEM_READ_PATHS = [
  "/bin",
  "/sbin",
  "/usr",
  "/lib",
  "/lib32",
  "/lib64",
  "/libx32",
  "/etc",
  "/opt",
  "/proc",
  "/sys",
  "/dev",
  "/run",
  "/var/lib",
  "/nix",
];

function candidates(): string[] {
  // An explicit helper replaces the search (a missing one then means: no sandbox).
  const explicit = process.env.TOOLBELT_SANDBOX_HELPER;
  if (explicit) return [explicit];
  // The same relative path from src/ (tests) and from dist/ (the built package).
  return [fileURLToPath(new URL("../bin/toolbelt-sandbox", import.meta.url))];
}

/** Where the helper is, or undefined. */
export function findHelper(): string | undefined {
  for (const file of candidates()) {
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // Try the next place.
    }
  }
  return undefined;
}

/** Whether the kernel lists Landlock among its active security modules (no helper needed). */
export function landlockEnabledInKernel(): boolean | undefined {
  try {
    return readFileSync("/sys/kernel/security/lsm", "utf8").split(",").includes("landlock");
  } catch {
    return undefined;
  }
}

const cache = new Map<string, SandboxProbe>();

/** Finds the helper and asks it for the Landlock ABI; done once per process (and helper override). */
export function probeSandbox(): SandboxProbe {
  const key = process.env.TOOLBELT_SANDBOX_HELPER ?? "";
  let probe = cache.get(key);
  // A helper removed or rebuilt since the probe (a rebuild in place) is probed again.
  if (probe && !stillThere(probe.helper)) probe = undefined;
  if (!probe) {
    probe = probeNow();
    cache.set(key, probe);
  }
  return probe;
}

function stillThere(helper: string | undefined): boolean {
  if (!helper) return findHelper() === undefined;
  try {
    accessSync(helper, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function probeNow(): SandboxProbe {
  if (process.platform !== "linux") {
    return { helper: undefined, abi: 0, reason: `Landlock is Linux-only (this is ${process.platform})` };
  }
  const helper = findHelper();
  if (!helper) {
    return {
      helper: undefined,
      abi: 0,
      reason:
        "the sandbox helper is not built (it needs a C compiler at install/build time: run `npm run build -w @toolbelt/shell` with gcc or cc available)",
    };
  }
  const result = spawnSync(helper, ["--probe"], { encoding: "utf8", timeout: 5000 });
  const abi = Number.parseInt(result.stdout ?? "", 10);
  if (result.status !== 0 || !Number.isFinite(abi)) {
    return {
      helper,
      abi: 0,
      reason: `the sandbox helper ${helper} failed to run: ${result.error?.message ?? result.stderr}`,
    };
  }
  if (abi < 1) {
    const lsm = landlockEnabledInKernel();
    return {
      helper,
      abi: 0,
      reason: `this kernel (${os.release()}) has no usable Landlock${lsm === false ? " (not in /sys/kernel/security/lsm)" : ""}`,
    };
  }
  return { helper, abi, reason: undefined };
}

export interface SandboxPlan {
  status: SandboxStatus;
  /** Why it is unavailable (best-effort mode). */
  reason?: string;
  /** argv to put before the shell: the helper and its rules, ending with `--`. */
  prefix: string[];
}

export interface SandboxScope {
  root: string;
  tmpdir: string;
}

function expandHome(p: string): string {
  if (p === "~") return os.homedir();
  if (p.startsWith("~/")) return path.join(os.homedir(), p.slice(2));
  return p;
}

/**
 * How a command runs under `agent.shell_sandbox`: through the helper (writes confined), directly
 * (`best-effort` where the sandbox is unavailable, or `off`), or not at all (`required` without it).
 */
export function planSandbox(config: ToolbeltConfig, scope: SandboxScope): SandboxPlan {
  const mode: SandboxMode = sandboxMode(config);
  if (mode === "off") return { status: "off", prefix: [] };
  const probe = probeSandbox();
  if (!probe.helper || probe.abi < 1) {
    if (mode === "required") {
      throw new ToolbeltError(
        "EUNAVAILABLE",
        `agent.shell_sandbox is "required" but the Landlock sandbox is unavailable: ${probe.reason}. Set agent.shell_sandbox to "best-effort" to run unsandboxed, or "off".`,
        { details: { sandbox: "unavailable" } },
      );
    }
    return { status: "unavailable", reason: probe.reason ?? "unknown", prefix: [] };
  }
  const writable = [
    scope.root,
    scope.tmpdir,
    ...DEVICE_PATHS,
    ...(config.agent.shell_sandbox_allowed_paths ?? []).map((p) => path.resolve(scope.root, expandHome(p))),
  ];
  const prefix = [probe.helper];
  for (const p of writable) prefix.push("--write", p);
  if (config.agent.shell_sandbox_confine_reads) {
    prefix.push("--confine-reads");
    const nodePrefix = path.dirname(path.dirname(process.execPath));
    for (const p of [...SYSTEM_READ_PATHS, nodePrefix]) prefix.push("--read", p);
  }
  prefix.push("--");
  return { status: "landlock", prefix };
}
