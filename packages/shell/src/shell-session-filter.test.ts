import type { Payload, Session } from "@toolbelt/core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ShellStarted } from "./payloads.js";
import { openSession, removeDir, tempDir } from "./test-harness.js";

let root: string;
const open: Session[] = [];

beforeAll(() => {
  root = tempDir();
});

afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

afterAll(() => {
  removeDir(root);
});

const evil = `${"a".repeat(40)}!\\n${"x".repeat(40)}!`;

describe("shell_session filter bounds", () => {
  it.each(["(a+)+$", "(a|aa)+$", "(x+x+)+y"])(
    "answers ETIMEOUT naming the budget for %s, and the session still reads afterwards",
    async (filter) => {
      const s = await openSession(root);
      open.push(s);
      const started = (await s.call("shell", {
        command: `printf '${evil}\\nok line\\n'; sleep 30`,
        run_in_background: true,
      })) as Payload & ShellStarted;
      expect(started.kind, JSON.stringify(started)).toBe("shell_started");
      // The evil line must be buffered before the filtered read, or there is nothing to time out on.
      const unfiltered = async () =>
        JSON.stringify(
          await s.call("shell_session", {
            operation: "read",
            shell_id: started.shell_id,
            cursor: 0,
            wait_ms: 0,
          }),
        );
      await expect.poll(unfiltered, { timeout: 10_000 }).toContain("ok line");
      const timedOut: Payload = await s.call("shell_session", {
        operation: "read",
        shell_id: started.shell_id,
        cursor: 0,
        filter,
        wait_ms: 5000,
      });
      expect(timedOut).toMatchObject({ kind: "error", code: "ETIMEOUT" });
      expect(String(timedOut.message)).toMatch(/filter .* did not finish within its budget of 1000 ms/);
      const after = await s.call("shell_session", {
        operation: "read",
        shell_id: started.shell_id,
        cursor: 0,
        filter: "^ok",
        wait_ms: 0,
      });
      expect(after).toMatchObject({ kind: "shell_session", output: "ok line" });
      await s.call("shell_session", { operation: "kill", shell_id: started.shell_id });
    },
  );
});
