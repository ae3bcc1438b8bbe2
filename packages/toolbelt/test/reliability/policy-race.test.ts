import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lacks } from "../../../../test-support/capability.js";
import { assertBuilt, cli, jsonLines, tempRoot } from "../cli-harness.js";
import { flipRounds, stopFlipper } from "./flipper.js";

// The policy judges a call on the paths it resolved; the tool must act on those very paths, not
// resolve the input again. Inside the root, `link.txt` flips between a symlink to `open.txt` and one
// to `secret.txt`, which a deny rule keeps from being read. A read of `link.txt` that the policy
// allowed (the link pointed at open.txt then) must never return secret.txt's contents because the
// link moved between the policy's check and the tool's own resolution.
// With "target", the file itself moves: open.txt is swapped for a symlink to secret.txt and back.
const FLIPPER = `
const fs = require("node:fs");
const path = require("node:path");
const [root, flips, mode] = process.argv.slice(1);
const p = (name) => path.join(root, name);
if (mode === "target") fs.symlinkSync("secret.txt", p("evil"));
process.stdout.write("flipping\\n");
let n = 0;
for (;;) {
  if (mode === "target") {
    fs.renameSync(p("open.txt"), p("hold"));
    fs.renameSync(p("evil"), p("open.txt"));
    fs.renameSync(p("open.txt"), p("evil"));
    fs.renameSync(p("hold"), p("open.txt"));
  } else {
    fs.symlinkSync("open.txt", p("next-open"));
    fs.renameSync(p("next-open"), p("link.txt"));
    fs.symlinkSync("secret.txt", p("next-secret"));
    fs.renameSync(p("next-secret"), p("link.txt"));
  }
  if (++n % 100 === 0) {
    fs.writeFileSync(flips + ".tmp", String(n));
    fs.renameSync(flips + ".tmp", flips);
  }
}
`;

function startLinkFlipper(root: string, flips: string, mode: "link" | "target"): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["-e", FLIPPER, root, flips, mode], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout.once("data", () => resolve(child));
    child.once("exit", (code) => reject(new Error(`flipper exited ${code}`)));
    child.on("error", reject);
  });
}

const base = tempRoot("tb-policy-race-");
beforeAll(() => assertBuilt());
afterAll(() => rmSync(base, { recursive: true, force: true }));

// The flipper uses Linux's rename-over-symlink semantics; elsewhere the race is not run, and says so.
const notLinux = lacks("linux", process.platform !== "linux" && `this is ${process.platform}`);
describe.skipIf(notLinux)("a symlink that moves between the policy's check and the tool's read", () => {
  it.each([
    ["link", "a link named in the input moves", "link.txt"],
    ["target", "the file itself becomes a link", "open.txt"],
  ] as const)(
    "never returns a denied file's contents when %s (%s)",
    async (mode, _what, target) => {
      const root = path.join(base, mode);
      mkdirSync(root, { recursive: true });
      const lines = (word: string) => Array.from({ length: 400 }, (_, n) => `${word} ${n + 1}\n`).join("");
      writeFileSync(path.join(root, "open.txt"), lines("open"));
      writeFileSync(path.join(root, "secret.txt"), lines("SECRET"));
      const cfg = path.join(base, `${mode}.json`);
      writeFileSync(cfg, JSON.stringify({ tools: { file: { rules: { deny: ["read(secret.txt)"] } } } }));
      const calls = Array.from({ length: 3000 }, (_, i) => ({
        id: String(i),
        tool: "read_file",
        // Distinct windows, so the read ledger answers content (not file_unchanged) each time.
        input: { path: target, offset: 1 + (i % 400), limit: 1 },
      }));
      const counter = path.join(base, `${mode}.flips`);
      const flip = await startLinkFlipper(root, counter, mode);
      let stdout: string;
      try {
        const r = await cli(["exec", "--root", root, "--config", cfg], {
          input: `${calls.map((c) => JSON.stringify(c)).join("\n")}\n`,
          env: { TOOLBELT_CONFIG_DIR: base, XDG_CONFIG_HOME: base, TOOLBELT_TRUST: "" },
          timeoutMs: 300_000,
        });
        expect([0, 1], r.stderr).toContain(r.code);
        stdout = r.stdout;
      } finally {
        await stopFlipper(flip);
      }
      const tally = { open: 0, leaked: 0, denied: 0, other: {} as Record<string, number> };
      for (const answer of jsonLines(stdout)) {
        const result = answer.result as Record<string, unknown>;
        if (JSON.stringify(result).includes("SECRET")) tally.leaked++;
        else if (result.kind === "file_content") tally.open++;
        else if (result.kind === "error" && result.code === "EDENIED") tally.denied++;
        else
          tally.other[String(result.code ?? result.kind)] =
            (tally.other[String(result.code ?? result.kind)] ?? 0) + 1;
      }
      const flips = flipRounds(counter);
      console.log(`policy race (${mode}): ${JSON.stringify(tally)} over ${flips}+ flip rounds`);
      expect(tally.leaked).toBe(0);
      // The race really happened: some reads were allowed (the link pointed at open.txt), some denied.
      expect(tally.open).toBeGreaterThan(0);
      expect(tally.denied).toBeGreaterThan(0);
      expect(flips).toBeGreaterThanOrEqual(1000);
    },
    360_000,
  );
});
