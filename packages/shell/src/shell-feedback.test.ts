import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parseToolText, type Session } from "@toolbelt/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lacks } from "../../../test-support/capability.js";
import type { ShellResult } from "./payloads.js";
import { sandboxDenials, writableSet } from "./sandbox-denials.js";
import { landlockHere, openSession, removeDir, tempDir } from "./test-harness.js";

let root: string;
let session: Session;
const landlock = landlockHere();
const noLandlock = lacks(landlock.lack, !landlock.ok && landlock.reason);

beforeAll(async () => {
  root = tempDir();
  mkdirSync(path.join(root, "configs"));
  writeFileSync(path.join(root, "configs", "app.json"), "{}\n");
  session = await openSession(root);
});

afterAll(async () => {
  await session.close();
  removeDir(root);
});

describe("shell feedback a person can follow", () => {
  it("streams a foreground command's output as shell_output events while it runs", async () => {
    const seen: Array<{ shell_id: string; data: string; seq: number }> = [];
    let resultSeq = -1;
    // The command waits until the test has seen its first line as an event: only streaming ends it.
    const off = session.on("shell_output", (e) => {
      seen.push(e);
      if (e.data.includes("one")) writeFileSync(path.join(root, "go"), "");
    });
    const offResult = session.on("tool_result", (e) => {
      resultSeq = e.seq;
    });
    const payload = await session.call(
      "shell",
      { command: "echo one; while [ ! -f go ]; do sleep 0.05; done; echo two", timeout: 60 },
      { callId: "c1" },
    );
    off();
    offResult();
    expect(payload).toMatchObject({ kind: "shell_result", exit_code: 0 });
    expect(seen.map((e) => e.data).join("")).toBe("one\ntwo\n");
    expect(seen.every((e) => e.shell_id === "c1")).toBe(true);
    expect(seen.at(-1)?.seq).toBeLessThan(resultSeq);
  });

  it("a timeout names the limit", async () => {
    const { payload, text } = await session.callWithText("shell", { command: "sleep 30", timeout: 0.5 });
    const r = payload as unknown as ShellResult;
    expect(r.timed_out).toBe(true);
    expect(r.timeout_seconds).toBe(0.5);
    expect(parseToolText(text).headers["Timed-Out"]).toContain("after the 0.5 s limit (the `timeout` input)");
  });

  it.skipIf(noLandlock)(
    `a write Landlock refused says the sandbox denied it (${landlock.reason})`,
    async () => {
      const { payload, text } = await session.callWithText("shell", {
        command: "touch /usr/toolbelt-denied-probe; echo hi > ../outside-root.txt; exit 0",
      });
      const r = payload as unknown as ShellResult;
      expect(r.sandbox).toBe("landlock");
      expect(r.sandbox_denied?.map((d) => d.path)).toEqual(
        expect.arrayContaining(["/usr/toolbelt-denied-probe", "../outside-root.txt"]),
      );
      const headers = parseToolText(text).headers;
      expect(headers["Sandbox-Denied"]).toContain("the sandbox denied writing /usr/toolbelt-denied-probe");
      expect(headers["Sandbox-Note"]).toContain("the project root");
    },
  );

  it.skipIf(noLandlock)(
    `a permission error inside the writable set is not blamed on the sandbox (${landlock.reason})`,
    async () => {
      const r = (await session.call("shell", {
        command: "mkdir -p ro && chmod 500 ro && touch ro/x; chmod 700 ro; exit 0",
      })) as unknown as ShellResult;
      // root ignores file modes: only when the command really was refused is there anything to say.
      if (/Permission denied/.test(r.stdout)) {
        expect(r.sandbox_denied).toBeUndefined();
        expect(r.sandbox_note).toContain("the command ran sandboxed");
      } else {
        console.log("running as root: file modes do not refuse writes here");
        expect(r.sandbox_note).toBeUndefined();
      }
    },
  );
});

describe("sandboxDenials", () => {
  const set = writableSet(
    [
      "helper",
      "--write",
      "/p",
      "--write",
      "/tmp/t",
      "--write",
      "/dev/null",
      "--ro",
      "/p/configs/app.json",
      "--",
    ],
    "/p",
    "/tmp/t",
  );

  it("reads the path from the usual messages and classifies it", () => {
    const out = [
      "touch: cannot touch '/etc/x': Permission denied",
      "mkdir: cannot create directory ‘/opt/y’: Permission denied",
      "bash: line 1: configs/app.json: Read-only file system",
      "Error: EACCES: permission denied, open '/home/u/.npmrc'",
      "sh: 1: cannot create /var/z: Permission denied",
      "touch: cannot touch 'src/ok.txt': Permission denied",
    ].join("\n");
    expect(sandboxDenials(out, "/p", set)).toEqual([
      { path: "/etc/x", why: "outside_writable" },
      { path: "/opt/y", why: "outside_writable" },
      { path: "configs/app.json", why: "protected_read_only" },
      { path: "/home/u/.npmrc", why: "outside_writable" },
      { path: "/var/z", why: "outside_writable" },
    ]);
  });

  it("does not take the reporting program's own path for a refused one", () => {
    const out = [
      "/bin/bash: line 1: /etc/x: Permission denied",
      "/usr/bin/env: '/opt/y': Permission denied",
      "/bin/bash: /home/u/.bashrc: Permission denied",
    ].join("\n");
    expect(sandboxDenials(out, "/p", set)).toEqual([
      { path: "/etc/x", why: "outside_writable" },
      { path: "/opt/y", why: "outside_writable" },
      { path: "/home/u/.bashrc", why: "outside_writable" },
    ]);
  });

  it("says nothing for output with no denial", () => {
    expect(sandboxDenials("wrote /etc/x fine\n", "/p", set)).toEqual([]);
  });

  it("tells an unreadable path from an unwritable one when reads are confined", () => {
    const confined = writableSet(
      ["helper", "--write", "/p", "--confine-reads", "--read", "/usr", "--read", "/home/u/.npm", "--"],
      "/p",
      "/tmp/t",
    );
    const out = [
      "cat: /home/u/.ssh/id_rsa: Permission denied",
      "touch: cannot touch '/usr/x': Permission denied",
      "Error: EACCES: permission denied, open '/home/u/.npm/_logs/x.log'",
    ].join("\n");
    expect(sandboxDenials(out, "/p", confined)).toEqual([
      { path: "/home/u/.ssh/id_rsa", why: "outside_readable" },
      { path: "/usr/x", why: "outside_writable" },
      { path: "/home/u/.npm/_logs/x.log", why: "outside_writable" },
    ]);
  });
});
