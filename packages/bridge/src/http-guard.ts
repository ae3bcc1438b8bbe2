// Who may talk to a toolbelt HTTP server: the bearer token (compared in constant time) and the
// Host/Origin allowlist that stops DNS rebinding (a web page whose name resolves to 127.0.0.1 reaching
// a local server from the user's browser). The HTTP API and MCP over HTTP check requests through this.
import { timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { isIP } from "node:net";

/** Whether `given` is `token`, in constant time (for equal lengths; the length itself is no secret). */
export function tokenMatches(given: string | null | undefined, token: string): boolean {
  if (!given) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The token of an `Authorization: Bearer <token>` header, if the request has one. */
export function bearerToken(req: IncomingMessage): string | undefined {
  const header = req.headers.authorization;
  if (!header || !/^bearer /i.test(header)) return undefined;
  return header.slice("bearer ".length).trim();
}

/** Whether a listening address (as given to --host) is loopback: 127.0.0.0/8, ::1, localhost. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
  if (bare.toLowerCase() === "localhost") return true;
  if (isIP(bare) === 4) return bare.startsWith("127.");
  if (isIP(bare) === 6) return hostOfHeader(`[${bare}]`) === "[::1]";
  return false;
}

/** The names and origins a server answers to. */
export interface HostAllowlist {
  /** Host names (no port), lower case; IPv6 in brackets. */
  hosts: ReadonlySet<string>;
  /** Origins (`scheme://host[:port]`), as `new URL(...).origin` writes them. */
  origins: ReadonlySet<string>;
}

const LOOPBACK_NAMES = ["localhost", "127.0.0.1", "[::1]"];
const WILDCARD = new Set(["0.0.0.0", "::", "[::]"]);

/** A host name as a Host header would carry it after URL normalisation (`[::1]`, lower case). */
function hostName(host: string): string {
  return hostOfHeader(isIP(host) === 6 ? `[${host}]` : host) ?? host.toLowerCase();
}

/**
 * What a server listening on `host:port` answers to: the loopback names, the address it listens on
 * (unless a wildcard, whose names nobody can know: add them), and the extra hosts and origins given.
 * An allowed host `h` also allows the origin `http://h:port`, the page a browser opens at that address.
 */
export function hostAllowlist(options: {
  host: string;
  port: number;
  allowedHosts?: readonly string[];
  allowedOrigins?: readonly string[];
}): HostAllowlist {
  const hosts = new Set(LOOPBACK_NAMES);
  if (!WILDCARD.has(options.host)) hosts.add(hostName(options.host));
  for (const extra of options.allowedHosts ?? []) hosts.add(hostName(extra));
  const origins = new Set<string>();
  for (const h of hosts) origins.add(new URL(`http://${h}:${options.port}`).origin);
  for (const origin of options.allowedOrigins ?? []) origins.add(originOf(origin));
  return { hosts, origins };
}

/** An origin as the allowlist keeps it; a value that is no `scheme://host` origin is refused at start. */
export function originOf(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`${value} is not an origin: write scheme://host[:port], e.g. http://localhost:6274`);
  }
  if (url.origin === "null" || (url.pathname !== "/" && url.pathname !== "") || url.search || url.hash)
    throw new Error(`${value} is not an origin: write scheme://host[:port], e.g. http://localhost:6274`);
  return url.origin;
}

/** The host name of a Host header (`name:port`, `[v6]:port`), lower case; undefined when malformed. */
function hostOfHeader(header: string): string | undefined {
  try {
    const url = new URL(`http://${header}`);
    if (url.username || url.password || url.pathname !== "/") return undefined;
    return url.hostname.toLowerCase();
  } catch {
    return undefined;
  }
}

/**
 * Why the request's Host or Origin header is refused (answer 403), or undefined when both are allowed.
 * A request without Origin is not from a web page (browsers always send it on these requests);
 * without Host it is not HTTP/1.1.
 */
export function refusedHost(req: IncomingMessage, allow: HostAllowlist): string | undefined {
  const host = req.headers.host;
  const name = host === undefined ? undefined : hostOfHeader(host);
  if (name === undefined || !allow.hosts.has(name))
    return `Host ${JSON.stringify(host ?? "")} is not one this server answers to (${[...allow.hosts].join(", ")}; add one with --allowed-host)`;
  const origin = req.headers.origin;
  if (origin === undefined) return undefined;
  let normal: string;
  try {
    normal = new URL(origin).origin;
  } catch {
    normal = origin;
  }
  if (!allow.origins.has(normal))
    return `Origin ${JSON.stringify(origin)} is not allowed (add it with --allowed-origin if that page may use this server)`;
  return undefined;
}
