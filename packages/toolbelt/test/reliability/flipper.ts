import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";

// The swap race the read, walk and search attack tests share: a process inside the checkout that
// turns `d/f.txt` into a symlink to `<outside>/f.txt` and back, and the directory `d` into a symlink
// to `<outside>` and back, by atomic renames, as fast as they go. With `fifo`, `d/f.txt` is also
// swapped for a FIFO nobody writes to (an open of it for reading blocks until a writer comes).
// Every 100 rounds the count is written to `flips` (aside, then renamed: a SIGKILL mid-write must
// not leave it empty).
const FLIPPER = `
const fs = require("node:fs");
const path = require("node:path");
const [root, outside, flips, fifo] = process.argv.slice(1);
const p = (...a) => path.join(root, ...a);
fs.symlinkSync(outside + "/f.txt", p("d", "evil"));
fs.symlinkSync(outside, p("dlink"));
if (fifo) require("node:child_process").execFileSync("mkfifo", [p("d", "pipe")]);
process.stdout.write("flipping\\n");
let n = 0;
for (;;) {
  fs.renameSync(p("d", "f.txt"), p("d", "real"));
  fs.renameSync(p("d", "evil"), p("d", "f.txt"));
  fs.renameSync(p("d", "f.txt"), p("d", "evil"));
  if (fifo) {
    fs.renameSync(p("d", "pipe"), p("d", "f.txt"));
    fs.renameSync(p("d", "f.txt"), p("d", "pipe"));
  }
  fs.renameSync(p("d", "real"), p("d", "f.txt"));
  fs.renameSync(p("d"), p("dhold"));
  fs.renameSync(p("dlink"), p("d"));
  fs.renameSync(p("d"), p("dlink"));
  fs.renameSync(p("dhold"), p("d"));
  if (++n % 100 === 0) {
    fs.writeFileSync(flips + ".tmp", String(n));
    fs.renameSync(flips + ".tmp", flips);
  }
}
`;

/**
 * Starts the flipper over `root` (which holds `d/f.txt`) and `outside` (which holds `f.txt`);
 * resolves once it is flipping. The caller kills it (`stopFlipper`).
 */
export function startFlipper(options: {
  root: string;
  outside: string;
  /** Where the round count is written. */
  flips: string;
  fifo?: boolean;
}): Promise<ChildProcess> {
  const { root, outside, flips, fifo = false } = options;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["-e", FLIPPER, root, outside, flips, fifo ? "1" : ""], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout.once("data", () => resolve(child));
    child.once("exit", (code) => reject(new Error(`flipper exited ${code}`)));
    child.on("error", reject);
  });
}

/** Kills the flipper and waits until it is gone, so the tree is still afterwards. */
export async function stopFlipper(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const closed = new Promise((resolve) => child.once("close", resolve));
  child.kill("SIGKILL");
  await closed;
}

/** The rounds the flipper has counted so far (0 before its first hundred). */
export function flipRounds(flips: string): number {
  return existsSync(flips) ? Number(readFileSync(flips, "utf8")) : 0;
}
