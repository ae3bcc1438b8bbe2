import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, realpathSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { probeSandbox } from "@toolbelt/shell";
import { lacks } from "../../../test-support/capability.js";

export const REPO = fileURLToPath(new URL("../../../", import.meta.url));
export const BIN = path.join(REPO, "packages/toolbelt/dist/bin.js");

/**
 * For `skipIf`: whether real Landlock enforcement is missing here — Linux, the sandbox helper (CI
 * builds it: a failure under CI=true) or the kernel's Landlock (a skip) — with the reason logged.
 */
export function lacksLandlock(): boolean {
  const probe = probeSandbox();
  const linux = process.platform === "linux";
  return (
    lacks("linux", !linux && `Landlock is Linux's; this is ${process.platform}`) ||
    lacks("sandbox-helper", !probe.runs && (probe.reason ?? "the sandbox helper does not run")) ||
    lacks("landlock", probe.abi < 1 && (probe.reason ?? "no Landlock"))
  );
}

/** The workspace packages the built CLI loads from their dist (it imports them, it does not bundle them). */
const BUILT_PACKAGES = [
  "core",
  "files",
  "edit",
  "shell",
  "lsp",
  "mcp",
  "ui",
  "projects",
  "bridge",
  "console",
  "workspace",
  "toolbelt",
];

function newestMtime(dir: string, skip: (name: string) => boolean = () => false): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || skip(entry.name)) continue;
    newest = Math.max(newest, statSync(path.join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

let buildProblem: string | undefined | null = null;

/**
 * Why the e2e tests cannot trust the build, or undefined when they can: a package's dist is missing,
 * or older than a source file of that package (the tests would pass or fail against old code).
 * Computed once per test file.
 */
export function buildProblems(): string | undefined {
  if (buildProblem !== null) return buildProblem;
  const problems: string[] = [];
  for (const name of BUILT_PACKAGES) {
    const dir = path.join(REPO, "packages", name);
    const dist = path.join(dir, "dist");
    if (!existsSync(path.join(dist, name === "toolbelt" ? "bin.js" : "index.js"))) {
      problems.push(`packages/${name}/dist is missing`);
      continue;
    }
    const built = newestMtime(dist);
    const source = newestMtime(path.join(dir, "src"), (file) => file.includes(".test."));
    if (source > built)
      problems.push(
        `packages/${name}/dist is older than its src (src changed ${new Date(source).toISOString()}, dist built ${new Date(built).toISOString()})`,
      );
  }
  buildProblem = problems.length > 0 ? problems.join("; ") : undefined;
  return buildProblem;
}

/**
 * Fails loudly when the build is missing or stale: an e2e suite that skipped (or ran old code) would
 * report green for code it never ran. CI builds first, so this holds there. TOOLBELT_TEST_STALE_OK=1
 * turns a stale build into a warning (several people editing one tree); a missing build still fails.
 */
export function assertBuilt(): void {
  const problem = buildProblems();
  if (problem === undefined) return;
  const message = `${problem}: run \`npm run build\` before the e2e tests (\`npm run build -- --force\` if turbo replays its cache and leaves dist as it was)`;
  if (process.env.TOOLBELT_TEST_STALE_OK === "1" && !problem.includes("missing")) {
    console.warn(`TOOLBELT_TEST_STALE_OK=1: ${message}`);
    return;
  }
  throw new Error(message);
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
    // Decoded by the stream, so a character split across two pipe chunks is not mangled.
    child.stdout.setEncoding("utf8");
    child.stderr.setEncoding("utf8");
    child.stdout.on("data", (d: string) => {
      stdout += d;
    });
    child.stderr.on("data", (d: string) => {
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

export type JsonRpcResponse = { id: number; result?: unknown; error?: { code: number; message: string } };

/**
 * Starts the built `serve --mcp` with `args`, does the MCP handshake over stdio, sends each request in
 * turn (the next after the previous answer), stops the server and returns the responses. A server
 * that exits or stays silent rejects with its stderr instead of hanging the test.
 */
export async function mcpCall(
  args: string[],
  requests: Array<{ method: string; params?: unknown }>,
  options: { env?: NodeJS.ProcessEnv; timeoutMs?: number; clientName?: string } = {},
): Promise<JsonRpcResponse[]> {
  const child = spawn(process.execPath, [BIN, "serve", "--mcp", ...args], {
    cwd: REPO,
    env: { ...process.env, NO_COLOR: "1", ...options.env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (d: string) => {
    stderr += d;
  });
  let buffer = "";
  let pending: { id: number; resolve: (r: JsonRpcResponse) => void; reject: (e: Error) => void } | undefined;
  const fail = (why: string) =>
    pending?.reject(new Error(`serve --mcp ${args.join(" ")}: ${why}\nstderr: ${stderr}`));
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => {
    buffer += chunk;
    for (let nl = buffer.indexOf("\n"); nl >= 0; nl = buffer.indexOf("\n")) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      let msg: Partial<JsonRpcResponse>;
      try {
        msg = JSON.parse(line) as Partial<JsonRpcResponse>;
      } catch {
        fail(`wrote a line that is not JSON-RPC: ${line.slice(0, 200)}`);
        continue;
      }
      if (pending && msg.id === pending.id) pending.resolve(msg as JsonRpcResponse);
    }
  });
  const exited = new Promise<void>((resolve) => child.on("close", () => resolve()));
  child.on("close", (code) => fail(`exited (${code}) before answering`));
  child.on("error", (error) => fail(error.message));
  let nextId = 1;
  const send = (method: string, params: unknown = {}) =>
    new Promise<JsonRpcResponse>((resolve, reject) => {
      const id = nextId++;
      const timer = setTimeout(
        () => fail(`no answer to ${method} within ${options.timeoutMs ?? 60_000} ms`),
        options.timeoutMs ?? 60_000,
      );
      pending = {
        id,
        resolve: (r) => {
          clearTimeout(timer);
          resolve(r);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`);
    });
  try {
    await send("initialize", {
      protocolVersion: "2025-06-18",
      capabilities: {},
      clientInfo: { name: options.clientName ?? "toolbelt-e2e", version: "0" },
    });
    child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`);
    const responses: JsonRpcResponse[] = [];
    for (const { method, params } of requests) responses.push(await send(method, params));
    return responses;
  } finally {
    pending = undefined;
    child.kill("SIGTERM");
    await exited;
  }
}

/**
 * Writes a module that registers a resolve hook recording every module a process loads (one URL a
 * line, appended to the file named by TB_LOADED_LOG): give it to `node --import`. Returns its path.
 */
export function writeLoadRecorder(dir: string): string {
  const hooks = path.join(dir, "hooks.mjs");
  writeFileSync(
    hooks,
    `import { appendFileSync } from "node:fs";
export async function resolve(specifier, context, next) {
  const out = await next(specifier, context);
  if (process.env.TB_LOADED_LOG) appendFileSync(process.env.TB_LOADED_LOG, out.url + "\\n");
  return out;
}\n`,
  );
  const register = path.join(dir, "register.mjs");
  writeFileSync(
    register,
    `import { register } from "node:module";\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`,
  );
  return register;
}
