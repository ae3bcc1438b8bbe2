import { spawnSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lacks } from "../../../../test-support/capability.js";
import { assertBuilt, cli, jsonLines, tempRoot } from "../cli-harness.js";
import { flipRounds, startFlipper, stopFlipper } from "./flipper.js";

// The JS walk (list_files, list_dir, search_files on the JS engine) under a process in the checkout
// that swaps names for symlinks pointing outside, or a file for a FIFO, as fast as it can. Each
// directory is listed through the descriptor it was opened and checked by, each subdirectory and
// file opened by name inside that descriptor without following a symlink, and only regular files
// are read: no outside content and no outside name may come back, and no call may hang on a FIFO.

const base = tempRoot("tb-walk-race-");
beforeAll(() => assertBuilt());
afterAll(() => rmSync(base, { recursive: true, force: true }));

function project(name: string): { root: string; outside: string; flips: string } {
  const root = path.join(base, name, "root");
  const outside = path.join(base, name, "outside");
  mkdirSync(path.join(root, "d", "sub"), { recursive: true });
  mkdirSync(outside, { recursive: true });
  // Some files around the raced ones, so each walk spends a while in `d`.
  for (let i = 0; i < 20; i++) writeFileSync(path.join(root, "d", `n${i}.txt`), `inside ${i}\n`);
  writeFileSync(path.join(root, "d", "sub", "s.txt"), "inside sub\n");
  writeFileSync(path.join(root, "d", "f.txt"), "inside\n");
  // The outside directory: a secret under the raced name, and names of its own.
  writeFileSync(path.join(outside, "f.txt"), "OUTSIDE SECRET\n");
  writeFileSync(path.join(outside, "OUTSIDE-NAME.txt"), "OUTSIDE SECRET\n");
  mkdirSync(path.join(outside, "OUTSIDE-DIR"));
  writeFileSync(path.join(outside, "OUTSIDE-DIR", "f.txt"), "OUTSIDE SECRET\n");
  return { root, outside, flips: path.join(base, name, "flips") };
}

const SEARCHES = 300;

/** 300 JS-engine searches (of the root and of `d`), 100 list_files and 100 list_dir, interleaved. */
function calls(): Array<{ id: string; tool: string; input: Record<string, unknown> }> {
  const out: Array<{ id: string; tool: string; input: Record<string, unknown> }> = [];
  for (let i = 0; i < SEARCHES; i++) {
    out.push({
      id: `s${i}`,
      tool: "search_files",
      input: { query: "inside|SECRET", path: i % 2 ? "d" : "." },
    });
    if (i % 3 === 0) out.push({ id: `f${i}`, tool: "list_files", input: { path: i % 2 ? "d" : "." } });
    if (i % 3 === 1) out.push({ id: `l${i}`, tool: "list_dir", input: { path: i % 2 ? "d" : "." } });
  }
  return out;
}

async function race(name: string, fifo: boolean) {
  const { root, outside, flips } = project(name);
  const sent = calls();
  const flip = await startFlipper({ root, outside, flips, fifo });
  let answers: Array<Record<string, unknown>>;
  let first = 0;
  try {
    // The session starts once the flipper is in its loop.
    await expect.poll(() => flipRounds(flips), { timeout: 60_000 }).toBeGreaterThanOrEqual(100);
    first = flipRounds(flips);
    const input = `${sent.map((c) => JSON.stringify(c)).join("\n")}\n`;
    // The timeout is the failure bound of a hang (a FIFO opened for reading blocks the thread).
    const r = await cli(["exec", "--root", root], {
      input,
      timeoutMs: 120_000,
      env: { TOOLBELT_SEARCH_ENGINE: "js" },
    });
    // 1: some calls answered an error (a refusal when the start is swapped); never a crash.
    expect([0, 1], r.stderr).toContain(r.code);
    answers = jsonLines(r.stdout);
  } finally {
    await stopFlipper(flip);
  }
  // Rounds flipped while the session ran (counted in hundreds).
  const rounds = flipRounds(flips) - first;
  const tally = {
    leaked: 0,
    outsideNames: 0,
    searched: 0,
    listed: 0,
    insideHits: 0,
    refused: {} as Record<string, number>,
  };
  for (const a of answers) {
    const result = a.result as Record<string, unknown>;
    const text = JSON.stringify(result);
    if (text.includes("OUTSIDE SECRET")) tally.leaked++;
    if (text.includes("OUTSIDE-NAME") || text.includes("OUTSIDE-DIR")) tally.outsideNames++;
    if (result.kind === "error") {
      const code = String(result.code);
      tally.refused[code] = (tally.refused[code] ?? 0) + 1;
    } else if (result.kind === "search_results") {
      tally.searched++;
      if (text.includes("inside sub")) tally.insideHits++;
    } else tally.listed++;
  }
  console.log(`walk race (${name}): ${JSON.stringify(tally)} over ${rounds}+ flip rounds during the session`);
  return { sent, answers, tally, rounds };
}

// The flipper uses Linux's rename, symlink and FIFO semantics, and the fix /proc/self/fd.
const skip = lacks("linux", process.platform !== "linux" && `this is ${process.platform}`);
const noFifo = skip || lacks("linux", spawnSync("mkfifo", ["--version"]).error && "no mkfifo on PATH");

describe.skipIf(skip)("the JS walk under a swap race", () => {
  it("returns 0 outside contents and 0 outside names while d/f.txt and d flip to symlinks", async () => {
    const { sent, answers, tally, rounds } = await race("symlinks", false);
    expect(answers.map((a) => a.id)).toEqual(sent.map((c) => c.id));
    expect(tally.leaked).toBe(0);
    expect(tally.outsideNames).toBe(0);
    // The calls really walked the live tree, and the race really ran.
    expect(tally.searched).toBeGreaterThan(0);
    expect(tally.insideHits).toBeGreaterThan(0);
    expect(tally.listed).toBeGreaterThan(0);
    expect(rounds).toBeGreaterThanOrEqual(100);
  }, 600_000);

  it.skipIf(noFifo)(
    "never blocks on d/f.txt swapped for a FIFO, and returns 0 outside contents",
    async () => {
      const { sent, answers, tally, rounds } = await race("fifo", true);
      expect(answers.map((a) => a.id)).toEqual(sent.map((c) => c.id));
      expect(tally.leaked).toBe(0);
      expect(tally.outsideNames).toBe(0);
      expect(tally.searched).toBeGreaterThan(0);
      expect(tally.insideHits).toBeGreaterThan(0);
      expect(rounds).toBeGreaterThanOrEqual(100);
    },
    600_000,
  );
});
