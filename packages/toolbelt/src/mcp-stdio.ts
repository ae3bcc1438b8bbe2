import type { Readable, Writable } from "node:stream";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { type JSONRPCMessage, JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js";
import { MAX_JSON_DEPTH, nestsDeeperThan } from "@toolbelt/core/internal";
import { type BoundedLine, HEAD_BYTES, LineSplitter } from "./bounded-lines.js";

/** The largest JSON-RPC message `serve --mcp` reads (TOOLBELT_MCP_MAX_MESSAGE_BYTES overrides it). */
export const DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

/** JSON-RPC 2.0 error codes for messages that never reach the protocol layer. */
export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;

// Parser messages can quote the input; they are cut before they go back out or into a log.
const DETAIL_CHARS = 200;

type Id = string | number | null;

export type LineTransportOptions = {
  maxMessageBytes?: number;
  /** Where protocol problems are reported (default: stderr). */
  log?: (line: string) => void;
};

/**
 * MCP over newline-delimited JSON on stdio, like the SDK's stdio transport but hardened: a line over
 * the bound is skipped up to its newline without being held in memory, and a line that is not
 * JSON or not JSON-RPC gets a protocol error reply (-32700 / -32600) while the server keeps serving.
 * The SDK's transport instead closes the whole connection on a message over 10 MiB.
 */
export class LineTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  readonly maxMessageBytes: number;
  readonly #input: Readable;
  readonly #output: Writable;
  readonly #log: (line: string) => void;
  readonly #lines: LineSplitter;
  #closed = false;

  constructor(
    input: Readable = process.stdin,
    output: Writable = process.stdout,
    options: LineTransportOptions = {},
  ) {
    this.#input = input;
    this.#output = output;
    this.maxMessageBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    this.#lines = new LineSplitter(this.maxMessageBytes);
    this.#log = options.log ?? ((line) => process.stderr.write(`toolbelt: ${line}\n`));
  }

  async start(): Promise<void> {
    this.#input.on("data", this.#onData);
    this.#input.on("error", this.#onInputError);
    // A client that exits closes our stdin: that ends the connection.
    this.#input.once("end", this.#onEnd);
    // A client gone mid-write shows up as EPIPE on stdout; that too ends the connection, not the process.
    this.#output.on("error", this.#onOutputError);
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.#closed) return;
    const text = `${JSON.stringify(message)}\n`;
    await new Promise<void>((resolve) => {
      if (this.#output.write(text)) resolve();
      else this.#output.once("drain", resolve);
    });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#input.off("data", this.#onData);
    this.#input.off("error", this.#onInputError);
    this.#input.off("end", this.#onEnd);
    if (this.#input.listenerCount("data") === 0) this.#input.pause();
    this.onclose?.();
  }

  readonly #onEnd = (): void => {
    void this.close();
  };

  readonly #onInputError = (error: Error): void => {
    this.onerror?.(error);
  };

  readonly #onOutputError = (error: Error): void => {
    this.onerror?.(error);
    void this.close();
  };

  readonly #onData = (chunk: Buffer | string): void => {
    for (const line of this.#lines.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk)) {
      if (this.#closed) return;
      this.#handle(line);
    }
  };

  #handle(line: BoundedLine): void {
    if (typeof line !== "string") {
      const message = `a message of ${line.overBytes} bytes is over the ${describeBytes(this.maxMessageBytes)} limit of toolbelt serve --mcp; it was skipped`;
      this.#log(`mcp: ${message}`);
      this.#reply(topLevelId(line.head), INVALID_REQUEST, message);
      return;
    }
    if (line.trim() === "") return;
    if (nestsDeeperThan(line)) {
      const message = `Invalid Request: the message nests deeper than ${MAX_JSON_DEPTH} levels`;
      this.#log(`mcp: ${message}`);
      this.#reply(topLevelId(line.slice(0, HEAD_BYTES)), INVALID_REQUEST, message);
      return;
    }
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      const message = `Parse error: ${cut((error as Error).message)}`;
      this.#log(`mcp: a line that is not JSON got ${PARSE_ERROR}: ${message}`);
      this.#reply(null, PARSE_ERROR, message);
      return;
    }
    const parsed = JSONRPCMessageSchema.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where = issue ? `${issue.path.join(".") || "(message)"}: ${issue.message}` : "not a message";
      const message = Array.isArray(value)
        ? "Invalid Request: JSON-RPC batches are not supported"
        : `Invalid Request: not a JSON-RPC 2.0 message (${cut(where)})`;
      this.#log(`mcp: ${message}`);
      this.#reply(idOf(value), INVALID_REQUEST, message);
      return;
    }
    try {
      this.onmessage?.(parsed.data);
    } catch (error) {
      this.onerror?.(error as Error);
    }
  }

  #reply(id: Id, code: number, message: string): void {
    this.send({ jsonrpc: "2.0", id, error: { code, message } } as unknown as JSONRPCMessage).catch(() => {});
  }
}

function cut(text: string): string {
  return text.length > DETAIL_CHARS ? `${text.slice(0, DETAIL_CHARS)}…` : text;
}

function describeBytes(bytes: number): string {
  const mib = bytes / (1024 * 1024);
  return Number.isInteger(mib) ? `${mib} MiB` : `${bytes} byte`;
}

function idOf(value: unknown): Id {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  const id = (value as { id?: unknown }).id;
  return typeof id === "string" || (typeof id === "number" && Number.isFinite(id)) ? id : null;
}

/**
 * The `id` of the top-level object of a JSON text that was cut short, or null. Walks keys and skips
 * values without parsing them, so an `id` nested in params is never taken for the request's.
 */
export function topLevelId(head: string): Id {
  let i = 0;
  const n = head.length;
  const space = () => {
    while (i < n && (head[i] === " " || head[i] === "\t" || head[i] === "\r" || head[i] === "\n")) i++;
  };
  // At a quote: moves past the string; false when it runs past the head.
  const string = (): boolean => {
    i++;
    while (i < n) {
      const c = head[i++];
      if (c === '"') return true;
      if (c === "\\") i++;
    }
    return false;
  };
  const value = (): boolean => {
    space();
    const c = head[i];
    if (c === '"') return string();
    if (c === "{" || c === "[") {
      let depth = 0;
      while (i < n) {
        const d = head[i];
        if (d === '"') {
          if (!string()) return false;
          continue;
        }
        if (d === "{" || d === "[") depth++;
        else if (d === "}" || d === "]") depth--;
        i++;
        if (depth === 0) return true;
      }
      return false;
    }
    while (i < n && !",}] \t\r\n".includes(head[i] as string)) i++;
    return i < n;
  };
  space();
  if (head[i] !== "{") return null;
  i++;
  for (;;) {
    space();
    if (head[i] !== '"') return null;
    const keyStart = i;
    if (!string()) return null;
    const key = head.slice(keyStart, i);
    space();
    if (head[i] !== ":") return null;
    i++;
    space();
    const valueStart = i;
    if (!value()) return null;
    if (key === '"id"') {
      try {
        const id = JSON.parse(head.slice(valueStart, i)) as unknown;
        return typeof id === "string" || (typeof id === "number" && Number.isFinite(id)) ? id : null;
      } catch {
        return null;
      }
    }
    space();
    if (head[i] !== ",") return null;
    i++;
  }
}
