#!/usr/bin/env node
import { readFileSync } from "node:fs";
import module from "node:module";
import { quietEpipe, writeOut } from "./stdio.js";

// A reader that closes the pipe early is not an error (stdio.ts).
quietEpipe();

// `--version` answers before anything heavy loads: it is what scripts call to probe the install.
const argv = process.argv.slice(2);
if (argv.length === 1 && (argv[0] === "--version" || argv[0] === "-v")) {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
    version: string;
  };
  writeOut(`${pkg.version}\n`);
} else {
  // Node ≥ 22.1 keeps compiled code on disk between runs (NODE_DISABLE_COMPILE_CACHE=1 turns it off);
  // Node 20, our floor, has no such API and starts as before.
  (module as { enableCompileCache?: () => unknown }).enableCompileCache?.();
  // `tools` and `run TOOL --help` with no config anywhere print what the build wrote down, before
  // core (zod inside), yargs or any family loads: about half of such a run was loading them.
  const known =
    argv[0] === "tools" || (argv[0] === "run" && (argv.includes("--help") || argv.includes("-h")))
      ? (await import("./fast-tools.js")).answerFromBuild(argv)
      : undefined;
  // A plain `run` of a files-family tool with no config anywhere runs from the one-shot bundle,
  // compiled from the build's code cache (Node 20 caches no ES module).
  // (bin/toolbelt.js, the command npm links, decides before this file loads, and says so.)
  const asked = (globalThis as Record<symbol, unknown>)[Symbol.for("toolbelt.oneshot.asked")] === true;
  let oneShot: number | undefined;
  if (known === undefined && argv[0] === "run" && !asked && namesAServedTool(argv)) {
    const gate = await import("./oneshot.js");
    if (gate.oneShotServes(argv)) oneShot = await gate.runOneShot(argv);
  }
  if (known !== undefined) writeOut(known);
  else if (oneShot !== undefined) process.exitCode = oneShot;
  else {
    const { main } = await import("./cli.js");
    process.exitCode = await main(argv);
  }
}

/** Whether a word of the line is a tool the one-shot bundle serves (its gate, which parses the line, decides). */
function namesAServedTool(words: readonly string[]): boolean {
  try {
    const { files } = JSON.parse(readFileSync(new URL("./oneshot.json", import.meta.url), "utf8")) as {
      files?: unknown;
    };
    return Array.isArray(files) && words.some((word) => files.includes(word));
  } catch {
    return false;
  }
}
