import path from "node:path";
import { type Session, type ToolbeltConfig, ToolbeltError } from "@toolbelt/core";
import { ENV, readEnv } from "@toolbelt/core/internal";
import { type DiagnosticsOptions, type DiagnosticsOutcome, LspClient } from "./client.js";
import { hostForRoot, type LaunchHost, STANDALONE_HOST } from "./launch.js";
import { projectFiles } from "./project-files.js";
import {
  builtinTypescriptSpec,
  configuredSpecs,
  type ServerSpec,
  TS_EXTENSIONS,
  type TsServerChoice,
} from "./servers.js";

/** What the tools talk to: a language server or the in-process fallback, with the same requests. */
export type Backend = {
  readonly label: string;
  sync(abs: string): Promise<unknown>;
  syncOpen(): Promise<void>;
  notifyChanged(abs: string[]): void;
  isOpen(abs: string): boolean;
  /** Forgets a document opened only for one request. */
  release(abs: string): void;
  text(abs: string): string | undefined;
  supports(method: string): boolean;
  diagnostics(abs: string, options: DiagnosticsOptions): Promise<DiagnosticsOutcome>;
  request<R>(
    method: string,
    params: unknown,
    options?: { signal?: AbortSignal; timeoutMs?: number },
  ): Promise<R>;
  shutdown(): Promise<void>;
};

/** Refuses (EUNAVAILABLE) a request the backend did not announce it supports. */
export function requireSupport(backend: Backend, method: string): void {
  if (!backend.supports(method))
    throw new ToolbeltError("EUNAVAILABLE", `${backend.label} does not support ${method}`);
}

export type LspFamilyOptions = {
  /**
   * `auto` (default): the ts-morph fallback serves TS/JS only when no server binary is found;
   * `force`: always the fallback for TS/JS; `off`: never. Env `TOOLBELT_LSP_FALLBACK=1` forces it.
   */
  fallback?: "auto" | "force" | "off";
  /** The built-in TypeScript server; env `TOOLBELT_LSP_TS_SERVER=tsgo` picks TypeScript 7. */
  typescriptServer?: TsServerChoice;
  /** Bounded wait for diagnostics (default 15000 ms). */
  diagnosticsTimeoutMs?: number;
  /** Bounded wait for a server to start (default 60000 ms). */
  startTimeoutMs?: number;
};

export function resolveOptions(options: LspFamilyOptions): Required<LspFamilyOptions> {
  return {
    fallback: readEnv(ENV.TOOLBELT_LSP_FALLBACK) ?? options.fallback ?? "auto",
    typescriptServer:
      readEnv(ENV.TOOLBELT_LSP_TS_SERVER) ?? options.typescriptServer ?? "typescript-language-server",
    diagnosticsTimeoutMs: options.diagnosticsTimeoutMs ?? 15_000,
    startTimeoutMs: options.startTimeoutMs ?? 60_000,
  };
}

const FALLBACK = "ts-morph";

/** A server choice for one file: a spec to start, or the fallback. */
type Choice = { key: string; spec?: ServerSpec; fallback?: true };

/**
 * The language servers of one session: started lazily, one per (root, server), remembered when
 * they fail so a broken server is reported rather than restarted on every call, and shut down
 * when the session closes.
 */
export class LspManager {
  readonly options: Required<LspFamilyOptions>;
  readonly #backends = new Map<string, Promise<Backend>>();
  readonly #failed = new Map<string, string>();
  readonly #builtin = new Map<string, ServerSpec | undefined>();
  readonly #host: LaunchHost;
  /** The root `host.trust` speaks for: the session's root when the manager was made. */
  readonly #homeRoot: string | undefined;

  /** `host` (the session) decides whether repo-local servers may run and wraps every launch. */
  constructor(options: LspFamilyOptions = {}, host: LaunchHost = STANDALONE_HOST) {
    this.options = resolveOptions(options);
    this.#host = host;
    this.#homeRoot = host.root;
  }

  #hostFor(root: string): LaunchHost {
    return hostForRoot(this.#host, this.#homeRoot, root);
  }

  /** Every server this root could use, config first (a config server wins an extension). */
  specs(root: string, config: ToolbeltConfig): ServerSpec[] {
    const specs = configuredSpecs(config);
    if (this.options.fallback !== "force") {
      // Resolving the binary reads package.json files: once per root is enough.
      if (!this.#builtin.has(root))
        this.#builtin.set(
          root,
          builtinTypescriptSpec(
            { root, trusted: this.#hostFor(root).trust.trusted },
            this.options.typescriptServer,
          ),
        );
      const ts = this.#builtin.get(root);
      if (ts) specs.push(ts);
    }
    return specs;
  }

  /** The server for a file's extension, or undefined when nothing serves it. */
  choose(root: string, config: ToolbeltConfig, abs: string): Choice | undefined {
    const ext = path.extname(abs).toLowerCase();
    const spec = this.specs(root, config).find((s) => s.extensions.includes(ext));
    if (spec) return { key: `${root}\0${spec.name}`, spec };
    if (this.options.fallback !== "off" && TS_EXTENSIONS.includes(ext))
      return { key: `${root}\0${FALLBACK}`, fallback: true };
    return undefined;
  }

  /** Extensions some server (or the fallback) serves here. */
  extensions(root: string, config: ToolbeltConfig): string[] {
    const exts = new Set(this.specs(root, config).flatMap((s) => s.extensions));
    if (this.options.fallback !== "off") for (const e of TS_EXTENSIONS) exts.add(e);
    return [...exts];
  }

  async backendFor(root: string, config: ToolbeltConfig, abs: string): Promise<Backend> {
    const choice = this.choose(root, config, abs);
    if (!choice) {
      const known = this.extensions(root, config).join(" ");
      throw new ToolbeltError(
        "EUNAVAILABLE",
        `no language server for ${path.extname(abs) || "files without an extension"} files (served here: ${known}); add one under "lsp" in configs/app.json`,
      );
    }
    return this.#start(root, choice);
  }

  /**
   * The backend serving `abs` if it is running or starting in this session (a failed start is
   * undefined too): what a write may use without starting anything.
   */
  runningFor(root: string, config: ToolbeltConfig, abs: string): Promise<Backend> | undefined {
    // Most sessions never start a server: their writes need not look for one.
    if (![...this.#backends.keys()].some((key) => key.startsWith(`${root}\0`))) return undefined;
    const choice = this.choose(root, config, abs);
    return choice ? this.#backends.get(choice.key) : undefined;
  }

  #start(root: string, choice: Choice): Promise<Backend> {
    const failed = this.#failed.get(choice.key);
    if (failed)
      return Promise.reject(new ToolbeltError("EUNAVAILABLE", `${failed} (not retried in this session)`));
    const running = this.#backends.get(choice.key);
    if (running) return running;
    const server = choice.spec?.name ?? FALLBACK;
    const since = performance.now();
    const tell = (state: "starting" | "ready" | "failed", error?: unknown): void => {
      if (this.#host.closed) return;
      try {
        this.#host.emit?.({
          type: "lsp_server",
          server,
          root,
          state,
          ...(error !== undefined ? { error: (error as Error).message ?? String(error) } : {}),
          ...(state !== "starting" ? { duration_ms: Math.round(performance.now() - since) } : {}),
        });
      } catch {
        // A host whose session does not know the event (a manager made over a bare session) still
        // starts its servers: telling is never a reason to fail.
      }
    };
    // Told in the call that asked for the server (its async context), so that call's client sees
    // the wait as progress.
    tell("starting");
    const started = (async (): Promise<Backend> => {
      // ts-morph brings the TypeScript compiler, slow to load: only a session that falls back pays.
      if (choice.fallback || !choice.spec) {
        const { TsMorphBackend } = await import("./fallback.js");
        // Its reads go through the session's checked open, confined to the root.
        return new TsMorphBackend(root, { files: projectFiles(root, this.#hostFor(root)) });
      }
      const client = new LspClient(choice.spec, root, this.#hostFor(root));
      await client.start(this.options.startTimeoutMs);
      return client;
    })();
    started.then(
      () => tell("ready"),
      (error: unknown) => tell("failed", error),
    );
    this.#backends.set(choice.key, started);
    started.catch((error: unknown) => {
      this.#backends.delete(choice.key);
      // A full process pool is no fault of the server: the next call tries again.
      if (ToolbeltError.isInstance(error) && error.code === "EBUSY") return;
      this.#failed.set(choice.key, (error as Error).message);
    });
    return started;
  }

  /** Diagnostics for one file from whichever backend serves it. */
  async diagnostics(
    root: string,
    config: ToolbeltConfig,
    abs: string,
    options: { timeoutMs?: number; signal?: AbortSignal } = {},
  ): Promise<{ backend: Backend; outcome: DiagnosticsOutcome }> {
    const backend = await this.backendFor(root, config, abs);
    await backend.syncOpen();
    const outcome = await backend.diagnostics(abs, {
      timeoutMs: options.timeoutMs ?? this.options.diagnosticsTimeoutMs,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    return { backend, outcome };
  }

  /** Backends already running for a root. */
  async running(root: string): Promise<Backend[]> {
    const out: Backend[] = [];
    for (const [key, promise] of this.#backends) {
      if (!key.startsWith(`${root}\0`)) continue;
      try {
        out.push(await promise);
      } catch {
        // reported by the call that started it
      }
    }
    return out;
  }

  /** Tells running servers of `root` that files changed on disk. */
  async filesChanged(root: string, files: string[]): Promise<void> {
    for (const backend of await this.running(root)) backend.notifyChanged(files);
  }

  async closeAll(): Promise<void> {
    const all = [...this.#backends.values()];
    this.#backends.clear();
    await Promise.all(
      all.map(async (promise) => {
        try {
          await (await promise).shutdown();
        } catch {
          // a server that never started has nothing to stop
        }
      }),
    );
  }
}

/** The session's manager; forks share their parent's servers. */
export function managerOf(session: Session, options: LspFamilyOptions): LspManager {
  let owner: Session = session;
  while (owner.parent) owner = owner.parent;
  return owner.state("lsp.manager", () => {
    const manager = new LspManager(options, owner);
    owner.onClose(() => manager.closeAll());
    return manager;
  });
}
