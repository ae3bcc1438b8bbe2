import { describe, expect, it } from "vitest";
import { ToolbeltError } from "./errors.js";
import { machineProcessLimits, ProcessPool, type ProcessSlot } from "./process-pool.js";

/** Records the order slots are granted in. */
function granted(pool: ProcessPool, owner: string, label: string, log: string[]): Promise<ProcessSlot> {
  return pool.acquire({ owner }).then((slot) => {
    log.push(label);
    return slot;
  });
}

describe("ProcessPool", () => {
  it("never holds more call slots than its bound, and queues the rest", async () => {
    const pool = new ProcessPool({ max: 2 });
    const a = await pool.acquire({ owner: "s1" });
    const b = await pool.acquire({ owner: "s1" });
    const log: string[] = [];
    const c = granted(pool, "s1", "c", log);
    await Promise.resolve();
    expect(log).toEqual([]);
    expect(pool.usage()).toMatchObject({ max: 2, running: 2, queued: 1, sessions_waiting: 1 });
    a.release();
    a.release(); // twice is harmless: it frees one slot only
    const slot = await c;
    expect(slot.waitedMs).toBeGreaterThanOrEqual(0);
    expect(pool.usage()).toMatchObject({ running: 2, queued: 0 });
    b.release();
    slot.release();
    expect(pool.usage()).toMatchObject({ running: 0, queued: 0, sessions_waiting: 0 });
  });

  it("serves waiting sessions round-robin: a second session is not stuck behind fifty queued calls", async () => {
    const pool = new ProcessPool({ max: 1 });
    const held = await pool.acquire({ owner: "busy" });
    const log: string[] = [];
    const busy = Array.from({ length: 50 }, (_, i) => granted(pool, "busy", `busy${i}`, log));
    const other = granted(pool, "other", "other", log);
    held.release();
    // The first slot freed goes to the busy session's first waiter, the next to the other session.
    (await (busy[0] as Promise<ProcessSlot>)).release();
    (await other).release();
    expect(log.slice(0, 2)).toEqual(["busy0", "other"]);
    for (const p of busy.slice(1)) (await p).release();
    expect(log).toHaveLength(51);
  });

  it("bounds a wait: EBUSY with queued_ms once the wait runs out", async () => {
    const pool = new ProcessPool({ max: 1 });
    const held = await pool.acquire({ owner: "s1" });
    const error = await pool.acquire({ owner: "s2", waitMs: 20 }).catch((e: unknown) => e);
    expect(ToolbeltError.isInstance(error) && error.code).toBe("EBUSY");
    expect((error as ToolbeltError).details.queued_ms).toBeGreaterThan(0);
    expect(pool.usage()).toMatchObject({ running: 1, queued: 0, sessions_waiting: 0 });
    held.release();
    expect(pool.usage().running).toBe(0);
  });

  it("gives up a wait when the call is cancelled", async () => {
    const pool = new ProcessPool({ max: 1 });
    const held = await pool.acquire({ owner: "s1" });
    const controller = new AbortController();
    const waiting = pool.acquire({ owner: "s1", signal: controller.signal }).catch((e: unknown) => e);
    controller.abort();
    const error = await waiting;
    expect(ToolbeltError.isInstance(error) && error.code).toBe("ECANCELLED");
    expect(pool.usage().queued).toBe(0);
    held.release();
  });

  it("keeps long-lived processes in their own lane: they never take a call's slot", async () => {
    const pool = new ProcessPool({ max: 1, maxLongLived: 1 });
    const server = await pool.acquire({ owner: "s1", longLived: true });
    // The session's language server fills the long-lived lane; its own search still runs at once.
    const search = await pool.acquire({ owner: "s1", waitMs: 20 });
    expect(search.waitedMs).toBe(0);
    const error = await pool.acquire({ owner: "s1", longLived: true, waitMs: 20 }).catch((e: unknown) => e);
    expect(ToolbeltError.isInstance(error) && error.code).toBe("EBUSY");
    expect(pool.usage()).toMatchObject({ running: 1, long_lived: { max: 1, running: 1, queued: 0 } });
    search.release();
    server.release();
  });

  it("is sized from the machine when not told, and refuses a bound below one", () => {
    const machine = machineProcessLimits();
    expect(machine.max).toBeGreaterThanOrEqual(4);
    expect(new ProcessPool().max).toBe(machine.max);
    expect(() => new ProcessPool({ max: 0 })).toThrow(/at least 1/);
  });
});
