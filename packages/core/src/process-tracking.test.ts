import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { transformSync } from "esbuild";
import { afterAll, describe, expect, it } from "vitest";
import { lacks } from "../../../test-support/capability.js";
import { trackedProcessGroups, trackProcessGroup, untrackProcessGroup } from "./process-tracking.js";

const dir = mkdtempSync(path.join(os.tmpdir(), "tb-track-"));
const noGroups = lacks("linux", process.platform === "win32" && "Windows has no process groups");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // A zombie nobody reaped yet still answers signal 0.
  const stat = spawnSync("cat", [`/proc/${pid}/stat`], { encoding: "utf8" }).stdout;
  return !/^\d+ \(.*\) [ZX]/.test(stat);
}

describe("process-group tracking", () => {
  it("keeps a set of groups, ignores bogus ids, forgets untracked ones", () => {
    trackProcessGroup(0);
    trackProcessGroup(-5);
    trackProcessGroup(987_654_321);
    expect(trackedProcessGroups()).toContain(987_654_321);
    expect(trackedProcessGroups()).not.toContain(0);
    untrackProcessGroup(987_654_321);
    expect(trackedProcessGroups()).not.toContain(987_654_321);
  });

  it.skipIf(noGroups)(
    "kills a tracked group (leader and members) when the host exits, and spares an untracked one",
    async () => {
      // The real module, compiled as is, in a real host process that starts two groups and exits.
      const source = fileURLToPath(new URL("./process-tracking.ts", import.meta.url));
      const compiled = path.join(dir, "process-tracking.mjs");
      writeFileSync(
        compiled,
        transformSync(readFileSync(source, "utf8"), { loader: "ts", format: "esm" }).code,
      );
      const host = path.join(dir, "host.mjs");
      writeFileSync(
        host,
        `import { spawn } from "node:child_process";
import { trackProcessGroup, untrackProcessGroup } from ${JSON.stringify(compiled)};
// Each group says when its background member exists; the host exits once both have.
const start = () =>
  spawn("sh", ["-c", "sleep 3411 & echo started; sleep 3412"], { detached: true, stdio: ["ignore", "pipe", "ignore"] });
const kept = start(), spared = start();
trackProcessGroup(kept.pid); trackProcessGroup(spared.pid); untrackProcessGroup(spared.pid);
let ready = 0;
for (const group of [kept, spared])
  group.stdout.once("data", () => { if (++ready === 2) { console.log(kept.pid + " " + spared.pid); process.exit(0); } });
`,
      );
      const child = spawn(process.execPath, [host], { stdio: ["ignore", "pipe", "inherit"] });
      let out = "";
      child.stdout.on("data", (d) => {
        out += d;
      });
      await new Promise((resolve) => child.on("close", resolve));
      const [kept, spared] = out.trim().split(" ").map(Number) as [number, number];
      try {
        // The kill is sent as the host exits; wait for it to land rather than for a fixed time.
        await expect.poll(() => alive(kept), { timeout: 10_000 }).toBe(false);
        expect(alive(spared)).toBe(true);
      } finally {
        for (const pgid of [kept, spared]) {
          try {
            process.kill(-pgid, "SIGKILL");
          } catch {
            // Gone.
          }
        }
      }
    },
  );
});
