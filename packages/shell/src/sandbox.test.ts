import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Payload, Session } from "@toolbelt/core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { lacks } from "../../../test-support/capability.js";
import { family } from "./index.js";
import type { ShellResult, ShellSessionView, ShellStarted } from "./payloads.js";
import { landlockHere, openSession, removeDir, tempDir } from "./test-harness.js";

const here = landlockHere();
const noLandlock = lacks(here.lack, !here.ok && here.reason);

let root: string;
let outside: string;
const sessions: Session[] = [];

beforeAll(() => {
  root = tempDir("tb-sandbox-root-");
  outside = tempDir("tb-sandbox-outside-");
});

afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
});

afterAll(() => {
  removeDir(root);
  removeDir(outside);
});

async function open(config: Record<string, unknown> = {}): Promise<Session> {
  const s = await openSession(root, config);
  sessions.push(s);
  return s;
}

async function run(s: Session, command: string, extra: Record<string, unknown> = {}): Promise<ShellResult> {
  const payload = await s.call("shell", { command, ...extra });
  expect(payload.kind, JSON.stringify(payload)).toBe("shell_result");
  return payload as unknown as ShellResult;
}

describe.skipIf(noLandlock)("Landlock sandbox (real escape attempts)", () => {
  it("confines writes: outside the root, through a symlink, renaming out, truncating, deleting, linking", async () => {
    const s = await open({ agent: { shell_sandbox: "required" } });
    writeFileSync(path.join(outside, "keep.txt"), "precious\n");
    writeFileSync(path.join(root, "inside.txt"), "inside\n");
    symlinkSync(outside, path.join(root, "link-out"));
    const attempts: Array<[string, string]> = [
      ["write outside", `echo pwned > ${outside}/new.txt`],
      ["write through a symlink", "echo pwned > link-out/via-link.txt"],
      ["rename out", `mv inside.txt ${outside}/moved.txt`],
      ["truncate outside", `truncate -s 0 ${outside}/keep.txt`],
      ["truncate by redirection", `: > ${outside}/keep.txt`],
      ["append outside", `echo more >> ${outside}/keep.txt`],
      ["delete outside", `rm -f ${outside}/keep.txt`],
      ["mkdir outside", `mkdir ${outside}/dir`],
      ["hard link out", `ln inside.txt ${outside}/hard.txt`],
      ["symlink created outside", `ln -s /etc/passwd ${outside}/sym`],
    ];
    for (const [what, command] of attempts) {
      const r = await run(s, command);
      expect(r.sandbox, what).toBe("landlock");
      expect(r.exit_code, `${what}: ${r.stdout}`).not.toBe(0);
      expect(r.stdout, what).toMatch(/Permission denied|Operation not permitted|cannot/i);
    }
    expect(readFileSync(path.join(outside, "keep.txt"), "utf8")).toBe("precious\n");
    for (const name of ["new.txt", "via-link.txt", "moved.txt", "dir", "hard.txt", "sym"]) {
      expect(existsSync(path.join(outside, name)), name).toBe(false);
    }
    expect(readFileSync(path.join(root, "inside.txt"), "utf8")).toBe("inside\n");
  });

  it("allows the root, the session TMPDIR and device files", async () => {
    const s = await open();
    mkdirSync(path.join(root, "work"), { recursive: true });
    const r = await run(
      s,
      'echo a > work/a.txt && mv work/a.txt work/b.txt && mkdir -p work/d && mv work/b.txt work/d/ && rm -r work/d && echo t > "$TMPDIR/t" && cat "$TMPDIR/t" && echo n > /dev/null && echo ok',
    );
    expect(r).toMatchObject({ exit_code: 0, sandbox: "landlock", stdout: "t\nok\n" });
  });

  it("widens the scope with shell_sandbox_allowed_paths", async () => {
    const s = await open({ agent: { shell_sandbox_allowed_paths: [outside] } });
    const r = await run(s, `echo allowed > ${outside}/allowed.txt && cat ${outside}/allowed.txt`);
    expect(r).toMatchObject({ exit_code: 0, stdout: "allowed\n" });
  });

  it("confines reads by default; shell_sandbox_confine_reads: false opts out", async () => {
    writeFileSync(path.join(outside, "secret.txt"), "secret\n");
    writeFileSync(path.join(root, "mine.txt"), "mine\n");
    const s = await open();
    const denied = await run(s, `cat ${outside}/secret.txt`);
    expect(denied.exit_code).not.toBe(0);
    expect(denied.stdout).toMatch(/Permission denied/);
    const allowed = await run(
      s,
      "cat mine.txt && ls /usr/bin >/dev/null && node -e 'console.log(1)' && echo ok",
    );
    expect(allowed).toMatchObject({ exit_code: 0, stdout: "mine\n1\nok\n" });
    const loose = await open({ agent: { shell_sandbox_confine_reads: false } });
    expect(await run(loose, `cat ${outside}/secret.txt`)).toMatchObject({ exit_code: 0, stdout: "secret\n" });
  });

  it("keeps declared extras readable (not writable) while reads are confined", async () => {
    writeFileSync(path.join(outside, "shared.txt"), "shared\n");
    const s = await open({ agent: { shell_sandbox_read_paths: [outside] } });
    expect(await run(s, `cat ${outside}/shared.txt`)).toMatchObject({ exit_code: 0, stdout: "shared\n" });
    const write = await run(s, `echo x > ${outside}/new.txt; echo code=$?`);
    expect(write.stdout).toMatch(/Permission denied[\s\S]*code=1/);
  });

  it("sandboxes background and tty commands as well", async () => {
    const s = await open();
    const tty = await run(s, `echo x > ${outside}/tty.txt; echo code=$?`, { tty: true });
    expect(tty.stdout).toMatch(/Permission denied[\s\S]*code=1/);
    const started = (await s.call("shell", {
      command: `echo x > ${outside}/bg.txt; echo code=$?`,
      run_in_background: true,
    })) as unknown as ShellStarted;
    expect(started.sandbox).toBe("landlock");
    const v = (await s.call("shell_session", {
      operation: "read",
      shell_id: started.shell_id,
      filter: "code=",
      wait_ms: 5000,
    })) as unknown as ShellSessionView;
    expect(v.output).toBe("code=1");
    expect(existsSync(path.join(outside, "tty.txt"))).toBe(false);
    expect(existsSync(path.join(outside, "bg.txt"))).toBe(false);
  });

  it("reports the Landlock ABI, the helper and the pty in doctor", async () => {
    const checks = await family.doctor?.({ root, config: (await open()).config });
    const byName = Object.fromEntries((checks ?? []).map((c) => [c.name, c]));
    expect(byName.landlock).toMatchObject({
      status: "ok",
      detail: expect.stringMatching(/^Landlock ABI \d+$/),
    });
    expect(byName["sandbox-helper"]?.status).toBe("ok");
    expect(byName.pty?.status).toBe("ok");
  });
});

describe("sandbox modes without the helper", () => {
  const saved = process.env.TOOLBELT_SANDBOX_HELPER;
  beforeAll(() => {
    process.env.TOOLBELT_SANDBOX_HELPER = path.join(tempDir(), "no-such-helper");
  });
  afterAll(() => {
    if (saved === undefined) delete process.env.TOOLBELT_SANDBOX_HELPER;
    else process.env.TOOLBELT_SANDBOX_HELPER = saved;
  });

  it("required refuses with a clear error", async () => {
    const s = await open({ agent: { shell_sandbox: "required" } });
    const r: Payload = await s.call("shell", { command: "echo should-not-run" });
    expect(r).toMatchObject({ kind: "error", code: "EUNAVAILABLE" });
    expect(String(r.message)).toMatch(/"required".*sandbox is unavailable.*helper is not built/);
  });

  it("best-effort runs and says sandbox: unavailable in every result", async () => {
    const s = await open();
    const r = await run(s, "echo ran");
    expect(r).toMatchObject({ stdout: "ran\n", sandbox: "unavailable" });
    expect(r.sandbox_reason).toMatch(/helper is not built/);
    const bg = (await s.call("shell", {
      command: "true",
      run_in_background: true,
    })) as unknown as ShellStarted;
    expect(bg.sandbox).toBe("unavailable");
    const { text } = await s.callWithText("shell", { command: "true" });
    expect(text).toMatch(/^# Sandbox: unavailable \(/m);
  });

  it("off runs without the helper and says so", async () => {
    const s = await open({ agent: { shell_sandbox: "off" } });
    const r = await run(s, `echo out > ${outside}/off.txt && echo wrote`);
    expect(r).toMatchObject({ stdout: "wrote\n", sandbox: "off" });
  });

  it("doctor reports the helper as missing", async () => {
    const checks = await family.doctor?.({ root, config: (await open()).config });
    const helper = checks?.find((c) => c.name === "sandbox-helper");
    expect(helper?.status).toBe("missing");
  });
});
