// Shared by the OAuth end-to-end tests: the oauth-server fixture, the built CLI with its own user
// config folder, and `toolbelt mcp login` with the test playing the browser.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach } from "vitest";

const BIN = fileURLToPath(new URL("../../toolbelt/dist/bin.js", import.meta.url));
const SERVER = fileURLToPath(new URL("../src/__fixtures__/oauth-server.mjs", import.meta.url));

const dirs: string[] = [];
const servers: ChildProcess[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.kill();
});
afterAll(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

export function tempDir(prefix: string): string {
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), prefix)));
  dirs.push(dir);
  return dir;
}

/** Starts the fixture; resolves to its MCP URL and the file it logs grants and bearers to. */
export async function startServer(env: Record<string, string> = {}): Promise<{ url: string; log: string }> {
  const log = path.join(tempDir("tb-oauth-log-"), "log");
  writeFileSync(log, "");
  const child = spawn(process.execPath, [SERVER], { env: { ...process.env, OAUTH_LOG: log, ...env } });
  servers.push(child);
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  for await (const line of lines) return { url: (JSON.parse(line) as { url: string }).url, log };
  throw new Error("the oauth fixture exited before listening");
}

export type Run = { code: number | null; stdout: string; stderr: string };

/** Runs the built CLI with its own user config folder; `onStderr` sees stderr as it comes. */
export function cli(
  args: string[],
  userDir: string,
  stdin = "",
  onStderr?: (text: string) => void,
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, TOOLBELT_TRUST: "1", TOOLBELT_CONFIG_DIR: userDir },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on("data", (c: Buffer) => {
      stderr += c.toString();
      onStderr?.(stderr);
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin);
  });
}

export function project(url: string): string {
  const root = tempDir("tb-oauth-project-");
  writeFileSync(
    path.join(root, ".mcp.json"),
    JSON.stringify({ mcpServers: { remote: { type: "http", url } } }),
  );
  mkdirSync(path.join(root, "configs"));
  writeFileSync(path.join(root, "configs", "app.json"), JSON.stringify({ agent: { tool_search: "off" } }));
  return root;
}

/** `toolbelt mcp login remote --no-browser`, approving in a "browser": the test follows the printed URL. */
export async function login(root: string, userDir: string): Promise<Run> {
  let followed = false;
  return cli(
    ["mcp", "login", "remote", "--root", root, "--no-browser", "--timeout", "60"],
    userDir,
    "",
    (stderr) => {
      const url = /^(http:\/\/127\.0\.0\.1:\d+\/authorize\?\S+)$/m.exec(stderr)?.[1];
      if (!url || followed) return;
      followed = true;
      void (async () => {
        const page = await fetch(url, { redirect: "manual" });
        const next = page.headers.get("location");
        if (next) await fetch(next);
      })();
    },
  );
}
