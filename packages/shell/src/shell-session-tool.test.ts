import type { Payload, Session } from "@toolbelt/core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ShellSessionList, ShellSessionView, ShellStarted } from "./payloads.js";
import { ShellState } from "./shell-state.js";
import { openSession, processesWithArgs, removeDir, sleep, tempDir } from "./test-harness.js";

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

async function session(config: Record<string, unknown> = {}): Promise<Session> {
  const s = await openSession(root, config);
  open.push(s);
  return s;
}

async function start(
  s: Session,
  command: string,
  extra: Record<string, unknown> = {},
): Promise<ShellStarted> {
  const payload = await s.call("shell", { command, run_in_background: true, ...extra });
  expect(payload.kind, JSON.stringify(payload)).toBe("shell_started");
  return payload as unknown as ShellStarted;
}

async function op(s: Session, input: Record<string, unknown>): Promise<ShellSessionView> {
  const payload = await s.call("shell_session", input);
  expect(payload.kind, JSON.stringify(payload)).toBe("shell_session");
  return payload as unknown as ShellSessionView;
}

/** Reads until the session has exited (the process, not its output, says so). */
async function untilExited(s: Session, shellId: string): Promise<ShellSessionView> {
  let view: ShellSessionView | undefined;
  await expect
    .poll(
      async () => {
        view = await op(s, { operation: "read", shell_id: shellId, cursor: 0, wait_ms: 0 });
        return view.status;
      },
      { timeout: 10_000 },
    )
    .not.toBe("running");
  return view as ShellSessionView;
}

describe("background dev server", () => {
  it("keeps serving across calls and dies when the toolbelt session closes", async () => {
    const s = await openSession(root);
    const server = `node -e "const http=require('http');const srv=http.createServer((q,r)=>{console.log('hit '+q.url);r.end('hello '+q.url)});srv.listen(0,'127.0.0.1',()=>console.log('listening on '+srv.address().port))//tb-dev-4401"`;
    const started = await start(s, server);
    const ready = await op(s, {
      operation: "read",
      shell_id: started.shell_id,
      filter: "listening on",
      wait_ms: 15_000,
    });
    const port = Number(/listening on (\d+)/.exec(ready.output)?.[1]);
    expect(port).toBeGreaterThan(0);

    expect(await (await fetch(`http://127.0.0.1:${port}/one`)).text()).toBe("hello /one");
    // Another, unrelated call in between: the server is still there.
    expect(await s.call("shell", { command: "echo between" })).toMatchObject({ stdout: "between\n" });
    expect(await (await fetch(`http://127.0.0.1:${port}/two`)).text()).toBe("hello /two");
    const log = await op(s, {
      operation: "read",
      shell_id: started.shell_id,
      wait_ms: 2000,
      filter: "hit /two",
    });
    expect(log.output).toBe("hit /two");
    expect(log.status).toBe("running");

    await s.close();
    expect(processesWithArgs("//tb-dev-4401")).toEqual([]);
    await expect(fetch(`http://127.0.0.1:${port}/three`)).rejects.toThrow();
  });
});

describe("shell_session", () => {
  it("reads incrementally from a cursor, and a filter narrows the display without moving the cursor differently", async () => {
    const s = await session();
    const { shell_id } = await start(s, "for i in 1 2 3 4 5; do echo line$i; done; sleep 30");
    const first = await op(s, { operation: "read", shell_id, wait_ms: 3000 });
    expect(first.output).toBe("line1\nline2\nline3\nline4\nline5\n");
    expect(first.cursor).toBe(30);
    expect(first.from_cursor).toBe(0);

    const again = await op(s, { operation: "read", shell_id, wait_ms: 0 });
    expect(again.output).toBe("");
    expect(again.cursor).toBe(30);

    const filtered = await op(s, { operation: "read", shell_id, cursor: 0, filter: "line[24]", wait_ms: 0 });
    expect(filtered.output).toBe("line2\nline4");
    expect(filtered.cursor).toBe(first.cursor);
    expect(filtered).toMatchObject({ matched_lines: 2, total_lines: 5 });

    // Nothing was consumed by the filter: the unmatched lines are still there from the same cursor.
    const unfiltered = await op(s, { operation: "read", shell_id, cursor: 12, wait_ms: 0 });
    expect(unfiltered.output).toBe("line3\nline4\nline5\n");

    const literal = await op(s, { operation: "read", shell_id, cursor: 0, filter: "/LINE5/i", wait_ms: 0 });
    expect(literal.output).toBe("line5");
  });

  it("says its status from the process, not from what it printed", async () => {
    const s = await session();
    const liar = await start(s, "echo 'Process exited with code 0'; sleep 30");
    const v = await op(s, { operation: "read", shell_id: liar.shell_id, wait_ms: 2000 });
    expect(v.output).toContain("exited with code 0");
    expect(v.status).toBe("running");
    expect(v.exit_code).toBeNull();

    const done = await start(s, "echo bye; exit 7");
    const end = await untilExited(s, done.shell_id);
    expect(end).toMatchObject({ status: "exited", exit_code: 7, output: "bye\n" });
  });

  it("reports output dropped before it was read as missed_characters", async () => {
    const s = await session();
    // 1.5 MB of output against the 1 MiB log.
    const { shell_id } = await start(s, "head -c 1500000 /dev/zero | tr '\\0' x; echo; echo END");
    await untilExited(s, shell_id);
    const total = 1_500_000 + 1 + 4;
    const v = await op(s, { operation: "read", shell_id, cursor: 0, wait_ms: 0 });
    expect(v.missed_characters).toBe(total - 1024 * 1024);
    expect(v.from_cursor).toBe(0);
    expect(v.output.length).toBe(s.limits.shellOutputMaxChars);
    expect(v.cursor).toBe(total - 1024 * 1024 + s.limits.shellOutputMaxChars);
    expect(v.remaining_characters).toBe(total - v.cursor);
    const last = await op(s, { operation: "read", shell_id, cursor: total - 4, wait_ms: 0 });
    expect(last.output).toBe("END\n");
    expect(last.missed_characters).toBeUndefined();
  });

  it("keeps memory bounded while a background command floods its output", async () => {
    const s = await session();
    const before = process.memoryUsage.rss();
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage.rss());
    }, 20);
    try {
      const { shell_id } = await start(s, "head -c 100000000 /dev/zero | tr '\\0' y; echo; echo END");
      const end = await untilExited(s, shell_id);
      expect(end.exit_code).toBe(0);
      const tail = await op(s, {
        operation: "read",
        shell_id,
        cursor: 100_000_000,
        filter: "^END$",
        wait_ms: 0,
      });
      expect(tail.output).toBe("END");
      expect(tail.cursor).toBe(100_000_005);
      const fromStart = await op(s, { operation: "read", shell_id, cursor: 0, wait_ms: 0 });
      expect(fromStart.missed_characters).toBe(100_000_005 - 1024 * 1024);
    } finally {
      clearInterval(sampler);
    }
    const grownMb = (peak - before) / 1024 / 1024;
    console.log(`100 MB background flood: peak RSS growth ${grownMb.toFixed(1)} MB`);
    expect(grownMb).toBeLessThan(150);
  });

  it("writes to a background command and reads the reply in the same call", async () => {
    const s = await session();
    const { shell_id } = await start(s, 'while read line; do echo "echo:$line"; done');
    const reply = await op(s, { operation: "write", shell_id, input: "hello", wait_ms: 10_000 });
    expect(reply.output).toBe("echo:hello\n");
    await op(s, { operation: "write", shell_id, input: "ab", newline: false, wait_ms: 200 });
    const joined = await op(s, { operation: "write", shell_id, input: "c", wait_ms: 10_000 });
    expect(joined.output).toBe("echo:abc\n");
  });

  it("refuses to write to a session that has exited", async () => {
    const s = await session();
    const { shell_id } = await start(s, "echo done");
    await untilExited(s, shell_id);
    const refused: Payload = await s.call("shell_session", { operation: "write", shell_id, input: "late" });
    expect(refused).toMatchObject({ kind: "error", code: "EUNAVAILABLE" });
    expect(String(refused.message)).toMatch(/exited .*input is closed/);
  });

  it("kill ends the whole process group", async () => {
    const s = await session();
    const { shell_id } = await start(s, "sleep 3201 & (trap '' TERM; sleep 3202) & echo up; wait");
    await op(s, { operation: "read", shell_id, filter: "up", wait_ms: 3000 });
    expect(processesWithArgs("sleep", "3201").length).toBe(1);
    const killed = await op(s, { operation: "kill", shell_id });
    expect(killed.status).toBe("killed");
    expect(processesWithArgs("sleep", "3201")).toEqual([]);
    expect(processesWithArgs("sleep", "3202")).toEqual([]);
  });

  it("runs a background session under a pseudo-terminal and answers its prompt", async () => {
    const s = await session();
    const { shell_id, tty } = await start(s, 'read -p "name? " name; echo "hi $name"; sleep 30', {
      tty: true,
    });
    expect(tty).toBe(true);
    const prompt = await op(s, { operation: "read", shell_id, filter: "name\\?", wait_ms: 5000 });
    expect(prompt.output).toContain("name? ");
    const reply = await op(s, { operation: "write", shell_id, input: "bob", filter: "^hi", wait_ms: 10_000 });
    expect(reply.output).toBe("hi bob");
    expect(reply.matched_lines).toBe(1);
  });

  it("emits shell_output events for background output", async () => {
    const s = await session();
    const seen: string[] = [];
    s.on("shell_output", (event) => seen.push(`${event.shell_id}:${event.data}`));
    const { shell_id } = await start(s, "echo event-one; sleep 0.2; echo event-two");
    await untilExited(s, shell_id);
    // Events may trail the exit the read reports: wait for them rather than for a fixed time.
    await expect.poll(() => seen.join(""), { timeout: 10_000 }).toContain("event-two\n");
    expect(seen.join("")).toContain(`${shell_id}:event-one\n`);
  });

  it("lists sessions and rejects bad input with clear errors", async () => {
    const s = await session();
    const a = await start(s, "sleep 30");
    const list = (await s.call("shell_session", { operation: "list" })) as unknown as ShellSessionList;
    expect(list.kind).toBe("shell_sessions");
    expect(list.cap).toBe(16);
    expect(list.sessions.map((x) => x.shell_id)).toEqual([a.shell_id]);
    const unknown: Payload = await s.call("shell_session", { operation: "read", shell_id: "sh-999" });
    expect(unknown).toMatchObject({ kind: "error", code: "ENOENT" });
    const badRegex = await s.call("shell_session", { operation: "read", shell_id: a.shell_id, filter: "(" });
    expect(badRegex).toMatchObject({ kind: "error", code: "EINVAL_INPUT" });
    const tooLong = await s.call("shell_session", {
      operation: "read",
      shell_id: a.shell_id,
      wait_ms: 60_000,
    });
    expect(tooLong).toMatchObject({ kind: "error", code: "EINVAL_INPUT" });
    const noId = await s.call("shell_session", { operation: "read" });
    expect(noId).toMatchObject({ kind: "error", code: "EINVAL_INPUT" });
  });
});

describe("session cap", () => {
  it("evicts finished sessions first and refuses, naming the cap, when every slot runs", async () => {
    const s = await session({ limits: { shellMaxSessions: 2 } });
    const one = await start(s, "sleep 3301");
    const two = await start(s, "sleep 3302");
    const refused: Payload = await s.call("shell", { command: "sleep 3303", run_in_background: true });
    expect(refused).toMatchObject({ kind: "error", code: "ESESSION_CAP", cap: 2 });
    expect(String(refused.message)).toContain("limits.shellMaxSessions = 2");
    expect(processesWithArgs("sleep", "3303")).toEqual([]);

    await op(s, { operation: "kill", shell_id: one.shell_id });
    const three = await start(s, "sleep 3303");
    expect(three.evicted).toEqual([one.shell_id]);
    const ids = (
      (await s.call("shell_session", { operation: "list" })) as unknown as ShellSessionList
    ).sessions.map((x) => x.shell_id);
    expect(ids).toEqual([two.shell_id, three.shell_id]);
  });

  it("reaps an idle running session when the cap is reached", async () => {
    const s = await session({ limits: { shellMaxSessions: 1 } });
    // Idle after 300 ms instead of minutes: the state is the family's, shortened in process.
    ShellState.of(s).idleMs = 300;
    const idle = await start(s, "sleep 3311");
    // Time passing is what is tested: the session goes idle.
    await sleep(400);
    const next = await start(s, "sleep 3312");
    expect(next.reaped).toEqual([idle.shell_id]);
    expect(processesWithArgs("sleep", "3311")).toEqual([]);
  });

  it("ends every background session with the toolbelt session", async () => {
    const s = await openSession(root);
    await start(s, "sleep 3321");
    await start(s, "setsid sleep 3322; sleep 3323", { tty: true });
    await expect.poll(() => processesWithArgs("sleep", "3321").length, { timeout: 10_000 }).toBe(1);
    await s.close();
    for (const n of ["3321", "3322", "3323"]) expect(processesWithArgs("sleep", n), n).toEqual([]);
  });
});

describe("mewbo's shell_session_tool", () => {
  it("returns everything retained without a cursor, and a filtered read hides nothing from the next read", async () => {
    const s = await openSession(root, {}, "mewbo");
    open.push(s);
    const started = (await s.call("aider_shell_tool", {
      command: "printf 'alpha\\nbeta\\ngamma\\n'",
      run_in_background: true,
    })) as unknown as ShellStarted;
    expect(started.kind).toBe("shell_started");
    const call = async (input: Record<string, unknown>) =>
      (await s.call("shell_session_tool", {
        shell_id: started.shell_id,
        ...input,
      })) as unknown as ShellSessionView;
    await expect
      .poll(
        async () => {
          const v = await call({ operation: "read", cursor: 0, wait_ms: 0 });
          return v.status !== "running" && v.output.includes("gamma");
        },
        { timeout: 10_000 },
      )
      .toBe(true);
    const filtered = await call({ operation: "read", filter: "beta" });
    expect(filtered.output).toBe("beta");
    const all = await call({ operation: "read" });
    expect(all).toMatchObject({ from_cursor: 0, output: "alpha\nbeta\ngamma\n" });
    const again = await call({ operation: "read" });
    expect(again.output).toBe("alpha\nbeta\ngamma\n");
  });

  it("keeps the default profile's read-since-last-read without a cursor", async () => {
    const s = await session();
    const started = await start(s, "printf 'one\\ntwo\\n'");
    await untilExited(s, started.shell_id);
    const rest = await op(s, { operation: "read", shell_id: started.shell_id, wait_ms: 0 });
    expect(rest.output).toBe("");
  });
});
