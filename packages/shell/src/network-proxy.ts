import { lookup } from "node:dns/promises";
import { mkdtempSync, rmSync } from "node:fs";
import {
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type Server,
  type ServerResponse,
} from "node:http";
import { connect, type Socket } from "node:net";
import os from "node:os";
import path from "node:path";
import { ToolbeltError } from "@toolbelt/core";
import {
  type AllowEntry,
  canonicalIp,
  DEFAULT_PORTS,
  decide,
  ipListed,
  parseTarget,
  specialAddress,
  type Target,
} from "./network-allow.js";

// The proxy behind `agent.shell_network: { allow: [...] }`. A command runs in a network namespace
// of its own whose only way out is 127.0.0.1:<port>, which the sandbox helper relays to this
// proxy's unix socket (sandbox-exec.c, --net-proxy). The proxy runs in toolbelt, on the host's
// network, and lets through what the list allows:
// - `CONNECT host:port` (HTTPS and any TLS): the host and port must be listed; the name is resolved
//   here, once, and the connection goes to that address (a second lookup cannot rebind it); a
//   private, loopback or link-local address is reached only when listed as an IP. The tunnel's first
//   bytes are looked at: a TLS ClientHello must name the same host (SNI) when it names one; anything
//   but TLS goes through only to a port the list names itself (a raw TCP service the user listed).
// - an absolute-URI request (`GET http://host/path`, plain HTTP): the same checks, and the Host
//   header must name the same host as the URI; the request is forwarded to the resolved address.
// Everything else is refused (403), and each refusal is kept for the command's result.

/** Connections one command may hold through the proxy at once. */
export const MAX_PROXY_CONNECTIONS = 256;
/** Refusals a result lists (the rest are counted). */
const MAX_REFUSALS = 20;
/** Bound on resolving a name, connecting, and on the first bytes of a tunnel. */
const LOOKUP_MS = 15_000;
const CONNECT_MS = 30_000;
const FIRST_BYTES_MS = 30_000;
/** A ClientHello is read up to this many bytes (one TLS record). */
const MAX_HELLO = 16 * 1024 + 5;

export interface ProxyPolicy {
  entries: readonly AllowEntry[];
  /** Names resolved to these addresses instead of DNS (canonical). */
  hosts: Readonly<Record<string, string>>;
  /** Ports an entry without one allows (DEFAULT_PORTS unless a test narrows them). */
  defaultPorts?: readonly number[];
}

export interface Refusal {
  host: string;
  port: number;
  why: string;
}

type Resolved = { ok: true; address: string; family: 4 | 6 } | { ok: false; why: string };

/** One command's proxy: a unix socket in a private directory, closed when the command is done. */
export class NetworkProxy {
  readonly socketPath: string;
  readonly #dir: string;
  readonly #server: Server;
  readonly #policy: Required<ProxyPolicy>;
  readonly #refusals = new Map<string, Refusal>();
  #moreRefusals = 0;
  readonly #sockets = new Set<Socket>();
  #closing: Promise<void> | undefined;

  private constructor(dir: string, policy: ProxyPolicy) {
    this.#dir = dir;
    this.socketPath = path.join(dir, "proxy.sock");
    this.#policy = { defaultPorts: DEFAULT_PORTS, ...policy };
    this.#server = createServer({
      maxHeaderSize: 16 * 1024,
      requestTimeout: 120_000,
      headersTimeout: 30_000,
    });
    this.#server.maxConnections = MAX_PROXY_CONNECTIONS;
    this.#server.on("connection", (socket: Socket) => {
      this.#sockets.add(socket);
      socket.once("close", () => this.#sockets.delete(socket));
    });
    this.#server.on("connect", (req: IncomingMessage, socket: Socket, head: Buffer) => {
      void this.#tunnel(req, socket, head);
    });
    this.#server.on("request", (req: IncomingMessage, res: ServerResponse) => {
      void this.#forward(req, res);
    });
    // WebSocket and other upgrades over plain HTTP are not carried (wss:// goes through CONNECT).
    this.#server.on("upgrade", (_req: IncomingMessage, socket: Socket) => {
      socket.end(refusal(501, "toolbelt's proxy does not carry protocol upgrades over plain http"));
    });
    this.#server.on("clientError", (_error: Error, socket: Socket) => {
      if (socket.writable) socket.end(refusal(400, "a request toolbelt's proxy could not read"));
      else socket.destroy();
    });
  }

  /** Starts a proxy listening on a unix socket in a new private directory under the temp dir. */
  static async start(policy: ProxyPolicy): Promise<NetworkProxy> {
    const dir = mkdtempSync(path.join(os.tmpdir(), "toolbelt-net-"));
    const proxy = new NetworkProxy(dir, policy);
    // sun_path holds 108 bytes with its NUL.
    if (Buffer.byteLength(proxy.socketPath) > 107) {
      rmSync(dir, { recursive: true, force: true });
      throw new ToolbeltError(
        "EUNAVAILABLE",
        `the network proxy's socket path ${proxy.socketPath} is longer than a unix socket path may be; set TMPDIR to a shorter directory`,
      );
    }
    try {
      await new Promise<void>((resolve, reject) => {
        proxy.#server.once("error", reject);
        proxy.#server.listen(proxy.socketPath, () => resolve());
      });
    } catch (error) {
      rmSync(dir, { recursive: true, force: true });
      throw new ToolbeltError(
        "EUNAVAILABLE",
        `the network proxy could not start: ${(error as Error).message}`,
      );
    }
    return proxy;
  }

  /** What was refused so far, each host:port once, in order; and how many more were not listed. */
  refused(): { refusals: Refusal[]; more: number } {
    return { refusals: [...this.#refusals.values()], more: this.#moreRefusals };
  }

  /** Stops listening and ends every connection through it; removes its directory. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= new Promise<void>((resolve) => {
      this.#server.close(() => resolve());
      for (const socket of this.#sockets) socket.destroy();
    }).then(() => rmSync(this.#dir, { recursive: true, force: true }));
    return this.#closing;
  }

  #refuse(host: string, port: number, why: string): string {
    const key = `${host}:${port}`;
    if (!this.#refusals.has(key)) {
      if (this.#refusals.size < MAX_REFUSALS) this.#refusals.set(key, { host, port, why });
      else this.#moreRefusals += 1;
    }
    return `${host.length > 100 ? `${host.slice(0, 100)}…` : host}:${port}: ${why}`;
  }

  /** The policy's verdict on `host:port` and, when allowed, the one address to connect to. */
  async #admit(
    hostText: string,
    port: number,
  ): Promise<
    | { ok: true; target: Target; address: string; family: 4 | 6; explicitPort: boolean }
    | { ok: false; why: string }
  > {
    const target = parseTarget(hostText);
    if (typeof target === "string") return { ok: false, why: target };
    if (!Number.isInteger(port) || port < 1 || port > 65535)
      return { ok: false, why: `port ${port} is not a port` };
    const decision = decide(this.#policy.entries, target, port, this.#policy.defaultPorts);
    if (!decision.allowed) return { ok: false, why: decision.why };
    const resolved = await this.#resolve(target, port);
    if (!resolved.ok) return resolved;
    return {
      ok: true,
      target,
      address: resolved.address,
      family: resolved.family,
      explicitPort: decision.explicitPort,
    };
  }

  /**
   * Resolves `target` once (the hosts map, else the system resolver) and picks the first address
   * the command may reach: a private, loopback or link-local one only when listed as an IP.
   */
  async #resolve(target: Target, port: number): Promise<Resolved> {
    let addresses: Array<{ address: string; family: 4 | 6 }>;
    const mapped = target.kind === "name" ? this.#policy.hosts[target.host] : undefined;
    if (target.kind === "ip") addresses = [{ address: target.host, family: target.family }];
    else if (mapped) addresses = [{ address: mapped, family: mapped.includes(":") ? 6 : 4 }];
    else {
      try {
        const found = await withTimeout(lookup(target.host, { all: true, verbatim: true }), LOOKUP_MS);
        addresses = found.map((a) => ({ address: canonicalIp(a.address), family: a.family === 6 ? 6 : 4 }));
      } catch (error) {
        return {
          ok: false,
          why: `the name could not be resolved (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
        };
      }
    }
    const refused: string[] = [];
    for (const a of addresses) {
      const special = specialAddress(a.address);
      if (!special || ipListed(this.#policy.entries, a.address, port, this.#policy.defaultPorts))
        return { ok: true, ...a };
      refused.push(`${a.address} (${special})`);
    }
    return {
      ok: false,
      why: `it resolves to ${refused.join(", ") || "no address"}; a private, loopback or link-local address is reached only when listed as an IP in agent.shell_network.allow`,
    };
  }

  async #tunnel(req: IncomingMessage, client: Socket, head: Buffer): Promise<void> {
    client.on("error", () => client.destroy());
    const authority = splitAuthority(req.url ?? "");
    if (!authority) {
      client.end(
        refusal(400, `CONNECT needs host:port, not ${JSON.stringify((req.url ?? "").slice(0, 100))}`),
      );
      return;
    }
    const admitted = await this.#admit(authority.host, authority.port);
    if (!admitted.ok) {
      client.end(refusal(403, this.#refuse(authority.host, authority.port, admitted.why)));
      return;
    }
    let upstream: Socket;
    try {
      upstream = await open(admitted.address, authority.port, admitted.family);
    } catch (error) {
      client.end(refusal(502, `${authority.host}:${authority.port}: ${(error as Error).message}`));
      return;
    }
    this.#sockets.add(upstream);
    upstream.once("close", () => {
      this.#sockets.delete(upstream);
      client.destroy();
    });
    client.once("close", () => upstream.destroy());
    upstream.on("error", () => upstream.destroy());
    client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
    // What the server sends flows at once (a protocol where the server speaks first must work); what
    // the client sends waits until its first bytes are judged.
    upstream.pipe(client);
    const first = await firstBytes(client, head);
    const verdict = judgeTunnel(first, admitted.target, admitted.explicitPort);
    if (verdict) {
      this.#refuse(authority.host, authority.port, verdict);
      client.destroy();
      return;
    }
    upstream.write(first);
    client.pipe(upstream);
  }

  async #forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const fail = (status: number, message: string) => {
      if (!res.headersSent) res.writeHead(status, { "content-type": "text/plain", connection: "close" });
      res.end(`${message}\n`);
    };
    let url: URL;
    try {
      url = new URL(req.url ?? "");
    } catch {
      fail(
        400,
        "toolbelt's proxy takes absolute URIs (http://host/path) and CONNECT; this request is neither",
      );
      return;
    }
    if (url.protocol !== "http:") {
      fail(400, `toolbelt's proxy forwards http:// requests; for ${url.protocol} use CONNECT (HTTPS_PROXY)`);
      return;
    }
    // The URL parser normalises the host (numeric forms to a.b.c.d, IDNA): judge what the client wrote.
    const written = splitAuthority(authorityOf(req.url ?? ""), 80);
    if (!written) {
      fail(400, "the request's URI has no host");
      return;
    }
    const port = written.port;
    const hostHeader = req.headers.host;
    if (hostHeader !== undefined) {
      const named = splitAuthority(hostHeader, 80);
      if (!named || !sameHost(named.host, written.host) || named.port !== port) {
        fail(
          403,
          this.#refuse(
            written.host,
            port,
            `the Host header names ${hostHeader.slice(0, 100)}, not the host of the URI`,
          ),
        );
        return;
      }
    }
    const admitted = await this.#admit(written.host, port);
    if (!admitted.ok) {
      fail(403, this.#refuse(written.host, port, admitted.why));
      return;
    }
    const headers = withoutHopByHop(req.headers);
    headers.host = hostHeader ?? url.host;
    const upstream = httpRequest({
      host: admitted.address,
      family: admitted.family,
      port,
      method: req.method,
      path: `${url.pathname}${url.search}`,
      headers,
      setHost: false,
      agent: false,
      timeout: CONNECT_MS,
    });
    upstream.on("socket", (socket: Socket) => {
      this.#sockets.add(socket);
      socket.once("close", () => this.#sockets.delete(socket));
    });
    upstream.on("timeout", () => upstream.destroy(new Error("timed out")));
    upstream.on("error", (error) => fail(502, `${written.host}:${port}: ${error.message}`));
    res.once("close", () => upstream.destroy());
    upstream.on("response", (answer: IncomingMessage) => {
      res.writeHead(answer.statusCode ?? 502, answer.statusMessage, withoutHopByHop(answer.headers));
      answer.pipe(res);
    });
    req.pipe(upstream);
  }
}

function refusal(status: number, message: string): string {
  const reason =
    status === 403
      ? "Forbidden"
      : status === 400
        ? "Bad Request"
        : status === 501
          ? "Not Implemented"
          : "Bad Gateway";
  const body = `toolbelt's proxy (agent.shell_network.allow) refused: ${message}\n`;
  return `HTTP/1.1 ${status} ${reason}\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}

/** `host:port` (IPv6 in brackets) split, or undefined; `defaultPort` when the port may be left out. */
function splitAuthority(text: string, defaultPort?: number): { host: string; port: number } | undefined {
  const match = /^(\[[^\]]*\]|[^:[\]]*)(?::([0-9]{1,5}))?$/.exec(text);
  if (!match) return undefined;
  const port = match[2] === undefined ? defaultPort : Number(match[2]);
  if (port === undefined || !match[1]) return undefined;
  return { host: match[1], port };
}

/** The authority of an absolute http URI as written (`http://AUTHORITY/...`), without user info. */
function authorityOf(uri: string): string {
  const rest = uri.replace(/^http:\/\//i, "");
  const end = rest.search(/[/?#]/);
  const authority = end < 0 ? rest : rest.slice(0, end);
  return authority.slice(authority.lastIndexOf("@") + 1);
}

function sameHost(a: string, b: string): boolean {
  const x = parseTarget(a);
  const y = parseTarget(b);
  return typeof x !== "string" && typeof y !== "string" && x.kind === y.kind && x.host === y.host;
}

/** Headers that belong to one connection (and the proxy credentials), never passed on. */
const HOP_BY_HOP = new Set([
  "connection",
  "proxy-connection",
  "keep-alive",
  "proxy-authorization",
  "proxy-authenticate",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

function withoutHopByHop(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const listed = new Set(
    String(headers.connection ?? "")
      .split(",")
      .map((h) => h.trim().toLowerCase())
      .filter(Boolean),
  );
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers))
    if (value !== undefined && !HOP_BY_HOP.has(name) && !listed.has(name)) out[name] = value;
  return out;
}

function open(address: string, port: number, family: 4 | 6): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: address, port, family });
    const timer = setTimeout(() => socket.destroy(new Error("the connection timed out")), CONNECT_MS);
    socket.once("connect", () => {
      clearTimeout(timer);
      resolve(socket);
    });
    socket.once("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error("timed out"), { code: "ETIMEOUT" })), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * The client's first bytes in a tunnel: a whole TLS record when it starts one (up to MAX_HELLO),
 * else whatever arrived first; empty when the client sends nothing in FIRST_BYTES_MS or closes.
 */
function firstBytes(client: Socket, head: Buffer): Promise<Buffer> {
  return new Promise((resolve) => {
    let got = head;
    const done = () => {
      clearTimeout(timer);
      client.off("data", onData);
      client.off("end", done);
      client.off("close", done);
      client.pause();
      resolve(got);
    };
    const enough = () => {
      if (got.length === 0) return false;
      if (got[0] !== 0x16) return true;
      if (got.length < 5) return false;
      return got.length >= Math.min(MAX_HELLO, 5 + got.readUInt16BE(3));
    };
    const onData = (chunk: Buffer) => {
      got = Buffer.concat([got, chunk]);
      if (enough()) done();
    };
    const timer = setTimeout(done, FIRST_BYTES_MS);
    if (enough()) {
      done();
      return;
    }
    client.on("data", onData);
    client.once("end", done);
    client.once("close", done);
  });
}

/**
 * Why a tunnel's first bytes may not go on, or undefined: a TLS ClientHello naming another host
 * (SNI) than the CONNECT target, or anything but TLS to a port only the defaults allow.
 */
export function judgeTunnel(first: Buffer, target: Target, explicitPort: boolean): string | undefined {
  if (first.length === 0) return undefined;
  if (first[0] === 0x16) {
    const hello = clientHello(first);
    // A hello split over records (or cut short) could hide its name past what is read here.
    if (!hello)
      return "the tunnel's TLS handshake does not start with a whole ClientHello in its first record";
    const sni = hello.serverName;
    if (sni === undefined || target.kind !== "name") return undefined;
    const named = parseTarget(sni);
    if (typeof named !== "string" && named.kind === "name" && named.host === target.host) return undefined;
    return `the TLS handshake names ${sni.slice(0, 100)} (SNI), not the host of the CONNECT`;
  }
  if (explicitPort) return undefined;
  return "a tunnel on a port the list does not name itself must carry TLS (send plain http as an absolute-URI request through HTTP_PROXY)";
}

/**
 * A TLS ClientHello read from the first record in `record`: its server name (SNI) when it names one;
 * undefined when the record does not hold a whole ClientHello this can read.
 */
export function clientHello(record: Buffer): { serverName?: string } | undefined {
  // Record: type(1)=22, version(2), length(2); handshake: type(1)=1, length(3), version(2), random(32).
  if (record.length < 5 + 4 + 2 + 32 + 1 || record[0] !== 0x16 || record[5] !== 0x01) return undefined;
  const recordEnd = 5 + record.readUInt16BE(3);
  const helloEnd = 9 + ((record[6] as number) << 16) + record.readUInt16BE(7);
  if (recordEnd > record.length || helloEnd > recordEnd) return undefined;
  const end = helloEnd;
  let at = 5 + 4 + 2 + 32;
  const skip = (lengthBytes: number): boolean => {
    if (at + lengthBytes > end) return false;
    const length = lengthBytes === 1 ? (record[at] as number) : record.readUInt16BE(at);
    at += lengthBytes + length;
    return at <= end;
  };
  // Session id, cipher suites, compression methods.
  if (!skip(1) || !skip(2) || !skip(1)) return undefined;
  if (at === end) return {};
  if (at + 2 > end) return undefined;
  const extensionsEnd = Math.min(end, at + 2 + record.readUInt16BE(at));
  at += 2;
  while (at + 4 <= extensionsEnd) {
    const type = record.readUInt16BE(at);
    const length = record.readUInt16BE(at + 2);
    const body = at + 4;
    if (body + length > extensionsEnd) return undefined;
    if (type === 0) {
      // server_name: list length(2), then entries of type(1) length(2) name.
      let p = body + 2;
      while (p + 3 <= body + length) {
        const nameType = record[p] as number;
        const nameLength = record.readUInt16BE(p + 1);
        if (p + 3 + nameLength > body + length) return undefined;
        if (nameType === 0) return { serverName: record.toString("latin1", p + 3, p + 3 + nameLength) };
        p += 3 + nameLength;
      }
      return {};
    }
    at = body + length;
  }
  return at === extensionsEnd ? {} : undefined;
}
