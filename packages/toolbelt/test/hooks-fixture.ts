// What the hooks e2e and attack tests share: a throwaway user config folder, hook programs written
// outside every root (a tool in the session cannot rewrite them), --config files naming them.
import { rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { assertBuilt, type CliResult, cli, tempRoot } from "./cli-harness.js";

export interface HookBench {
  /** Where hook programs and config files go. */
  readonly dir: string;
  /** The env every run gets: the throwaway user config folder, no trust switch from outside. */
  env(extra?: NodeJS.ProcessEnv): NodeJS.ProcessEnv;
  run(args: string[], options?: { env?: NodeJS.ProcessEnv; input?: string }): Promise<CliResult>;
  /** A node hook program; with `readStdin` (default) `call` holds the call it was given. */
  hook(name: string, body: string, readStdin?: boolean): string;
  /** A --config file (trusted, outside the root) with these hooks. */
  config(hooks: Record<string, unknown>): string;
  /** A project root holding keep.txt. */
  project(): string;
  cleanup(): void;
}

export function hookBench(): HookBench {
  assertBuilt();
  const dirs: string[] = [];
  const home = tempRoot("tb-hooks-home-");
  const dir = tempRoot("tb-hooks-bin-");
  dirs.push(home, dir);
  let n = 0;
  const env = (extra: NodeJS.ProcessEnv = {}) => ({
    TOOLBELT_CONFIG_DIR: home,
    XDG_CONFIG_HOME: home,
    TOOLBELT_TRUST: "",
    ...extra,
  });
  return {
    dir,
    env,
    run: (args, options = {}) =>
      cli(args, {
        env: env(options.env),
        timeoutMs: 60_000,
        ...(options.input !== undefined ? { input: options.input } : {}),
      }),
    hook(name, body, readStdin = true) {
      const file = path.join(dir, name);
      const head = readStdin
        ? `import { readFileSync, writeFileSync } from "node:fs";\nconst call = JSON.parse(readFileSync(0, "utf8"));\n`
        : `import { writeFileSync } from "node:fs";\n`;
      writeFileSync(file, `${head}${body}\n`);
      return file;
    },
    config(hooks) {
      const file = path.join(dir, `config-${++n}.json`);
      writeFileSync(file, JSON.stringify({ hooks }));
      return file;
    },
    project() {
      const root = tempRoot("tb-hooks-");
      dirs.push(root);
      writeFileSync(path.join(root, "keep.txt"), "keep\n");
      return root;
    },
    cleanup() {
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    },
  };
}

/** The last JSON line of a run's stdout: the payload `toolbelt run` printed. */
export function payload(result: CliResult): Record<string, unknown> {
  return JSON.parse(result.stdout.trim().split("\n").at(-1) ?? "{}") as Record<string, unknown>;
}

/** A hook entry running `script` with this node. */
export function node(script: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { command: process.execPath, args: [script], ...extra };
}
