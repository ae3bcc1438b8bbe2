#!/usr/bin/env node
"use strict";
// The `toolbelt` command. It exists before the first build (npm links bins at install time, before
// the prepare step builds dist/), and hands over to the built CLI. It is CommonJS (bin/package.json):
// an ES module entry costs a cold start the set-up of Node's ES module loader, which a one-shot
// `run` of a files-family tool (dist/oneshot-gate.cjs decides) never needs.
const argv = process.argv.slice(2);
let gate;
if (argv[0] === "run" && namesAServedTool()) {
  try {
    // Compiled from the code cache the build wrote for it (src/oneshot-load.ts), as the bundle is.
    const { compileCommonJs } = require("../dist/oneshot-load.cjs");
    gate = compileCommonJs(require("node:path").join(__dirname, "../dist/oneshot-gate.cjs")).exports;
  } catch {
    gate = undefined; // not built yet, or an older build: the usual path answers
  }
}
if (typeof gate?.quietEpipe === "function" && gate.oneShotServes(argv)) {
  // As dist/bin.js: a reader that closes the pipe early is not an error (src/stdio.ts).
  gate.quietEpipe();
  gate.runOneShot(argv).then((code) => {
    if (code === undefined) return usual();
    process.exitCode = code;
  });
} else usual();

function usual() {
  // Decided here: dist/bin.js does not ask the gate again.
  globalThis[Symbol.for("toolbelt.oneshot.asked")] = true;
  return import("../dist/bin.js");
}

/** Whether a word of the line is a tool the bundle serves (the gate, which parses the line, decides). */
function namesAServedTool() {
  try {
    const { files } = JSON.parse(require("node:fs").readFileSync(`${__dirname}/../dist/oneshot.json`, "utf8"));
    return Array.isArray(files) && argv.some((word) => files.includes(word));
  } catch {
    return false;
  }
}
