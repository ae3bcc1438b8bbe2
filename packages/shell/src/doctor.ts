import { type DoctorCheck, type DoctorContext, sandboxMode } from "@toolbelt/core";
import { shell } from "./launch.js";
import { loadPty } from "./pty.js";
import { landlockEnabledInKernel, probeSandbox } from "./sandbox.js";

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
  const pty = await loadPty();
  checks.push({ name: "pty", status: pty.module ? "ok" : "missing", detail: pty.detail });
  return checks;
}
