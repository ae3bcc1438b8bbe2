// Shared by the serve-*.test.ts e2e tests: a temp project whose config turns tool search on and loads
// a plugin (written against the built @toolbelt/core) with a deferrable tool, a tool that needs
// approval and a slow tool that honours cancellation (plugin tools are deferrable unless they say not).
import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export const REPO = fileURLToPath(new URL("../../../", import.meta.url));
export const BIN = path.join(REPO, "packages/toolbelt/dist/bin.js");
export const DENO = path.join(REPO, "node_modules/.bin/deno");

const PLUGIN = (core: string, zod: string) => `
import { definePlugin, defineTool } from ${JSON.stringify(core)};
import { z } from ${JSON.stringify(zod)};
export default definePlugin({
  name: "fixture",
  tools: [
    defineTool({
      name: "echo_deferred", family: "fixture", access: "read", deferrable: true,
      description: "Echo text back: a deferred fixture tool found through tool_search.",
      input: z.object({ text: z.string() }),
      execute: (input) => ({ kind: "echo", text: input.text }),
    }),
    defineTool({
      name: "touch_marker", family: "fixture", access: "execute", deferrable: false,
      description: "Write a marker file (execute access, so the default policy asks first).",
      input: z.object({ name: z.string() }),
      async execute(input, ctx) {
        const target = ctx.resolve(input.name);
        await ctx.writeFile(target.abs, "marker\\n");
        return { kind: "touched", path: target.rel };
      },
    }),
    defineTool({
      name: "slow_wait", family: "fixture", access: "read", deferrable: false,
      description: "Wait some milliseconds, or until the call is cancelled.",
      input: z.object({ ms: z.number() }),
      execute: (input, ctx) => new Promise((resolve) => {
        const timer = setTimeout(() => resolve({ kind: "waited", ms: input.ms }), input.ms);
        ctx.signal.addEventListener("abort", () => {
          clearTimeout(timer);
          resolve({ kind: "error", code: "ECANCELLED", message: "slow_wait was cancelled" });
        });
      }),
    }),
  ],
});
`;

/** A temp project root: a.txt, configs/app.json (tool_search on, the fixture plugin). */
export async function makeRoot(): Promise<string> {
  const root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "toolbelt-serve-")));
  await fs.writeFile(path.join(root, "a.txt"), "hello\nworld\n");
  await fs.mkdir(path.join(root, "configs"));
  await fs.mkdir(path.join(root, "sub"));
  await fs.writeFile(
    path.join(root, "configs/app.json"),
    JSON.stringify({ agent: { tool_search: "on" }, plugins: ["./plugin.mjs"] }),
  );
  const core = pathToFileURL(path.join(REPO, "packages/core/dist/index.js")).href;
  const zod = pathToFileURL(path.join(REPO, "node_modules/zod/index.js")).href;
  await fs.writeFile(path.join(root, "plugin.mjs"), PLUGIN(core, zod));
  return root;
}

export type HttpProcess = { child: ChildProcess; url: string; token: string; stop(): Promise<void> };

/** Starts the built `toolbelt serve --http` on a free port and reads its URL and token. */
export async function startHttp(root: string, extra: string[] = []): Promise<HttpProcess> {
  const port = extra.includes("--port") ? [] : ["--port", "0"];
  // --trust: the fixture project loads its plugin from configs/app.json.
  const child = spawn(
    process.execPath,
    [BIN, "serve", "--http", "--trust", ...port, "--root", root, ...extra],
    {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, TOOLBELT_TOKEN: "" },
    },
  );
  let out = "";
  let err = "";
  child.stderr?.on("data", (d: Buffer) => {
    err += d.toString();
  });
  const started = await new Promise<{ url: string; token: string }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve --http did not start: ${out}${err}`)), 20_000);
    child.stdout?.on("data", (d: Buffer) => {
      out += d.toString();
      const url = /listening on (\S+)/.exec(out)?.[1];
      const token = /^token: (\S+)$/m.exec(out)?.[1];
      if (url && token) {
        clearTimeout(timer);
        resolve({ url, token });
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`serve --http exited with ${code}: ${out}${err}`));
    });
  });
  return {
    child,
    ...started,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    },
  };
}
