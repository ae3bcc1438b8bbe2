// `toolbelt serve --mcp` spoken to in raw JSON-RPC lines over stdio, for what an SDK client would not
// send (requests before the handshake, malformed params, oversized or broken lines, a handshake sent
// without waiting for its answer). Shared by the serve --mcp e2e and reliability tests.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { BIN } from "./cli-harness.js";

export type RpcMessage = {
  id?: unknown;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: unknown };
};

/** Polls `check` until it gives a value (not undefined or false); the bound is the failure. */
export async function until<T>(
  check: () => T | undefined | false | Promise<T | undefined | false>,
  what: string,
): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export class RawMcp {
  readonly child: ChildProcessWithoutNullStreams;
  readonly messages: RpcMessage[] = [];
  stderr = "";
  #pending = "";

  /** `args` follow `serve --mcp` (e.g. `--root DIR --trust`). */
  constructor(args: string[], env: NodeJS.ProcessEnv = {}) {
    this.child = spawn(process.execPath, [BIN, "serve", "--mcp", ...args], {
      env: { ...process.env, ...env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.child.stdin.on("error", () => {});
    this.child.stdout.on("data", (d: Buffer) => {
      this.#pending += d.toString("utf8");
      const lines = this.#pending.split("\n");
      this.#pending = lines.pop() ?? "";
      for (const line of lines) if (line.trim()) this.messages.push(JSON.parse(line) as RpcMessage);
    });
    this.child.stderr.on("data", (d: Buffer) => {
      this.stderr += d.toString("utf8");
    });
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  write(text: string): Promise<void> {
    return new Promise((resolve) => {
      if (this.child.stdin.write(text)) resolve();
      else this.child.stdin.once("drain", resolve);
    });
  }

  send(message: Record<string, unknown>): Promise<void> {
    return this.write(`${JSON.stringify({ jsonrpc: "2.0", ...message })}\n`);
  }

  reply(match: (m: RpcMessage) => boolean, what: string): Promise<RpcMessage> {
    return until(() => {
      if (!this.running && !this.messages.some(match))
        throw new Error(`serve --mcp exited (${this.child.exitCode}) before ${what}; stderr: ${this.stderr}`);
      return this.messages.find(match);
    }, what);
  }

  /** Sends a request and waits for the answer with its id. */
  async request(id: number, method: string, params: unknown = {}): Promise<RpcMessage> {
    await this.send({ id, method, params });
    return this.reply((m) => m.id === id && m.method === undefined, `the answer to ${method} (id ${id})`);
  }

  /** The handshake, waiting for the initialize answer before `notifications/initialized`. */
  async initialize(capabilities: Record<string, unknown> = {}): Promise<void> {
    await this.send({
      id: 0,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities, clientInfo: { name: "raw", version: "1" } },
    });
    await this.reply((m) => m.id === 0, "the initialize answer");
    await this.send({ method: "notifications/initialized" });
  }

  async stop(): Promise<void> {
    if (!this.running) return;
    const exited = new Promise((r) => this.child.once("exit", r));
    this.child.stdin.end();
    await exited;
  }
}
