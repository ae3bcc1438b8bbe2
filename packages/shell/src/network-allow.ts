import { isIPv4, isIPv6 } from "node:net";

// `agent.shell_network: { allow: [...] }`: which hosts a command may reach through the proxy. Pure
// parsing and matching, no I/O: the config schema (contrib.ts) validates entries with it, the trust
// rule compares lists with it, and the proxy (network-proxy.ts) decides every connection with it.

/** Ports an entry without one allows: HTTP and HTTPS. */
export const DEFAULT_PORTS: readonly number[] = [80, 443];

/** An allow-list entry: `host`, `*.domain`, an IP, each optionally with `:port`. */
export interface AllowEntry {
  /** As written in the config. */
  text: string;
  kind: "name" | "wildcard" | "ip";
  /** A lower-case name; for `wildcard` the suffix after `*.`; for `ip` the canonical address. */
  host: string;
  /** The port listed, or undefined for DEFAULT_PORTS. */
  port: number | undefined;
}

/** A host a command asked for: a name, or an IP literal (canonical form). */
export type Target = { kind: "name"; host: string } | { kind: "ip"; host: string; family: 4 | 6 };

const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;
/** What inet_aton reads as a number (decimal, octal, hex): `127.1`, `0x7f.1`, `2130706433`. */
const NUMERIC_PART = /^(?:0x[0-9a-f]*|[0-9]+)$/;
export const MAX_HOST_LENGTH = 253;

/**
 * A host as a command names it (a CONNECT authority's host, a URL's), checked: an IPv4 literal in
 * dotted-quad form, an IPv6 literal in brackets (no zone), or a DNS name of letters, digits, `-` and
 * `_` of at most 253 characters. Numeric forms other than the dotted quad (`127.1`, `0x7f000001`,
 * what the C library would read as an address) are refused, as is anything else: a string says why.
 */
export function parseTarget(raw: string): Target | string {
  if (raw.length === 0) return "an empty host";
  if (raw.length > MAX_HOST_LENGTH + 2) return `a host name longer than ${MAX_HOST_LENGTH} characters`;
  if (raw.startsWith("[")) {
    const inner = raw.endsWith("]") ? raw.slice(1, -1) : "";
    if (!isIPv6(inner) || inner.includes("%")) return `${raw} is not an IPv6 address in brackets`;
    return { kind: "ip", host: canonicalIp(inner), family: 6 };
  }
  if (isIPv4(raw)) return { kind: "ip", host: raw, family: 4 };
  let name = raw.toLowerCase();
  if (name.endsWith(".")) name = name.slice(0, -1);
  if (name.length === 0 || name.length > MAX_HOST_LENGTH)
    return `a host name of ${name.length} characters (1 to ${MAX_HOST_LENGTH})`;
  const labels = name.split(".");
  if (!labels.every((l) => LABEL.test(l))) return `${raw.slice(0, 80)} is not a host name`;
  if (labels.length <= 4 && labels.every((l) => NUMERIC_PART.test(l)))
    return `${raw} is a numeric address in a form other than a.b.c.d`;
  return { kind: "name", host: name };
}

/** Whether `text` is an IPv4 address (dotted quad) or an IPv6 address without a zone. */
export function isIpAddress(text: string): boolean {
  return isIPv4(text) || (isIPv6(text) && !text.includes("%"));
}

/** The canonical text of an IP address (IPv6 compressed, lower-case; IPv4-mapped IPv6 as IPv4). */
export function canonicalIp(ip: string): string {
  if (isIPv4(ip)) return ip;
  const bytes = ipv6Bytes(ip);
  if (!bytes) return ip.toLowerCase();
  if (isMapped(bytes)) return bytes.slice(12).join(".");
  return new URL(`http://[${ip}]`).hostname.slice(1, -1);
}

/** Parses one allow-list entry; a string says what is wrong with it. */
export function parseAllowEntry(text: string): AllowEntry | string {
  let hostPart = text;
  let portPart: string | undefined;
  const bracket = /^(\[[^\]]*\])(?::(.*))?$/.exec(text);
  if (bracket) {
    hostPart = bracket[1] as string;
    portPart = bracket[2];
  } else if (isIPv6(text)) {
    hostPart = `[${text}]`;
  } else {
    const colon = text.lastIndexOf(":");
    if (colon >= 0) {
      hostPart = text.slice(0, colon);
      portPart = text.slice(colon + 1);
    }
  }
  let port: number | undefined;
  if (portPart !== undefined) {
    if (!/^[0-9]{1,5}$/.test(portPart) || Number(portPart) < 1 || Number(portPart) > 65535)
      return `${JSON.stringify(text)}: the port must be a number from 1 to 65535`;
    port = Number(portPart);
  }
  if (hostPart === "*" || hostPart === "*.")
    return `${JSON.stringify(text)}: "*" alone would allow every host; set agent.shell_network to "on" for that`;
  const wildcard = hostPart.startsWith("*.");
  const target = parseTarget(wildcard ? hostPart.slice(2) : hostPart);
  if (typeof target === "string") return `${JSON.stringify(text)}: ${target}`;
  if (wildcard && target.kind === "ip")
    return `${JSON.stringify(text)}: a wildcard applies to names, not addresses`;
  return { text, kind: wildcard ? "wildcard" : target.kind, host: target.host, port };
}

/** Whether `entry` names `target` (a wildcard `*.d` names every name under `d`, not `d` itself). */
function names(entry: AllowEntry, target: Target): boolean {
  if (entry.kind === "ip") return target.kind === "ip" && target.host === entry.host;
  if (target.kind !== "name") return false;
  return entry.kind === "name" ? target.host === entry.host : target.host.endsWith(`.${entry.host}`);
}

function portsOf(entry: AllowEntry, defaults: readonly number[]): readonly number[] {
  return entry.port === undefined ? defaults : [entry.port];
}

export type Decision =
  | { allowed: true /** An entry lists this port itself (not just the defaults). */; explicitPort: boolean }
  | { allowed: false; why: string };

/** Whether the list lets a command reach `target` on `port`, and if not, why (in words for a note). */
export function decide(
  entries: readonly AllowEntry[],
  target: Target,
  port: number,
  defaults: readonly number[] = DEFAULT_PORTS,
): Decision {
  const named = entries.filter((e) => names(e, target));
  if (named.length === 0) return { allowed: false, why: "not in agent.shell_network.allow" };
  const fits = named.filter((e) => portsOf(e, defaults).includes(port));
  if (fits.length === 0) {
    const ports = [...new Set(named.flatMap((e) => portsOf(e, defaults)))].sort((a, b) => a - b);
    return { allowed: false, why: `port ${port} is not allowed for it (allowed: ${ports.join(", ")})` };
  }
  return { allowed: true, explicitPort: fits.some((e) => e.port !== undefined) };
}

/** Whether `ip` (canonical) on `port` is listed as an address itself: what lets a private one through. */
export function ipListed(
  entries: readonly AllowEntry[],
  ip: string,
  port: number,
  defaults: readonly number[] = DEFAULT_PORTS,
): boolean {
  return entries.some((e) => e.kind === "ip" && e.host === ip && portsOf(e, defaults).includes(port));
}

/** Whether everything `inner` allows, `outer` allows too (an untrusted project may only narrow). */
export function covers(outer: AllowEntry, inner: AllowEntry): boolean {
  const ports = portsOf(inner, DEFAULT_PORTS);
  if (!ports.every((p) => portsOf(outer, DEFAULT_PORTS).includes(p))) return false;
  if (outer.kind === "ip" || inner.kind === "ip")
    return outer.kind === inner.kind && outer.host === inner.host;
  if (outer.kind === "name") return inner.kind === "name" && inner.host === outer.host;
  // `*.d` covers `x.d` and `*.x.d`, and `*.d` itself.
  return inner.host === outer.host ? inner.kind === "wildcard" : inner.host.endsWith(`.${outer.host}`);
}

/**
 * Why an address may not be reached unless listed as an IP: loopback, private, link-local, shared
 * (CGNAT), multicast, reserved, documentation or unspecified, or undefined for a public address.
 * IPv4 inside IPv6 (mapped, NAT64, 6to4) is judged as the IPv4 address it carries.
 */
export function specialAddress(ip: string): string | undefined {
  if (isIPv4(ip)) return specialV4(ip.split(".").map(Number));
  const bytes = ipv6Bytes(ip);
  if (!bytes) return "not an address";
  if (isMapped(bytes)) return specialV4(bytes.slice(12));
  const word = (i: number) => ((bytes[i] as number) << 8) | (bytes[i + 1] as number);
  if (bytes.every((b) => b === 0)) return "unspecified";
  if (bytes.slice(0, 15).every((b) => b === 0) && bytes[15] === 1) return "loopback";
  // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) carry an IPv4 address.
  if (word(0) === 0x64 && word(2) === 0xff9b && bytes.slice(4, 12).every((b) => b === 0))
    return specialV4(bytes.slice(12));
  if (word(0) === 0x2002) return specialV4(bytes.slice(2, 6));
  if (bytes.slice(0, 12).every((b) => b === 0)) return "reserved (IPv4-compatible)";
  if ((word(0) & 0xfe00) === 0xfc00) return "private (unique local)";
  if ((word(0) & 0xffc0) === 0xfe80) return "link-local";
  if ((word(0) & 0xffc0) === 0xfec0) return "private (site-local)";
  if ((bytes[0] as number) === 0xff) return "multicast";
  if (word(0) === 0x2001 && word(2) === 0x0db8) return "documentation";
  if (word(0) === 0x0100 && bytes.slice(2, 8).every((b) => b === 0)) return "reserved (discard)";
  if (word(0) === 0x2001 && word(2) === 0) return "reserved (Teredo)";
  return undefined;
}

function specialV4(b: number[]): string | undefined {
  const [a = 0, c = 0, d = 0] = [b[0], b[1], b[2]];
  if (a === 0) return "unspecified";
  if (a === 127) return "loopback";
  if (a === 10 || (a === 172 && c >= 16 && c <= 31) || (a === 192 && c === 168)) return "private";
  if (a === 169 && c === 254) return "link-local";
  if (a === 100 && c >= 64 && c <= 127) return "shared (carrier-grade NAT)";
  if (a === 192 && c === 0 && d === 0) return "reserved (IETF)";
  if (
    (a === 192 && c === 0 && d === 2) ||
    (a === 198 && c === 51 && d === 100) ||
    (a === 203 && c === 0 && d === 113)
  )
    return "documentation";
  if (a === 198 && (c === 18 || c === 19)) return "reserved (benchmarking)";
  if (a >= 224 && a <= 239) return "multicast";
  if (a >= 240) return "reserved";
  return undefined;
}

function isMapped(bytes: number[]): boolean {
  return bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
}

/** The 16 bytes of an IPv6 address (with an embedded dotted IPv4 tail), or undefined. */
function ipv6Bytes(ip: string): number[] | undefined {
  if (!isIPv6(ip) || ip.includes("%")) return undefined;
  let text = ip.toLowerCase();
  const tail: number[] = [];
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const v4 = (dotted[1] as string).split(".").map(Number);
    tail.push(...v4);
    text = `${text.slice(0, dotted.index)}0:0`;
  }
  const [head, rest] = text.split("::") as [string, string | undefined];
  const groups = (s: string) => (s === "" ? [] : s.split(":").map((g) => Number.parseInt(g, 16)));
  const left = groups(head);
  const right = rest === undefined ? [] : groups(rest);
  const zeros = 8 - left.length - right.length;
  const words = rest === undefined ? left : [...left, ...new Array(zeros).fill(0), ...right];
  if (words.length !== 8) return undefined;
  const bytes = words.flatMap((w) => [(w >> 8) & 0xff, w & 0xff]);
  if (tail.length === 4) bytes.splice(12, 4, ...tail);
  return bytes;
}
