import { createRequire } from "node:module";

/** The part of the node-pty API the shell uses. */
export interface PtyProcess {
  readonly pid: number;
  onData(listener: (data: string | Buffer) => void): { dispose(): void };
  onExit(listener: (event: { exitCode: number; signal?: number }) => void): { dispose(): void };
  write(data: string): void;
  kill(signal?: string): void;
}

export interface PtyModule {
  spawn(
    file: string,
    args: string[],
    options: {
      name?: string;
      cols?: number;
      rows?: number;
      cwd?: string;
      env?: Record<string, string>;
      encoding?: string | null;
    },
  ): PtyProcess;
}

export interface PtyAvailability {
  module: PtyModule | undefined;
  /** Package and version, or why it could not be loaded. */
  detail: string;
}

let loaded: Promise<PtyAvailability> | undefined;

/** The node-pty package used by default: a fork that ships prebuilt binaries. */
export const DEFAULT_PTY_MODULE = "@lydell/node-pty";

/**
 * Loads node-pty on first use only, so a missing or broken native module costs nothing until
 * `tty: true` is asked for. Always the one package: which code runs is not an environment setting.
 */
export function loadPty(): Promise<PtyAvailability> {
  loaded ??= importPty(DEFAULT_PTY_MODULE);
  return loaded;
}

function importPty(name: string): Promise<PtyAvailability> {
  return (async () => {
    try {
      const mod = (await import(name)) as { default?: PtyModule } & Partial<PtyModule>;
      const api = typeof mod.spawn === "function" ? (mod as PtyModule) : mod.default;
      if (!api || typeof api.spawn !== "function")
        return { module: undefined, detail: `${name} has no spawn()` };
      let version = "";
      try {
        version = (createRequire(import.meta.url)(`${name}/package.json`) as { version: string }).version;
      } catch {
        // The version is only for the report.
      }
      return { module: api, detail: `${name}${version ? ` ${version}` : ""}` };
    } catch (error) {
      return { module: undefined, detail: `${name} could not be loaded: ${(error as Error).message}` };
    }
  })();
}
