import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, realpathSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const REPO = fileURLToPath(new URL("../../../", import.meta.url));
export const BIN = path.join(REPO, "packages/toolbelt/dist/bin.js");

export function assertBuilt(): void {
  if (!existsSync(BIN))
    throw new Error(`${BIN} is missing: run \`npm run build\` (npm install does it) before the e2e tests`);
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI (under node, or another runtime's argv prefix) and collects its output. */
export function cli(
  args: string[],
  options: {
    input?: string;
    cwd?: string;
    runtime?: string[];
    env?: NodeJS.ProcessEnv;
    timeoutMs?: number;
  } = {},
): Promise<CliResult> {
  const runtime = options.runtime ?? [process.execPath];
  return new Promise((resolve, reject) => {
    const child = spawn(runtime[0] as string, [...runtime.slice(1), BIN, ...args], {
      cwd: options.cwd ?? REPO,
      env: { ...process.env, NO_COLOR: "1", ...options.env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => {
      stdout += d;
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`toolbelt ${args.join(" ")} timed out\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, options.timeoutMs ?? 30_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(options.input ?? "");
  });
}

export function tempRoot(prefix = "tb-e2e-"): string {
  return realpathSync(mkdtempSync(path.join(os.tmpdir(), prefix)));
}

export function jsonLines(text: string): Array<Record<string, unknown>> {
  return text
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}
