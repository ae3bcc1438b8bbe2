import { spawn } from "node:child_process";
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lacks } from "../../../../test-support/capability.js";
import { assertBuilt, BIN, cli, jsonLines, mcpCall, REPO, tempRoot } from "../cli-harness.js";
import { flipRounds, startFlipper, stopFlipper } from "./flipper.js";

// The per-call fast paths of `exec` (issue 17): small reads opened, checked and read synchronously,
// one realpath for paths with no symlink, call events built without zod. What they must not change:
// every check of the read path holds at the open, answers and their events come complete and in
// order, and the same reads answer the same over a server.

const base = tempRoot("tb-exec-speed-");
beforeAll(() => assertBuilt());
afterAll(() => rmSync(base, { recursive: true, force: true }));

function project(name: string): { root: string; outside: string } {
  const root = path.join(base, name, "root");
  const outside = path.join(base, name, "outside");
  mkdirSync(path.join(root, "d"), { recursive: true });
  mkdirSync(outside, { recursive: true });
  writeFileSync(path.join(root, "d", "f.txt"), "inside\n");
  writeFileSync(path.join(outside, "f.txt"), "OUTSIDE SECRET\n");
  return { root, outside };
}

/** One `exec` session over all `lines` at once; every stdout line parsed. */
async function exec(root: string, lines: unknown[], extra: string[] = []) {
  const input = `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`;
  const r = await cli(["exec", "--root", root, ...extra], { input, timeoutMs: 300_000 });
  // 1: some calls answered an error (the refusals these tests provoke); never a usage error or a crash.
  expect([0, 1], r.stderr).toContain(r.code);
  return jsonLines(r.stdout);
}

// A regression guard for the synchronous open more than a proof of it: the resolver's own check
// refuses nearly every swap first, and the window between it and the open is now microseconds (an
// open by plain path, with no /proc check, also returned 0 outside bytes here). writes.test.ts's
// renameat2 flipper is the sharper race.
// The flipper uses Linux's symlink and /proc semantics; elsewhere the race is not run, and says so.
const notLinux = lacks("linux", process.platform !== "linux" && `this is ${process.platform}`);
describe.skipIf(notLinux)("the synchronous read path under a swap race", () => {
  it("returns 0 outside contents while d/f.txt and d flip to symlinks pointing outside", async () => {
    const { root, outside } = project("race");
    writeFileSync(
      path.join(root, "d", "f.txt"),
      Array.from({ length: 600 }, (_, n) => `inside ${n + 1}\n`).join(""),
    );
    const calls = Array.from({ length: 3000 }, (_, i) => ({
      id: String(i),
      tool: "read_file",
      // Distinct windows, so the read ledger answers content (not file_unchanged) each time.
      input: { path: "d/f.txt", offset: 1 + (i % 600), limit: 1 },
    }));
    const counter = path.join(root, "..", "flips");
    const flip = await startFlipper({ root, outside, flips: counter });
    let answers: Array<Record<string, unknown>>;
    try {
      answers = await exec(root, calls);
    } finally {
      await stopFlipper(flip);
    }
    const flips = flipRounds(counter);
    const tally = { ok: 0, leaked: 0, refused: {} as Record<string, number> };
    for (const a of answers) {
      const result = a.result as Record<string, unknown>;
      if (JSON.stringify(result).includes("OUTSIDE")) tally.leaked++;
      if (result.kind === "error") {
        const code = String(result.code);
        tally.refused[code] = (tally.refused[code] ?? 0) + 1;
      } else if (result.kind === "file_content") {
        expect(String(result.content).split("\n")[0]).toMatch(/^ +\d+\tinside \d+$/);
        tally.ok++;
      }
    }
    console.log(`sync read race: ${JSON.stringify(tally)} over ${flips}+ flip rounds`);
    expect(answers.map((a) => a.id)).toEqual(calls.map((c) => c.id));
    expect(tally.leaked).toBe(0);
    // The reads really ran against the live tree, and the race really happened.
    expect(tally.ok).toBeGreaterThan(0);
    expect(Object.values(tally.refused).reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    expect(flips).toBeGreaterThanOrEqual(1000);
  }, 600_000);

  it("refuses a symlink to outside on the path, and to outside as the file, on the first read", async () => {
    const { root, outside } = project("links");
    symlinkSync(outside, path.join(root, "out"));
    symlinkSync(path.join(outside, "f.txt"), path.join(root, "d", "leak.txt"));
    symlinkSync(path.join(root, "d", "f.txt"), path.join(root, "d", "alias.txt"));
    const [viaDir, viaFile, alias] = await exec(root, [
      { id: "1", tool: "read_file", input: { path: "out/f.txt" } },
      { id: "2", tool: "read_file", input: { path: "d/leak.txt" } },
      { id: "3", tool: "read_file", input: { path: "d/alias.txt" } },
    ]);
    expect(viaDir?.result).toMatchObject({ kind: "error", code: "EPATH_ESCAPE" });
    expect(viaFile?.result).toMatchObject({ kind: "error", code: "EPATH_ESCAPE" });
    // A symlink inside the root still reads its target (the walk resolves it), as before.
    expect(alias?.result).toMatchObject({ kind: "file_content", path: "d/f.txt" });
  }, 60_000);
});

describe("exec answers with the fast paths", () => {
  it("answers 600 calls sent at once completely and in order, each event before its answer", async () => {
    const { root } = project("batch");
    for (let i = 0; i < 20; i++)
      writeFileSync(path.join(root, "d", `n${i}.txt`), `line ${i}\n`.repeat(i + 1));
    const calls = Array.from({ length: 600 }, (_, i) =>
      i % 3 === 2
        ? { id: String(i), tool: "list_files", input: { path: "d" } }
        : { id: String(i), tool: "read_file", input: { path: `d/n${i % 20}.txt` } },
    );
    const lines = await exec(root, calls, ["--events"]);
    const answers = lines.filter((l) => !("event" in l));
    expect(answers.map((a) => a.id)).toEqual(calls.map((c) => c.id));
    expect(answers.at(-1)?.result).toMatchObject({ kind: "file_list" });
    let seq = -1;
    const resultSeen = new Set<string>();
    for (const line of lines) {
      if ("event" in line) {
        const event = line.event as { seq: number; type: string; call_id?: string };
        expect(event.seq).toBe(seq + 1);
        seq = event.seq;
        if (event.type === "tool_result") resultSeen.add(String(event.call_id));
      } else {
        expect(resultSeen.has(String(line.id)), `tool_result of ${line.id} before its answer`).toBe(true);
      }
    }
  }, 120_000);

  it("answers each line before the next is sent when the caller waits for it", async () => {
    const { root } = project("wait");
    for (let i = 0; i < 5; i++) writeFileSync(path.join(root, "d", `w${i}.txt`), `wait ${i}\n`);
    const child = spawn(process.execPath, [BIN, "exec", "--root", root], {
      cwd: REPO,
      stdio: ["pipe", "pipe", "pipe"],
    });
    let out = "";
    const next = () =>
      new Promise<Record<string, unknown>>((resolve) => {
        const onData = (d: Buffer) => {
          out += d;
          const nl = out.indexOf("\n");
          if (nl < 0) return;
          const line = out.slice(0, nl);
          out = out.slice(nl + 1);
          child.stdout.off("data", onData);
          resolve(JSON.parse(line) as Record<string, unknown>);
        };
        child.stdout.on("data", onData);
      });
    try {
      for (let i = 0; i < 5; i++) {
        const answer = next();
        child.stdin.write(
          `${JSON.stringify({ id: String(i), tool: "read_file", input: { path: `d/w${i}.txt` } })}\n`,
        );
        expect(await answer).toMatchObject({
          id: String(i),
          result: { kind: "file_content", content: `     1\twait ${i}` },
        });
      }
    } finally {
      child.stdin.end();
      await new Promise((r) => child.once("close", r));
    }
  }, 60_000);
});

describe("the same reads over serve --mcp", () => {
  it("answers read_file as exec does, and refuses the symlink to outside", async () => {
    const { root, outside } = project("mcp");
    symlinkSync(outside, path.join(root, "out"));
    const replies = await mcpCall(
      ["--root", root],
      [
        { method: "tools/call", params: { name: "read_file", arguments: { path: "d/f.txt" } } },
        { method: "tools/call", params: { name: "read_file", arguments: { path: "out/f.txt" } } },
      ],
      { clientName: "exec-speed-test" },
    );
    const [ok, escaped] = replies.map((r) => JSON.stringify(r.result));
    expect(ok).toContain("inside");
    expect(escaped).toContain("EPATH_ESCAPE");
    expect(escaped).not.toContain("OUTSIDE");
  }, 60_000);
});
