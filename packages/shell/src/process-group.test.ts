import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { MARK_VARIABLE } from "./environment.js";
import { liveProcesses, markedProcesses, terminate } from "./process-group.js";

describe("marked processes", () => {
  it("finds a process by any of the marks it carries (nested toolbelts), and only by a whole mark", async () => {
    const child = spawn("sleep", ["3401"], {
      env: { ...process.env, [MARK_VARIABLE]: "outer-mark:inner-mark" },
      detached: true,
      stdio: "ignore",
    });
    try {
      await expect.poll(() => markedProcesses("outer-mark"), { timeout: 10_000 }).toContain(child.pid);
      expect(markedProcesses("inner-mark")).toContain(child.pid);
      expect(markedProcesses("inner")).not.toContain(child.pid);
      expect(markedProcesses("outer-mark", child.pid as number)).not.toContain(child.pid);
    } finally {
      child.kill("SIGKILL");
    }
  });

  it("terminate ends the group and processes that left it", async () => {
    const mark = `mark-${process.pid}-${Date.now()}`;
    const child = spawn("bash", ["-c", "sleep 3402 & setsid sleep 3403 & trap '' TERM; sleep 3404"], {
      env: { ...process.env, [MARK_VARIABLE]: mark },
      detached: true,
      stdio: "ignore",
    });
    const target = { pgid: child.pid as number, mark };
    try {
      // bash execs its last command, so: sleep 3404 (the leader), sleep 3402, and the setsid one.
      await expect.poll(() => liveProcesses(target).length, { timeout: 10_000 }).toBe(3);
      const result = await terminate(target, 300);
      expect(result).toEqual({ signal: "SIGKILL", survivors: 0 });
      expect(liveProcesses(target)).toEqual([]);
    } finally {
      for (const pid of liveProcesses(target)) process.kill(pid, "SIGKILL");
    }
  });
});
