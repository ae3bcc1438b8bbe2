#!/usr/bin/env node
// Compiles the Landlock exec helper (native/sandbox-exec.c) into bin/toolbelt-sandbox.
// Never fails the build: without Linux or a C compiler it prints why and the shell family reports
// the sandbox as unavailable (agent.shell_sandbox "best-effort" runs unsandboxed, "required" refuses).
import { spawnSync } from "node:child_process";
import { mkdirSync, renameSync, rmSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const pkg = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const source = path.join(pkg, "native", "sandbox-exec.c");
// Outside dist/ so that tsup's clean step does not delete it under a running session; bin/ is a
// declared turbo output, so cached builds restore it.
const outDir = path.join(pkg, "bin");
const out = path.join(outDir, "toolbelt-sandbox");
const quiet = process.argv.includes("--quiet");

// --quiet (npm install) keeps the success line out of install logs; reasons for skipping still print.
function note(message, success = false) {
  if (!(quiet && success)) console.log(`@toolbelt/shell: ${message}`);
}

if (process.platform !== "linux") {
  note(`sandbox helper not built: Landlock is Linux-only (this is ${process.platform})`);
  process.exit(0);
}

const candidates = [process.env.CC, "cc", "gcc", "clang"].filter(Boolean);
const compiler = candidates.find((cc) => spawnSync(cc, ["--version"], { stdio: "ignore" }).status === 0);
if (!compiler) {
  note(
    `sandbox helper not built: no C compiler found (tried ${candidates.join(", ")}); set CC or install gcc`,
  );
  process.exit(0);
}

mkdirSync(outDir, { recursive: true });
// Compile to a temporary name and rename, so a running session never sees a half-written binary.
const tmp = `${out}.${process.pid}.tmp`;
const result = spawnSync(compiler, ["-O2", "-Wall", "-Wextra", "-o", tmp, source], { encoding: "utf8" });
if (result.status !== 0) {
  rmSync(tmp, { force: true });
  note(`sandbox helper not built: ${compiler} failed:\n${result.stderr || result.error?.message || ""}`);
  process.exit(0);
}
renameSync(tmp, out);
note(`sandbox helper built with ${compiler}: ${path.relative(process.cwd(), out) || out}`, true);
