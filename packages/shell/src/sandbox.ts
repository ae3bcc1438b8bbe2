import { spawnSync } from "node:child_process";
import { accessSync, constants, existsSync, readFileSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type ToolbeltConfig, ToolbeltError } from "@toolbelt/core";
import { ENV, PROTECTED_PATHS, readEnv } from "@toolbelt/core/internal";
import { capMemory, createCommandCgroup, removeCgroup } from "./cgroup.js";
import {
  DEFAULT_MAX_FILE_MIB,
  DEFAULT_MAX_MEMORY_MIB,
  networkMode,
  type SandboxMode,
  sandboxMode,
} from "./contrib.js";
import { type ProtectedLayout, protectedLayout } from "./protected-layout.js";

/** What a result says about the sandbox it ran under. */
export type SandboxStatus = "landlock" | "unavailable" | "off";

export interface SandboxProbe {
  /** The helper binary, when one was found. */
  helper: string | undefined;
  /** The kernel's Landlock ABI version (0: none or not known). */
  abi: number;
  /** Why the sandbox cannot be used, when it cannot. */
  reason: string | undefined;
  /** The helper ran: it can track the command (cgroup, watcher) even without Landlock. */
  runs: boolean;
  /**
   * Private mount namespace (read-only protected paths); `pidNamespace`: commands get their own /proc;
   * `netNamespace`: commands can get a network namespace of their own (agent.shell_network: off).
   */
  isolation: { ok: boolean; detail: string; pidNamespace?: boolean; netNamespace?: boolean };
}

/** How `agent.shell_network: "off"` is enforced here, best first; `unavailable`: commands refuse to run. */
export type NetworkOffMechanism = "netns" | "landlock" | "unavailable";

/** Landlock's TCP rules (connect, bind) came with ABI 4. */
export const LANDLOCK_NET_ABI = 4;

/** Diagnosis: only this mechanism may be used (`netns` or `landlock`). */
const NETWORK_VIA = ENV.TOOLBELT_SANDBOX_NETWORK_VIA.name;

function forcedVia(): "netns" | "landlock" | undefined {
  return readEnv(ENV.TOOLBELT_SANDBOX_NETWORK_VIA);
}

/** agent.shell_network is off (a list of allowed hosts is not off). */
export function networkOff(config: ToolbeltConfig): boolean {
  return networkMode(config).kind === "off";
}

/** Whether commands can get a network namespace of their own here: what an allow list needs. */
export function proxyNamespace(probe: SandboxProbe = probeSandbox()): { ok: boolean; why: string } {
  if (!probe.runs) return { ok: false, why: probe.reason ?? "the sandbox helper does not run" };
  if (forcedVia() === "landlock")
    return { ok: false, why: `${NETWORK_VIA}=landlock rules out a network namespace` };
  if (probe.isolation.netNamespace === true) return { ok: true, why: "" };
  return {
    ok: false,
    why: `no network namespace (${probe.isolation.ok ? "unshare(CLONE_NEWNET) failed" : probe.isolation.detail})`,
  };
}

/** What the helper would use for network off (the same order and fallbacks as the helper's). */
export function networkOffMechanism(probe: SandboxProbe = probeSandbox()): NetworkOffMechanism {
  if (!probe.runs) return "unavailable";
  const via = forcedVia();
  if (via !== "landlock" && probe.isolation.netNamespace === true) return "netns";
  if (via !== "netns" && probe.abi >= LANDLOCK_NET_ABI) return "landlock";
  return "unavailable";
}

/** Why network off cannot be enforced here, in words. */
export function networkOffUnavailable(probe: SandboxProbe = probeSandbox()): string {
  if (!probe.runs) return probe.reason ?? "the sandbox helper does not run";
  const via = forcedVia();
  const netns =
    via === "landlock"
      ? `${NETWORK_VIA}=landlock rules out a network namespace`
      : `no network namespace (${probe.isolation.ok ? "unshare(CLONE_NEWNET) failed" : probe.isolation.detail})`;
  const landlock =
    via === "netns"
      ? `${NETWORK_VIA}=netns rules out Landlock`
      : `no Landlock network rules (ABI ${probe.abi} < ${LANDLOCK_NET_ABI})`;
  return `${netns} and ${landlock}`;
}

/** Processes and threads one sandboxed command may run at once, unless agent.shell_max_processes says. */
export const DEFAULT_MAX_PROCESSES = 1024;

export { sandboxProtectedPaths } from "./protected-layout.js";

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

/** Where programs and their data live: readable under `shell_sandbox_confine_reads` (the default). */
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

/**
 * The user's toolchains and the caches builds read (package stores, installed compilers, version
 * managers), relative to the home directory; read-only. Credentials (~/.ssh, ~/.aws, ~/.npmrc,
 * ~/.config/gh, ...) are deliberately not here.
 */
export const TOOLCHAIN_HOME_PATHS = [
  ".npm",
  ".cache",
  ".cargo",
  ".rustup",
  ".nvm",
  ".pyenv",
  ".rbenv",
  ".volta",
  ".bun",
  ".deno",
  ".yarn",
  ".m2",
  ".gradle",
  "go/pkg/mod",
  ".local/bin",
  ".local/lib",
  ".local/share/pnpm",
  // git refuses to run when its config exists but cannot be read.
  ".gitconfig",
  ".config/git",
];

/**
 * toolbelt's own dependencies (a language server started through the sandbox runs from them): every
 * node_modules on the way up from this module, so both an installed copy and a workspace checkout work.
 */
function ownNodeModules(): string[] {
  const out: string[] = [];
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = path.join(dir, "node_modules");
    if (existsSync(candidate)) out.push(candidate);
    const up = path.dirname(dir);
    if (up === dir) return out;
    dir = up;
  }
}

/** What a confined command may read besides the root, its temp dir and the writable paths. */
export function confinedReadPaths(config: ToolbeltConfig, root: string, extra: string[] = []): string[] {
  const home = os.homedir();
  const nodePrefix = path.dirname(path.dirname(process.execPath));
  return [
    ...SYSTEM_READ_PATHS,
    nodePrefix,
    ...ownNodeModules(),
    ...TOOLCHAIN_HOME_PATHS.map((p) => path.join(home, p)),
    ...(config.agent.shell_sandbox_read_paths ?? []).map((p) => path.resolve(root, expandHome(p))),
    ...extra,
  ];
}

function candidates(): string[] {
  // An explicit helper replaces the search (a missing one then means: no sandbox).
  const explicit = readEnv(ENV.TOOLBELT_SANDBOX_HELPER);
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

const cache = new Map<string, { probe: SandboxProbe; built: number }>();

/** Finds the helper and asks it for the Landlock ABI; done once per process (and helper override). */
export function probeSandbox(): SandboxProbe {
  const key = readEnv(ENV.TOOLBELT_SANDBOX_HELPER) ?? "";
  const cached = cache.get(key);
  // A helper removed, added or rebuilt since the probe is probed again: a rebuilt one may offer more
  // (or less), and an old probe must not promise what the new binary does not do.
  if (cached && builtAt(cached.probe.helper ?? findHelper()) === cached.built) return cached.probe;
  const probe = probeNow();
  cache.set(key, { probe, built: builtAt(probe.helper) });
  return probe;
}

/** The helper's modification time, -1 when there is none (what tells a rebuild in place). */
function builtAt(helper: string | undefined): number {
  if (!helper) return -1;
  try {
    accessSync(helper, constants.X_OK);
    return statSync(helper).mtimeMs;
  } catch {
    return -1;
  }
}

const NO_ISOLATION = { ok: false, detail: "the sandbox helper is not available" };

function probeNow(): SandboxProbe {
  if (process.platform !== "linux") {
    return {
      helper: undefined,
      abi: 0,
      reason: `Landlock is Linux-only (this is ${process.platform})`,
      runs: false,
      isolation: NO_ISOLATION,
    };
  }
  const helper = findHelper();
  if (!helper) {
    return {
      helper: undefined,
      abi: 0,
      reason:
        "the sandbox helper is not built (it needs a C compiler at install/build time: run `npm run build -w @toolbelt/shell` with gcc or cc available)",
      runs: false,
      isolation: NO_ISOLATION,
    };
  }
  const result = spawnSync(helper, ["--probe"], { encoding: "utf8", timeout: 5000 });
  const abi = Number.parseInt(result.stdout ?? "", 10);
  if (result.status !== 0 || !Number.isFinite(abi)) {
    return {
      helper,
      abi: 0,
      reason: `the sandbox helper ${helper} failed to run: ${result.error?.message ?? result.stderr}`,
      runs: false,
      isolation: NO_ISOLATION,
    };
  }
  const isolation = probeIsolation(helper);
  if (abi < 1) {
    const lsm = landlockEnabledInKernel();
    return {
      helper,
      abi: 0,
      reason: `this kernel (${os.release()}) has no usable Landlock${lsm === false ? " (not in /sys/kernel/security/lsm)" : ""}`,
      runs: true,
      isolation,
    };
  }
  return { helper, abi, reason: undefined, runs: true, isolation };
}

function probeIsolation(helper: string): SandboxProbe["isolation"] {
  const result = spawnSync(helper, ["--probe-isolation"], { encoding: "utf8", timeout: 5000 });
  const out = (result.stdout ?? "").trim();
  if (out.startsWith("ok")) {
    // "ok (user namespace) +pidns +netns": the +flags say what else a command can get.
    const pidNamespace = out.includes(" +pidns");
    const netNamespace = out.includes(" +netns");
    const rest = out.slice(2).replace(/ \+\w+/g, "");
    return { ok: true, detail: `private mount namespace${rest}`, pidNamespace, netNamespace };
  }
  // An older helper without the option prints its usage and exits 125.
  return { ok: false, detail: out || result.error?.message || result.stderr?.trim() || "unknown" };
}

export interface SandboxPlan {
  status: SandboxStatus;
  /** Why it is unavailable (best-effort mode). */
  reason?: string;
  /** argv to put before the shell: the helper and its rules, ending with `--`. */
  prefix: string[];
  /** The protected paths are bound read-only for the command. */
  readOnly: boolean;
  /** The command's cgroup, when one was created (the caller removes it once the command is done). */
  cgroup?: string;
  /**
   * The cgroup whose memory limit applies to the command (the same as `cgroup` on cgroup v2, one of
   * its own on v1, which `releaseCgroups` removes), when one could be set.
   */
  memoryCgroup?: string;
  /** The limits the command runs under (see `commandLimits`). */
  limits?: CommandLimits;
  /**
   * How the network is limited: off (by a namespace or Landlock), or `proxy`, only the hosts
   * agent.shell_network.allow lists, through the proxy (in a namespace).
   */
  network?: Exclude<NetworkOffMechanism, "unavailable"> | "proxy";
}

export interface SandboxScope {
  root: string;
  tmpdir: string;
  /**
   * TOOLBELT_SHELL_MARK of the command. With it the command gets its own cgroup (where one can be
   * created) and a watcher that kills everything of it when toolbelt dies.
   */
  mark?: string;
  /** More paths the command reads while reads are confined (a language server's own install). */
  reads?: string[];
  /** The protected paths to bind read-only, when the caller already walked for them. */
  layout?: ProtectedLayout;
  /**
   * With agent.shell_network { allow }: the proxy's unix socket, and the port on the command's own
   * 127.0.0.1 that leads to it. A process started without one (a language server) gets no network.
   */
  proxy?: { socket: string; port: number };
}

function expandHome(p: string): string {
  if (p === "~") return os.homedir();
  if (p.startsWith("~/")) return path.join(os.homedir(), p.slice(2));
  return p;
}

/** What one command may use: memory (a cgroup) and the size of one file it writes (RLIMIT_FSIZE). */
export interface CommandLimits {
  memoryMib: number;
  fileMib: number;
  /** The memory limit applies (a cgroup with the memory controller was set up for the command). */
  memory: boolean;
}

export function commandLimits(config: ToolbeltConfig): Omit<CommandLimits, "memory"> {
  return {
    memoryMib: config.agent.shell_max_memory_mib ?? DEFAULT_MAX_MEMORY_MIB,
    fileMib: config.agent.shell_max_file_mib ?? DEFAULT_MAX_FILE_MIB,
  };
}

/**
 * Options every run through the helper gets: the cgroup to join (capped at `cap` tasks), the memory
 * limit and the file-size limit, and the watcher.
 */
function tracking(
  config: ToolbeltConfig,
  scope: SandboxScope,
  cap: number | "max",
): { args: string[]; cgroup?: string; memoryCgroup?: string; limits: CommandLimits } {
  const wanted = commandLimits(config);
  const args = ["--fsize", String(wanted.fileMib * 2 ** 20)];
  if (!scope.mark) return { args, limits: { ...wanted, memory: false } };
  const cgroup = createCommandCgroup(scope.mark, cap);
  if (cgroup) args.push("--cgroup", cgroup);
  const memoryCgroup = capMemory(scope.mark, wanted.memoryMib * 2 ** 20, cgroup);
  if (memoryCgroup && memoryCgroup !== cgroup) args.push("--also-cgroup", memoryCgroup);
  args.push("--watch", scope.mark);
  return {
    args,
    ...(cgroup ? { cgroup } : {}),
    ...(memoryCgroup ? { memoryCgroup } : {}),
    limits: { ...wanted, memory: memoryCgroup !== undefined },
  };
}

/** Removes the cgroups a plan made once its command is done (a cgroup still in use stays). */
export function releaseCgroups(plan: Pick<SandboxPlan, "cgroup" | "memoryCgroup">): void {
  if (plan.memoryCgroup && plan.memoryCgroup !== plan.cgroup) removeCgroup(plan.memoryCgroup);
  if (plan.cgroup) removeCgroup(plan.cgroup);
}

/**
 * How a command runs under `agent.shell_sandbox`: through the helper (writes confined, protected
 * paths read-only, process count capped), through the helper for tracking only (`off`, or
 * `best-effort` where Landlock is unavailable), directly (no helper), or not at all (`required`
 * without Landlock).
 */
export function planSandbox(config: ToolbeltConfig, scope: SandboxScope): SandboxPlan {
  const plan = planFiles(config, scope);
  const network = networkMode(config);
  if (network.kind === "on") return plan;
  if (network.kind === "allow" && scope.proxy) return withProxy(plan, scope.proxy);
  // Off, or an allow list for a process that has no proxy of its own (a language server): no network.
  const probe = probeSandbox();
  const mechanism = networkOffMechanism(probe);
  // Fail closed: a command asked to run without network never runs with it.
  if (mechanism === "unavailable" || !plan.prefix.includes("--")) {
    releaseCgroups(plan);
    throw new ToolbeltError(
      "EUNAVAILABLE",
      `agent.shell_network is "off" but this machine cannot take the network away from a command, so it does not run: ${networkOffUnavailable(probe)}. Set agent.shell_network to "on" in your own config to run it with network.`,
      { details: { network: "unavailable" } },
    );
  }
  const end = plan.prefix.indexOf("--");
  const net = ["--net-off"];
  const via = forcedVia();
  if (via) net.push("--net-via", via);
  // Local daemons' sockets (docker, dbus, databases) are network too; hiding them takes a private
  // mount namespace (doctor's sandbox-unix-sockets says when there is none).
  if (probe.isolation.ok) net.push("--hide-sockets");
  plan.prefix.splice(end, 0, ...net);
  plan.network = mechanism;
  return plan;
}

/**
 * Only the listed hosts: the command gets a network namespace of its own (no other mechanism can
 * tell hosts apart), whose one way out is the proxy. Fails closed where there is no namespace.
 */
function withProxy(plan: SandboxPlan, proxy: { socket: string; port: number }): SandboxPlan {
  const probe = probeSandbox();
  const netns = proxyNamespace(probe);
  if (!netns.ok || !plan.prefix.includes("--")) {
    releaseCgroups(plan);
    throw new ToolbeltError(
      "EUNAVAILABLE",
      `agent.shell_network allows only listed hosts, through a proxy that needs a network namespace per command, and this machine cannot make one, so the command does not run: ${netns.why}. Set agent.shell_network to "on" (or "off") in your own config to run it.`,
      { details: { network: "unavailable" } },
    );
  }
  const net = ["--net-off", "--net-via", "netns"];
  if (probe.isolation.ok) net.push("--hide-sockets");
  net.push("--net-proxy", proxy.socket, "--net-proxy-port", String(proxy.port));
  plan.prefix.splice(plan.prefix.indexOf("--"), 0, ...net);
  plan.network = "proxy";
  return plan;
}

function planFiles(config: ToolbeltConfig, scope: SandboxScope): SandboxPlan {
  const mode: SandboxMode = sandboxMode(config);
  const probe = probeSandbox();
  const trackOnly = (status: SandboxStatus, reason?: string): SandboxPlan => {
    const plan: SandboxPlan = { status, prefix: [], readOnly: false };
    if (reason) plan.reason = reason;
    if (!probe.runs || !probe.helper) return plan;
    const t = tracking(config, scope, "max");
    plan.prefix = [probe.helper, "--no-landlock", ...t.args, "--"];
    if (t.cgroup) plan.cgroup = t.cgroup;
    if (t.memoryCgroup) plan.memoryCgroup = t.memoryCgroup;
    plan.limits = t.limits;
    return plan;
  };
  if (mode === "off") return trackOnly("off");
  if (!probe.helper || probe.abi < 1) {
    if (mode === "required") {
      throw new ToolbeltError(
        "EUNAVAILABLE",
        `agent.shell_sandbox is "required" but the Landlock sandbox is unavailable: ${probe.reason}. Set agent.shell_sandbox to "best-effort" to run unsandboxed, or "off".`,
        { details: { sandbox: "unavailable" } },
      );
    }
    return trackOnly("unavailable", probe.reason ?? "unknown");
  }
  const writable = [
    scope.root,
    scope.tmpdir,
    ...DEVICE_PATHS,
    ...(config.agent.shell_sandbox_allowed_paths ?? []).map((p) => path.resolve(scope.root, expandHome(p))),
  ];
  const prefix = [probe.helper];
  for (const p of writable) prefix.push("--write", p);
  // Reads are confined unless the user opts out: otherwise cat/grep/python read anything the user can.
  if (config.agent.shell_sandbox_confine_reads !== false) {
    prefix.push("--confine-reads");
    for (const p of confinedReadPaths(config, scope.root, scope.reads)) prefix.push("--read", p);
  }
  if (probe.isolation.ok) {
    const layout = scope.layout ?? protectedLayout(scope.root);
    for (const rel of layout.readOnly) prefix.push("--ro", path.join(scope.root, rel));
  }
  const cap = maxProcesses(config);
  prefix.push("--nproc", String(cap));
  const t = tracking(config, scope, cap);
  prefix.push(...t.args, "--");
  const plan: SandboxPlan = { status: "landlock", prefix, readOnly: probe.isolation.ok, limits: t.limits };
  if (t.cgroup) plan.cgroup = t.cgroup;
  if (t.memoryCgroup) plan.memoryCgroup = t.memoryCgroup;
  return plan;
}

export function maxProcesses(config: ToolbeltConfig): number {
  return config.agent.shell_max_processes ?? DEFAULT_MAX_PROCESSES;
}
