import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Payload, Session } from "@toolbelt/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lacks } from "../../../../test-support/capability.js";
import { createToolbelt } from "../../src/create.js";

// After many timeouts and kills no process of ours is left; an output flood keeps memory bounded.

const TIMEOUTS = Number(process.env.SHELL_TIMEOUTS ?? 12);
const BACKGROUND = Number(process.env.SHELL_BACKGROUND ?? 12);
const MARK = `7${String(process.pid).padStart(6, "0")}`;

let root: string;
let session: Session;

/** Live processes whose command line carries our marker (sleep <MARK>.<n>). */
function marked(): string[] {
  const found: string[] = [];
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ");
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      if (cmd.includes(`${MARK}.`) && !/\) Z /.test(stat)) found.push(`${pid}: ${cmd}`);
    } catch {
      // The process ended while we looked.
    }
  }
  return found;
}

async function settle(): Promise<string[]> {
  for (let i = 0; i < 50; i++) {
    const left = marked();
    if (left.length === 0) return left;
    await new Promise((r) => setTimeout(r, 100));
  }
  return marked();
}

beforeAll(async () => {
  root = realpathSync(mkdtempSync(path.join(os.tmpdir(), "tb-shrel-")));
  session = await createToolbelt({ root, allow: ["shell"], config: { agent: { shell_sandbox: "off" } } });
});
afterAll(async () => {
  await session?.close();
  rmSync(root, { recursive: true, force: true });
});

const noProc = lacks("linux", process.platform !== "linux" && "it reads /proc, which only Linux has");

describe.skipIf(noProc)("shell reliability", () => {
  it(`${TIMEOUTS} timed-out commands with grandchildren leave no process behind`, async () => {
    for (let i = 0; i < TIMEOUTS; i++) {
      const result: Payload = await session.call("shell", {
        command: `sleep ${MARK}.${i} & (sleep ${MARK}.${i} &) ; sh -c 'sleep ${MARK}.${i}' & wait`,
        timeout: 1,
      });
      expect(result.kind).not.toBe("error");
      expect(result.exit_code).not.toBe(0);
    }
    expect(await settle()).toEqual([]);
  }, 120_000);

  it(`${BACKGROUND} background commands killed or left to the session's end leave no process`, async () => {
    const ids: string[] = [];
    for (let i = 0; i < BACKGROUND; i++) {
      const started: Payload = await session.call("shell", {
        command: `sleep ${MARK}.${100 + i} & sleep ${MARK}.${100 + i}`,
        run_in_background: true,
      });
      expect(started.shell_id).toBeTruthy();
      ids.push(String(started.shell_id));
    }
    for (const id of ids.slice(0, BACKGROUND / 2)) {
      const killed = await session.call("shell_session", { operation: "kill", shell_id: id });
      expect(killed.kind).not.toBe("error");
    }
    await session.close();
    expect(await settle()).toEqual([]);
    session = await createToolbelt({ root, allow: ["shell"], config: { agent: { shell_sandbox: "off" } } });
  }, 120_000);

  it("a 200 MB output flood keeps this process's memory bounded", async () => {
    const before = process.memoryUsage().rss;
    const result: Payload = await session.call("shell", {
      command: "head -c 200000000 /dev/zero | tr '\\0' 'x'",
      timeout: 60,
    });
    const grown = process.memoryUsage().rss - before;
    expect(result.kind).not.toBe("error");
    expect(String(result.stdout).length).toBeLessThan(100_000);
    expect(grown).toBeLessThan(100 * 1024 * 1024);
  }, 120_000);
});
