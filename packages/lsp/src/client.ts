import { type ChildProcess, spawn } from "node:child_process";
import { promises as fs } from "node:fs";
import path from "node:path";
import { ToolbeltError } from "@toolbelt/core";
import { trackProcessGroup, untrackProcessGroup } from "@toolbelt/core/internal";
import {
  CancellationTokenSource,
  createMessageConnection,
  type MessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
} from "vscode-jsonrpc/node.js";
import type {
  Diagnostic,
  InitializeResult,
  PublishDiagnosticsParams,
  ServerCapabilities,
} from "vscode-languageserver-protocol";
import { type LaunchHost, STANDALONE_HOST, serverCommand } from "./launch.js";
import { type ProjectFiles, projectFiles, readProjectFile } from "./project-files.js";
import { languageIdFor, type ServerSpec } from "./servers.js";
import { fromUri, toUri } from "./uri.js";

/** Diagnostics of one document version, or the admission that none came in time. */
export type DiagnosticsOutcome =
  | { status: "ok"; version: number; diagnostics: Diagnostic[] }
  | { status: "timed_out"; version: number };

export type DiagnosticsOptions = {
  timeoutMs: number;
  signal?: AbortSignal;
  /** Check this text instead of the file's content (the content before a write). */
  text?: string;
};

type OpenDocument = {
  uri: string;
  abs: string;
  languageId: string;
  version: number;
  text: string;
  mtimeMs: number;
  size: number;
};

type Published = {
  /** The document version these diagnostics describe. */
  version: number;
  diagnostics: Diagnostic[];
  /** Publish counter value when received (orders publishes across documents). */
  seq: number;
  at: number;
};

/** How long the push stream must stay quiet before a publish is taken as the settled answer. */
const PUSH_QUIET_MS = 300;
const SHUTDOWN_GRACE_MS = 1500;
const STDERR_TAIL = 4000;

/** A live server's group is killed if Node exits without closing the session (core's registry). */
function track(child: ChildProcess): void {
  const pid = child.pid;
  if (pid === undefined) return;
  trackProcessGroup(pid);
  child.once("exit", () => untrackProcessGroup(pid));
}

/** Kills what is left of a server's process group (helpers outliving the server). */
function reapGroup(pid: number): void {
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // no such group: nothing left
  }
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    // Servers spawn helpers (typescript-language-server runs tsserver); the group takes them too.
    process.kill(-child.pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      // already gone
    }
  }
}

/**
 * One language server over stdio for one root: started once, documents opened and kept in sync
 * with full-text changes and increasing versions, diagnostics kept per document version.
 */
export class LspClient {
  readonly spec: ServerSpec;
  readonly root: string;
  readonly #host: LaunchHost;
  #child: ChildProcess | undefined;
  #connection: MessageConnection | undefined;
  #capabilities: ServerCapabilities = {};
  #serverInfo: { name: string; version?: string } | undefined;
  readonly #docs = new Map<string, OpenDocument>();
  readonly #published = new Map<string, Published>();
  #publishSeq = 0;
  readonly #waiters = new Set<() => void>();
  #stderr = "";
  #exited: string | undefined;
  #closing = false;
  #syncTail: Promise<unknown> = Promise.resolve();
  /** How documents are read: inside the root only, through the session's checked open. */
  #files: ProjectFiles | undefined;

  constructor(spec: ServerSpec, root: string, host: LaunchHost = STANDALONE_HOST) {
    this.spec = spec;
    this.root = root;
    this.#host = host;
  }

  get capabilities(): ServerCapabilities {
    return this.#capabilities;
  }

  get serverInfo(): { name: string; version?: string } | undefined {
    return this.#serverInfo;
  }

  /** Why the server is gone, when it is. */
  get exited(): string | undefined {
    return this.#exited;
  }

  /** The server's process id while it runs. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  get label(): string {
    const info = this.#serverInfo;
    const about = info ? `${info.name}${info.version ? ` ${info.version}` : ""}` : this.spec.detail;
    return about ? `${this.spec.name} (${about})` : this.spec.name;
  }

  /** The text last sent to the server for a file (what an edit it returns was computed against). */
  text(abs: string): string | undefined {
    return this.#docs.get(toUri(abs))?.text;
  }

  /** Whether the server announced the capability behind an LSP method. */
  supports(method: string): boolean {
    const caps = this.#capabilities;
    const provider: Record<string, unknown> = {
      "textDocument/definition": caps.definitionProvider,
      "textDocument/implementation": caps.implementationProvider,
      "textDocument/references": caps.referencesProvider,
      "textDocument/hover": caps.hoverProvider,
      "textDocument/documentSymbol": caps.documentSymbolProvider,
      "workspace/symbol": caps.workspaceSymbolProvider,
      "textDocument/rename": caps.renameProvider,
      "textDocument/prepareCallHierarchy": caps.callHierarchyProvider,
    };
    return !(method in provider) || !!provider[method];
  }

  get openDocuments(): number {
    return this.#docs.size;
  }

  /** Spawns the server and runs the initialize handshake; throws EUNAVAILABLE on failure. */
  async start(timeoutMs = 60_000): Promise<void> {
    const spec = this.spec;
    const command = serverCommand(spec, this.root, this.#host);
    // A language server holds a long-lived slot of the session's process pool for its life.
    const slot = await this.#host.processSlot?.({ longLived: true, waitMs: timeoutMs });
    let child: ChildProcess;
    try {
      child = spawn(command.file, command.args, {
        cwd: command.cwd,
        env: command.env,
        stdio: ["pipe", "pipe", "pipe"],
        detached: true,
      });
    } catch (error) {
      slot?.release();
      throw error;
    }
    if (slot) {
      child.once("exit", () => slot.release());
      child.once("error", () => slot.release());
    }
    this.#child = child;
    track(child);
    const spawnFailed = new Promise<never>((_, reject) => {
      child.once("error", (error) => {
        this.#exited = `could not start ${command.file}: ${error.message}`;
        reject(new ToolbeltError("EUNAVAILABLE", this.#exited, { cause: error }));
      });
      child.once("exit", (code, signal) => {
        this.#exited ??= `exited with ${signal ?? `code ${code}`}${this.#stderrNote()}`;
        this.#wake();
        if (!this.#closing)
          reject(new ToolbeltError("EUNAVAILABLE", `language server ${spec.name} ${this.#exited}`));
      });
    });
    spawnFailed.catch(() => {});
    // Nothing is written to a process that never started (its stdin is already destroyed).
    await Promise.race([new Promise<void>((resolve) => child.once("spawn", () => resolve())), spawnFailed]);
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => {
      this.#stderr = (this.#stderr + chunk).slice(-STDERR_TAIL);
    });
    // A server that dies mid-write must not crash the host with EPIPE.
    child.stdin?.on("error", () => {});
    const connection = createMessageConnection(
      new StreamMessageReader(child.stdout as NodeJS.ReadableStream),
      new StreamMessageWriter(child.stdin as NodeJS.WritableStream),
    );
    this.#connection = connection;
    connection.onNotification("textDocument/publishDiagnostics", (params: PublishDiagnosticsParams) =>
      this.#onPublish(params),
    );
    connection.onRequest("workspace/configuration", (params: { items?: Array<{ section?: string }> }) =>
      (params.items ?? []).map((item) => this.#setting(item.section)),
    );
    connection.onRequest("client/registerCapability", () => null);
    connection.onRequest("client/unregisterCapability", () => null);
    connection.onRequest("window/workDoneProgress/create", () => null);
    connection.onRequest("window/showMessageRequest", () => null);
    connection.onRequest("workspace/workspaceFolders", () => [
      { uri: toUri(this.root), name: path.basename(this.root) },
    ]);
    // Edits reach the disk only through toolbelt's write path, never by a server's own request.
    connection.onRequest("workspace/applyEdit", () => ({
      applied: false,
      failureReason: "toolbelt applies edits itself",
    }));
    connection.onNotification(() => {});
    connection.onError(() => {});
    connection.onClose(() => {
      // The pipe closes just before the process exits; give the exit (with its code) a moment to be the reason.
      setTimeout(() => {
        this.#exited ??= `closed its connection${this.#stderrNote()}`;
        this.#wake();
      }, 200).unref();
    });
    connection.listen();

    const init = connection.sendRequest<InitializeResult>("initialize", {
      // Not our pid: the sandbox runs the server in a PID namespace of its own, where that number is
      // nobody or someone else, and a server watching it would exit at once. The server ends when its
      // stdin closes, and the sandbox's watcher ends it if toolbelt dies.
      processId: null,
      clientInfo: { name: "toolbelt" },
      rootUri: toUri(this.root),
      rootPath: this.root,
      workspaceFolders: [{ uri: toUri(this.root), name: path.basename(this.root) }],
      initializationOptions: spec.initializationOptions,
      capabilities: {
        general: { positionEncodings: ["utf-16"] },
        workspace: {
          workspaceFolders: true,
          configuration: true,
          applyEdit: false,
          workspaceEdit: { documentChanges: true },
          symbol: {},
          didChangeWatchedFiles: { dynamicRegistration: false },
        },
        textDocument: {
          synchronization: { didSave: false, willSave: false, dynamicRegistration: false },
          publishDiagnostics: { relatedInformation: true, versionSupport: true },
          diagnostic: { dynamicRegistration: false, relatedDocumentSupport: false },
          definition: { linkSupport: true },
          implementation: { linkSupport: true },
          references: {},
          hover: { contentFormat: ["markdown", "plaintext"] },
          documentSymbol: { hierarchicalDocumentSymbolSupport: true },
          rename: { prepareSupport: true },
          callHierarchy: {},
        },
        window: { workDoneProgress: false },
      },
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new ToolbeltError(
              "EUNAVAILABLE",
              `language server ${spec.name} did not answer initialize within ${timeoutMs} ms${this.#stderrNote()}`,
            ),
          ),
        timeoutMs,
      );
    });
    try {
      const result = await Promise.race([init, spawnFailed, timeout]);
      this.#capabilities = result.capabilities ?? {};
      if (result.serverInfo) this.#serverInfo = result.serverInfo;
      this.#notify("initialized", {});
      if (spec.settings !== undefined)
        this.#notify("workspace/didChangeConfiguration", { settings: spec.settings });
    } catch (error) {
      await this.shutdown();
      if (ToolbeltError.isInstance(error)) throw error;
      throw new ToolbeltError(
        "EUNAVAILABLE",
        `language server ${spec.name} failed to initialize: ${(error as Error).message}${this.#stderrNote()}`,
        { cause: error },
      );
    } finally {
      clearTimeout(timer);
    }
  }

  /** Notifications are fire-and-forget; a dead pipe must not become an unhandled rejection. */
  #notify(method: string, params?: unknown): void {
    const connection = this.#connection;
    if (!connection) return;
    try {
      connection.sendNotification(method, params).catch(() => {});
    } catch {
      // connection disposed
    }
  }

  #stderrNote(): string {
    const tail = this.#stderr.trim().split("\n").slice(-5).join(" | ");
    return tail ? ` (stderr: ${tail.slice(-600)})` : "";
  }

  #setting(section: string | undefined): unknown {
    const settings = this.spec.settings;
    if (!section) return settings ?? null;
    let value: unknown = settings;
    for (const part of section.split(".")) {
      if (typeof value !== "object" || value === null) return null;
      value = (value as Record<string, unknown>)[part];
    }
    return value ?? null;
  }

  #conn(): MessageConnection {
    if (this.#exited || !this.#connection)
      throw new ToolbeltError(
        "EUNAVAILABLE",
        `language server ${this.spec.name} is not running: ${this.#exited ?? "not started"}`,
      );
    return this.#connection;
  }

  /** Sends a request with a bounded wait; cancels it on the server when the call is aborted. */
  async request<R>(
    method: string,
    params: unknown,
    options: { signal?: AbortSignal; timeoutMs?: number } = {},
  ): Promise<R> {
    const connection = this.#conn();
    const source = new CancellationTokenSource();
    const timeoutMs = options.timeoutMs ?? 30_000;
    let timer: NodeJS.Timeout | undefined;
    let exitCheck: (() => void) | undefined;
    const onAbort = () => source.cancel();
    options.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      return await Promise.race([
        connection.sendRequest<R>(method, params, source.token),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => {
            source.cancel();
            reject(
              new ToolbeltError(
                "ETIMEOUT",
                `${this.spec.name} did not answer ${method} within ${timeoutMs} ms`,
              ),
            );
          }, timeoutMs);
        }),
        new Promise<never>((_, reject) => {
          exitCheck = () => {
            if (this.#exited)
              reject(new ToolbeltError("EUNAVAILABLE", `language server ${this.spec.name} ${this.#exited}`));
          };
          this.#waiters.add(exitCheck);
          exitCheck();
        }),
      ]);
    } catch (error) {
      if (ToolbeltError.isInstance(error)) throw error;
      if (options.signal?.aborted) throw new ToolbeltError("ECANCELLED", "the call was cancelled");
      throw new ToolbeltError(
        "EUNAVAILABLE",
        `${this.spec.name} failed ${method}: ${(error as Error).message}`,
        {
          cause: error,
        },
      );
    } finally {
      clearTimeout(timer);
      if (exitCheck) this.#waiters.delete(exitCheck);
      options.signal?.removeEventListener("abort", onAbort);
      source.dispose();
    }
  }

  /**
   * Makes the server's view of `abs` match the disk: opens it (version 1) or sends the whole new
   * text with the next version when it changed. Returns the synced document.
   */
  sync(abs: string): Promise<OpenDocument> {
    // Serialised: two concurrent calls must not both open the same document.
    const next = this.#syncTail.then(
      () => this.#syncNow(abs),
      () => this.#syncNow(abs),
    );
    this.#syncTail = next.catch(() => undefined);
    return next;
  }

  /**
   * Makes the server hold `text` for `abs` instead of what the disk has (the content before a write,
   * to learn which problems the write introduced); the next sync from disk replaces it.
   */
  hold(abs: string, text: string): Promise<OpenDocument> {
    const next = this.#syncTail.then(
      () => this.#holdNow(abs, text),
      () => this.#holdNow(abs, text),
    );
    this.#syncTail = next.catch(() => undefined);
    return next;
  }

  #holdNow(abs: string, text: string): OpenDocument {
    this.#conn();
    const uri = toUri(abs);
    const held = this.#docs.get(uri);
    if (held?.text === text) return held;
    // No disk state matches this text: the next sync from disk reads the file again.
    return this.#show(uri, abs, text, { mtimeMs: -1, size: -1 });
  }

  async #syncNow(abs: string): Promise<OpenDocument> {
    this.#conn();
    const uri = toUri(abs);
    const existing = this.#docs.get(uri);
    // The stat only says whether to read again; what is read comes through the checked open.
    const seen = await fs.stat(abs);
    if (existing && existing.mtimeMs === seen.mtimeMs && existing.size === seen.size) return existing;
    this.#files ??= projectFiles(this.root, this.#host);
    const files = this.#files;
    const rel = path.relative(files.root, abs) || abs;
    const { text, stat } = await readProjectFile((p) => files.open(p), abs, rel, files.maxBytes);
    return this.#show(uri, abs, text, stat);
  }

  /**
   * Tells the server the document's text now: didChange (a new version) for an open document whose
   * text differs, didOpen for one it does not hold yet. `disk` is the file state the text matches.
   */
  #show(uri: string, abs: string, text: string, disk: { mtimeMs: number; size: number }): OpenDocument {
    const existing = this.#docs.get(uri);
    if (existing) {
      existing.mtimeMs = disk.mtimeMs;
      existing.size = disk.size;
      if (existing.text === text) return existing;
      existing.version += 1;
      existing.text = text;
      this.#notify("textDocument/didChange", {
        textDocument: { uri, version: existing.version },
        contentChanges: [{ text }],
      });
      return existing;
    }
    const doc: OpenDocument = {
      uri,
      abs,
      languageId: languageIdFor(abs),
      version: 1,
      text,
      mtimeMs: disk.mtimeMs,
      size: disk.size,
    };
    this.#docs.set(uri, doc);
    this.#notify("textDocument/didOpen", {
      textDocument: { uri, languageId: doc.languageId, version: doc.version, text },
    });
    return doc;
  }

  /** Re-syncs every open document (other files may have changed what this one means). */
  async syncOpen(): Promise<void> {
    for (const doc of [...this.#docs.values()]) {
      try {
        await this.sync(doc.abs);
      } catch {
        // Deleted since: close it so the server forgets the old text.
        this.#docs.delete(doc.uri);
        this.#published.delete(doc.uri);
        this.#notify("textDocument/didClose", { textDocument: { uri: doc.uri } });
      }
    }
  }

  isOpen(abs: string): boolean {
    return this.#docs.has(toUri(abs));
  }

  /** Closes a document opened only for one request, so the server stops re-checking it on every change. */
  release(abs: string): void {
    const uri = toUri(abs);
    if (!this.#docs.delete(uri)) return;
    this.#published.delete(uri);
    this.#notify("textDocument/didClose", { textDocument: { uri } });
  }

  /** Tells the server about files changed on disk that are not open. */
  notifyChanged(abs: string[]): void {
    const changes = abs.filter((a) => !this.#docs.has(toUri(a))).map((a) => ({ uri: toUri(a), type: 2 }));
    if (changes.length && !this.#exited) this.#notify("workspace/didChangeWatchedFiles", { changes });
  }

  document(abs: string): OpenDocument | undefined {
    return this.#docs.get(toUri(abs));
  }

  #onPublish(params: PublishDiagnosticsParams): void {
    const doc = this.#docs.get(params.uri);
    const current = doc?.version ?? 0;
    // A publish naming an older version describes text that no longer exists.
    if (params.version !== undefined && params.version !== null && params.version < current) return;
    this.#published.set(params.uri, {
      version: params.version ?? current,
      diagnostics: params.diagnostics,
      seq: ++this.#publishSeq,
      at: Date.now(),
    });
    this.#wake();
  }

  #wake(): void {
    for (const waiter of [...this.#waiters]) waiter();
  }

  /**
   * Diagnostics for the document's current version, waiting at most `timeoutMs`; of `text` instead
   * of the file's content when given (see `hold`).
   */
  async diagnostics(abs: string, options: DiagnosticsOptions): Promise<DiagnosticsOutcome> {
    const doc = options.text === undefined ? await this.sync(abs) : await this.hold(abs, options.text);
    if (this.spec.diagnostics === "tsserver") {
      try {
        return await this.#tsserverDiagnostics(doc, options);
      } catch (error) {
        if (ToolbeltError.isInstance(error) && error.code === "ETIMEOUT")
          return { status: "timed_out", version: doc.version };
        if (this.#exited) throw error;
        // An older server without the command: fall back to the pushed diagnostics.
      }
    }
    if (this.#capabilities.diagnosticProvider) return this.#pullDiagnostics(doc, options);
    return this.#pushDiagnostics(doc, options);
  }

  async #pullDiagnostics(
    doc: OpenDocument,
    options: { timeoutMs: number; signal?: AbortSignal },
  ): Promise<DiagnosticsOutcome> {
    const deadline = Date.now() + options.timeoutMs;
    for (let attempt = 0; attempt < 3; attempt++) {
      const version = doc.version;
      const remaining = deadline - Date.now();
      if (remaining <= 0) break;
      let report: { kind?: string; items?: Diagnostic[] } | null;
      try {
        report = await this.request<{ kind?: string; items?: Diagnostic[] } | null>(
          "textDocument/diagnostic",
          { textDocument: { uri: doc.uri } },
          { timeoutMs: remaining, ...(options.signal ? { signal: options.signal } : {}) },
        );
      } catch (error) {
        if (ToolbeltError.isInstance(error) && error.code === "ETIMEOUT") break;
        throw error;
      }
      // The answer is for the text the server had when it answered; a newer sync makes it stale.
      if (doc.version !== version) continue;
      return { status: "ok", version, diagnostics: report?.items ?? [] };
    }
    return { status: "timed_out", version: doc.version };
  }

  async #tsserverDiagnostics(
    doc: OpenDocument,
    options: { timeoutMs: number; signal?: AbortSignal },
  ): Promise<DiagnosticsOutcome> {
    const ask = async (command: string) => {
      const response = await this.request<{ body?: TsserverDiagnostic[] } | TsserverDiagnostic[] | null>(
        "workspace/executeCommand",
        {
          command: "typescript.tsserverRequest",
          arguments: [command, { file: doc.abs, includeLinePosition: false }],
        },
        { timeoutMs: options.timeoutMs, ...(options.signal ? { signal: options.signal } : {}) },
      );
      const list = Array.isArray(response) ? response : response?.body;
      if (!Array.isArray(list)) throw new Error(`unexpected ${command} answer`);
      return list;
    };
    // tsserver answers for the text it has; if a concurrent call synced a newer version meanwhile, ask again.
    for (let attempt = 0; attempt < 3; attempt++) {
      const version = doc.version;
      const [syntactic, semantic] = await Promise.all([
        ask("syntacticDiagnosticsSync"),
        ask("semanticDiagnosticsSync"),
      ]);
      if (doc.version === version)
        return { status: "ok", version, diagnostics: [...syntactic, ...semantic].map(fromTsserver) };
    }
    return { status: "timed_out", version: doc.version };
  }

  /**
   * Push servers: wait for a publish received after this version was synced, then for the stream
   * to stay quiet (servers publish in stages), within the bounded time.
   */
  async #pushDiagnostics(
    doc: OpenDocument,
    options: { timeoutMs: number; signal?: AbortSignal },
  ): Promise<DiagnosticsOutcome> {
    const version = doc.version;
    const deadline = Date.now() + options.timeoutMs;
    return new Promise<DiagnosticsOutcome>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const finish = (outcome: DiagnosticsOutcome | ToolbeltError) => {
        clearTimeout(timer);
        this.#waiters.delete(check);
        options.signal?.removeEventListener("abort", check);
        if (outcome instanceof ToolbeltError) reject(outcome);
        else resolve(outcome);
      };
      const check = () => {
        if (this.#exited) {
          finish(new ToolbeltError("EUNAVAILABLE", `language server ${this.spec.name} ${this.#exited}`));
          return;
        }
        if (options.signal?.aborted) {
          finish(new ToolbeltError("ECANCELLED", "the call was cancelled"));
          return;
        }
        if (doc.version !== version || Date.now() >= deadline) {
          finish({ status: "timed_out", version });
          return;
        }
        const latest = this.#published.get(doc.uri);
        const fresh = latest && latest.version === version ? latest : undefined;
        clearTimeout(timer);
        if (fresh && Date.now() - fresh.at >= PUSH_QUIET_MS) {
          finish({ status: "ok", version, diagnostics: fresh.diagnostics });
          return;
        }
        const wait = fresh ? PUSH_QUIET_MS - (Date.now() - fresh.at) : deadline - Date.now();
        timer = setTimeout(check, Math.max(1, Math.min(wait, deadline - Date.now())));
      };
      this.#waiters.add(check);
      options.signal?.addEventListener("abort", check, { once: true });
      check();
    });
  }

  /** shutdown + exit, then the signal for a server that does not leave by itself. */
  async shutdown(): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    const child = this.#child;
    const connection = this.#connection;
    if (connection && !this.#exited) {
      try {
        await Promise.race([
          connection.sendRequest("shutdown"),
          new Promise((resolve) => setTimeout(resolve, SHUTDOWN_GRACE_MS)),
        ]);
        this.#notify("exit");
      } catch {
        // going away anyway
      }
    }
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      const gone = await Promise.race([
        exited.then(() => true),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), SHUTDOWN_GRACE_MS)),
      ]);
      if (!gone) {
        killGroup(child, "SIGTERM");
        const termed = await Promise.race([
          exited.then(() => true),
          new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 1000)),
        ]);
        if (!termed) killGroup(child, "SIGKILL");
      }
    }
    // Helpers the server started (tsserver) may outlive it; the group signal reaps them.
    if (child?.pid !== undefined) reapGroup(child.pid);
    this.#exited ??= "shut down";
    connection?.dispose();
    this.#wake();
  }

  /** Absolute path of a URI the server returned. */
  static pathOf(uri: string): string | undefined {
    return fromUri(uri);
  }
}

type TsserverDiagnostic = {
  start: { line: number; offset: number };
  end: { line: number; offset: number };
  text: string;
  code?: number;
  category?: string;
  source?: string;
};

function fromTsserver(d: TsserverDiagnostic): Diagnostic {
  return {
    range: {
      start: { line: d.start.line - 1, character: d.start.offset - 1 },
      end: { line: d.end.line - 1, character: d.end.offset - 1 },
    },
    message: d.text,
    severity:
      d.category === "warning" ? 2 : d.category === "suggestion" ? 4 : d.category === "message" ? 3 : 1,
    ...(d.code !== undefined ? { code: d.code } : {}),
    source: d.source ?? "typescript",
  };
}
