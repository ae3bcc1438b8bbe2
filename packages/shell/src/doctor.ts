import type { DoctorCheck, DoctorContext } from "@toolbelt/core";
import { cgroupSupport, memorySupport } from "./cgroup.js";
import { networkMode, sandboxMode } from "./contrib.js";
import { shell } from "./launch.js";
import { MAX_LAYOUT_DIRS } from "./protected-layout.js";
import { loadPty } from "./pty.js";
import {
  commandLimits,
  LANDLOCK_NET_ABI,
  landlockEnabledInKernel,
  maxProcesses,
  networkOff,
  networkOffMechanism,
  networkOffUnavailable,
  probeSandbox,
  proxyNamespace,
  sandboxProtectedPaths,
} from "./sandbox.js";

/** What `toolbelt doctor` reports for the shell: the shell, the Landlock ABI, the helper, the pty. */
export async function shellDoctor(ctx: DoctorContext): Promise<DoctorCheck[]> {
  const probe = probeSandbox();
  const mode = sandboxMode(ctx.config);
  const checks: DoctorCheck[] = [{ name: "shell", status: "ok", detail: shell() }];
  if (probe.helper) {
    checks.push({ name: "sandbox-helper", status: "ok", detail: probe.helper });
  } else {
    checks.push({ name: "sandbox-helper", status: "missing", detail: probe.reason ?? "not found" });
  }
  if (probe.abi > 0) {
    checks.push({ name: "landlock", status: "ok", detail: `Landlock ABI ${probe.abi}` });
  } else if (probe.helper) {
    checks.push({ name: "landlock", status: "unavailable", detail: probe.reason ?? "no Landlock" });
  } else {
    const lsm = landlockEnabledInKernel();
    checks.push({
      name: "landlock",
      status: lsm ? "skipped" : "unavailable",
      detail: lsm
        ? "the kernel lists landlock among its security modules; the ABI is probed by the sandbox helper, which is missing"
        : (probe.reason ?? "no Landlock"),
    });
  }
  const usable = probe.abi > 0;
  checks.push({
    name: "sandbox",
    status: mode === "off" ? "skipped" : usable ? "ok" : "unavailable",
    detail:
      mode === "off"
        ? "agent.shell_sandbox is off"
        : usable
          ? `agent.shell_sandbox ${mode}: commands run under Landlock`
          : mode === "required"
            ? "agent.shell_sandbox is required but Landlock is unavailable: the shell refuses to run"
            : "agent.shell_sandbox best-effort: commands run unsandboxed and results say sandbox: unavailable",
  });
  checks.push(...trackingChecks(ctx, usable && mode !== "off"));
  checks.push(networkCheck(ctx));
  checks.push(socketsCheck(ctx));
  const pty = await loadPty();
  checks.push({ name: "pty", status: pty.module ? "ok" : "missing", detail: pty.detail });
  return checks;
}

/** Read-only protected paths, process tracking and the process cap: what applies here, and why not. */
function trackingChecks(ctx: DoctorContext, sandboxed: boolean): DoctorCheck[] {
  const probe = probeSandbox();
  const cgroup = cgroupSupport();
  const checks: DoctorCheck[] = [];
  const protectedList = sandboxProtectedPaths().join(", ");
  checks.push({
    name: "sandbox-read-only",
    status: !sandboxed ? "skipped" : probe.isolation.ok ? "ok" : "unavailable",
    detail: !sandboxed
      ? "commands do not run under Landlock, so protected paths are not bound read-only"
      : probe.isolation.ok
        ? `${protectedList} are read-only for commands (${probe.isolation.detail}), and so are the hooks and config of nested repositories and submodules, .git files and HEAD files found within the first ${MAX_LAYOUT_DIRS} directories of the root; files created later are reported as protected_changed`
        : `protected paths stay writable for commands (${probe.isolation.detail}); changes are reported as protected_changed`,
  });
  const root = typeof process.getuid === "function" && process.getuid() === 0;
  const pidns = sandboxed && probe.isolation.ok && probe.isolation.pidNamespace === true;
  checks.push({
    name: "sandbox-proc",
    status: !sandboxed ? "skipped" : pidns ? "ok" : "unavailable",
    detail: !sandboxed
      ? "commands do not run under the sandbox, so they can read other processes' environments through /proc"
      : pidns
        ? "commands get a PID namespace and a /proc of their own: other processes' environments (toolbelt's, the CI runner's) stay hidden"
        : root && probe.isolation.ok
          ? "no PID namespace here: /proc/<pid>/environ and mem of the command's ancestors are masked instead; other processes stay readable"
          : "no PID namespace here: a command can read the environment of other processes of this user through /proc",
  });
  checks.push({
    name: "process-tracking",
    status: probe.runs ? "ok" : "unavailable",
    detail: probe.runs
      ? `${cgroup.base ? `a cgroup per command under ${cgroup.base} (${cgroup.kind})` : `no cgroup (${cgroup.reason})`}; a watcher kills a command and its descendants when toolbelt dies`
      : "without the sandbox helper, commands are tracked by TOOLBELT_SHELL_MARK and process group only: a process that drops the variable and leaves the group escapes, and background commands outlive a killed toolbelt",
  });
  const cap = maxProcesses(ctx.config);
  const caps: string[] = [];
  if (sandboxed && cgroup.pidsMax) caps.push(`cgroup pids.max ${cap}`);
  if (sandboxed && !root) caps.push(`RLIMIT_NPROC +${cap}`);
  checks.push({
    name: "process-cap",
    status: !sandboxed ? "skipped" : caps.length ? "ok" : "unavailable",
    detail: !sandboxed
      ? "the process cap applies to sandboxed commands only"
      : caps.length
        ? `${caps.join(" and ")} (agent.shell_max_processes)`
        : "no cap applies: running as root (RLIMIT_NPROC is not enforced) and no cgroup with pids.max can be created",
  });
  const limits = commandLimits(ctx.config);
  const memory = memorySupport();
  checks.push({
    name: "memory-limit",
    status: !probe.runs ? "unavailable" : memory.kind ? "ok" : "unavailable",
    detail: !probe.runs
      ? "without the sandbox helper, commands run without a memory limit"
      : memory.kind
        ? `${limits.memoryMib} MiB per command (agent.shell_max_memory_mib), cgroup ${memory.kind} memory controller: a command over it is killed and the result says limits_hit: memory`
        : `no memory limit can be set here (${memory.reason}): a command can use all the machine's memory`,
  });
  checks.push({
    name: "file-size-limit",
    status: probe.runs ? "ok" : "unavailable",
    detail: probe.runs
      ? `${limits.fileMib} MiB per file a command writes (agent.shell_max_file_mib, RLIMIT_FSIZE; as root without CAP_SYS_RESOURCE, so it cannot be lifted): writing past it fails and the result says limits_hit: file_size. It bounds each file, not the total a command writes`
      : "without the sandbox helper, commands run without a file-size limit",
  });
  return checks;
}

/** Which mechanism enforces agent.shell_network "off" here, and exactly what it blocks. */
function networkCheck(ctx: DoctorContext): DoctorCheck {
  const probe = probeSandbox();
  const mode = networkMode(ctx.config);
  if (mode.kind === "allow") {
    const listed = mode.entries.map((e) => e.text).join(", ") || "no host";
    const netns = proxyNamespace(probe);
    return netns.ok
      ? {
          name: "sandbox-network",
          status: "ok",
          detail: `agent.shell_network allows ${mode.entries.length} entr${mode.entries.length === 1 ? "y" : "ies"} (${listed}): each command gets a network namespace of its own whose only way out is toolbelt's HTTP/HTTPS proxy (HTTP_PROXY, HTTPS_PROXY set), which resolves each name once and refuses unlisted hosts and private addresses not listed as IPs; no UDP or DNS inside; language servers get no network`,
        }
      : {
          name: "sandbox-network",
          status: "unavailable",
          detail: `agent.shell_network allows only listed hosts (${listed}), which needs a network namespace per command, and there is none here (${netns.why}): shell commands refuse to run`,
        };
  }
  const mechanism = networkOffMechanism(probe);
  const off = networkOff(ctx.config);
  const setting = off ? "agent.shell_network is off" : 'agent.shell_network is on (set "off" to use it)';
  if (mechanism === "netns") {
    return {
      name: "sandbox-network",
      status: off ? "ok" : "skipped",
      detail: `${setting}; network off uses a network namespace per command: no outbound TCP, UDP (DNS included) or other protocol, no abstract unix sockets of the host; 127.0.0.1 is the command's own loopback`,
    };
  }
  if (mechanism === "landlock") {
    const scope = probe.abi >= 6 ? "; abstract unix sockets scoped to the command" : "";
    return {
      name: "sandbox-network",
      status: off ? "ok" : "skipped",
      detail: `${setting}; network off uses Landlock network rules (ABI ${probe.abi} >= ${LANDLOCK_NET_ABI}): every TCP connect and bind is refused, loopback included; UDP (DNS) is not blocked${scope}`,
    };
  }
  return {
    name: "sandbox-network",
    status: off ? "unavailable" : "skipped",
    detail: `${setting}; network off cannot be enforced here (${networkOffUnavailable(probe)})${off ? ": shell commands and sandboxed language servers refuse to run" : ""}`,
  };
}

/** Whether network off also hides the unix sockets local daemons listen on (docker, dbus, databases). */
function socketsCheck(ctx: DoctorContext): DoctorCheck {
  const probe = probeSandbox();
  // An allow list hides them as network off does (its proxy's own socket excepted).
  const off = networkMode(ctx.config).kind !== "on";
  const mechanism = networkOffMechanism(probe);
  if (mechanism === "unavailable")
    return {
      name: "sandbox-unix-sockets",
      status: off ? "unavailable" : "skipped",
      detail: "network off cannot be enforced here at all (see sandbox-network)",
    };
  if (probe.isolation.ok)
    return {
      name: "sandbox-unix-sockets",
      status: off ? "ok" : "skipped",
      detail: `${off ? "agent.shell_network is off" : 'with agent.shell_network "off"'}: every unix socket a daemon listens on in the file system (docker, dbus, a database under /run, /var/run, /tmp…) has /dev/null bound over it for the command, so connecting is refused; sockets created after the command started are not covered`,
    };
  return {
    name: "sandbox-unix-sockets",
    status: off ? "unavailable" : "skipped",
    detail: `NOT HIDDEN: no private mount namespace here (${probe.isolation.detail}), so with agent.shell_network "off" commands can still connect to the unix sockets of local daemons (docker, dbus, databases): a docker socket is root on this machine`,
  };
}
