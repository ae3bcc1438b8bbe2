import path from "node:path";

/** What a sandboxed command may write, read back from the helper's argv. */
export interface WritableSet {
  root: string;
  tmpdir: string;
  /** Every `--write` path (root, tmpdir, devices, shell_sandbox_allowed_paths). */
  write: string[];
  /** Protected paths bound read-only (`--ro`). */
  readOnly: string[];
  /** Reads are confined (`--confine-reads`) to the `--write` and these `--read` paths. */
  confinedReads: boolean;
  read: string[];
}

export function writableSet(prefix: readonly string[], root: string, tmpdir: string): WritableSet {
  const write: string[] = [];
  const readOnly: string[] = [];
  const read: string[] = [];
  let confinedReads = false;
  for (let i = 0; i < prefix.length - 1; i++) {
    if (prefix[i] === "--") break;
    if (prefix[i] === "--write") write.push(prefix[i + 1] as string);
    if (prefix[i] === "--ro") readOnly.push(prefix[i + 1] as string);
    if (prefix[i] === "--read") read.push(prefix[i + 1] as string);
    if (prefix[i] === "--confine-reads") confinedReads = true;
  }
  return { root, tmpdir, write, readOnly, confinedReads, read };
}

export interface SandboxDenial {
  /** The path as the output named it. */
  path: string;
  /** `outside_readable`: neither readable nor writable (reads are confined). */
  why: "outside_writable" | "outside_readable" | "protected_read_only";
}

/** A line that reports a refused access, in the words of the tools that print them. */
const DENIAL =
  /permission denied|read-only file system|operation not permitted|\bEACCES\b|\bEPERM\b|\bEROFS\b/i;
const QUOTED = /'([^'\n]{1,4096})'|‘([^’\n]{1,4096})’|"([^"\n]{1,4096})"|`([^`'\n]{1,4096})'/g;
const ABSOLUTE = /(?:^|[\s(=])(\/[^\s'"’:),]{1,4096})/g;
/** Output lines looked at: a flood of denials says enough in its first lines. */
const MAX_LINES = 200;
const MAX_DENIALS = 5;

function inside(abs: string, dir: string): boolean {
  const rel = path.relative(dir, abs);
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

/** Path-like words of one denial line: quoted names, absolute paths, the field before the reason. */
function candidates(line: string): string[] {
  const out: string[] = [];
  for (const m of line.matchAll(QUOTED)) out.push((m[1] ?? m[2] ?? m[3] ?? m[4]) as string);
  for (const m of line.matchAll(ABSOLUTE)) out.push(m[1] as string);
  // "bash: line 1: configs/app.json: Read-only file system"
  const fields = line.split(": ");
  const at = fields.findIndex((f) => DENIAL.test(f));
  if (at > 0) out.push((fields[at - 1] as string).trim());
  // "/bin/bash: line 1: /usr/x: Permission denied": with more fields before the reason, the first
  // names the program reporting it (often by its absolute path), not a path it was refused.
  const program = at > 1 ? (fields[0] as string).trim() : undefined;
  return out.filter(
    (c) => c.length > 0 && c !== program && !c.includes(" ") && (c.includes("/") || c.includes(".")),
  );
}

/**
 * The paths a sandboxed command's output says it could not write, which the sandbox would refuse:
 * outside every writable path, or a protected path bound read-only. A denial on a path the sandbox
 * allows (file modes, another user's file) is not the sandbox's doing and is not named.
 */
export function sandboxDenials(output: string, cwdAbs: string, set: WritableSet): SandboxDenial[] {
  const found = new Map<string, SandboxDenial>();
  let seen = 0;
  for (const line of output.split("\n")) {
    if (!DENIAL.test(line)) continue;
    if (++seen > MAX_LINES || found.size >= MAX_DENIALS) break;
    for (const candidate of candidates(line)) {
      const abs = path.resolve(cwdAbs, candidate);
      if (found.has(abs)) continue;
      if (set.readOnly.some((ro) => inside(abs, ro)))
        found.set(abs, { path: candidate, why: "protected_read_only" });
      else if (!set.write.some((w) => inside(abs, w))) {
        const unreadable = set.confinedReads && !set.read.some((r) => inside(abs, r));
        found.set(abs, { path: candidate, why: unreadable ? "outside_readable" : "outside_writable" });
      }
    }
  }
  return [...found.values()].slice(0, MAX_DENIALS);
}

/** Whether any line reports a refused access at all. */
export function reportsDenial(output: string): boolean {
  return DENIAL.test(output);
}

/** The writable set in words, for a note: what a sandboxed command may write. */
export function describeWritable(set: WritableSet): string {
  const extra = set.write.filter((w) => w !== set.root && w !== set.tmpdir && !w.startsWith("/dev/"));
  return ["the project root", "the command's $TMPDIR", ...extra, "/dev/null and other devices"].join(", ");
}

/**
 * A line that reports a failed connection or name lookup, in the words of curl, wget, git, ssh, npm,
 * pip, Node, Python and the C library: under a network namespace the host is unreachable, its
 * loopback refuses and DNS times out; under Landlock a TCP connect is EACCES.
 */
const NETWORK_FAILURE = new RegExp(
  [
    "network is unreachable",
    "\\bENETUNREACH\\b",
    "\\bEHOSTUNREACH\\b",
    "no route to host",
    "connection refused",
    "\\bECONNREFUSED\\b",
    "couldn't connect to server",
    "failed to connect",
    "unable to connect",
    "connect\\(?\\)?:? (?:EACCES|permission denied)",
    "\\bconnect EACCES\\b",
    "\\blisten EACCES\\b",
    "could not resolve",
    "unable to resolve",
    "couldn't resolve",
    "temporary failure in name resolution",
    "name or service not known",
    "\\bEAI_AGAIN\\b",
    "\\bENOTFOUND\\b",
    "getaddrinfo",
    "\\bErrno 101\\b",
    "\\bErrno 13\\b.*(?:socket|connect)",
    "network access (?:is )?(?:denied|disabled)",
  ].join("|"),
  "i",
);

export const NETWORK_OFF_NOTE = "network is off for sandboxed commands (agent.shell_network: off)";

/** Whether any of the first lines reports a failed connection or lookup. */
export function reportsNetworkFailure(output: string): boolean {
  let seen = 0;
  for (const line of output.split("\n")) {
    if (++seen > MAX_LINES * 5) return false;
    if (NETWORK_FAILURE.test(line)) return true;
  }
  return false;
}

/** The note for a network-off command whose output shows a connection or lookup that failed. */
export function networkNote(mechanism: "netns" | "landlock", output: string): string | undefined {
  if (!reportsNetworkFailure(output)) return undefined;
  const how =
    mechanism === "netns"
      ? "the command has a network namespace of its own: no host is reachable, 127.0.0.1 is its own loopback (not the host's) and name lookups fail"
      : "Landlock refuses every TCP connect and bind (EACCES), loopback included";
  return `${NETWORK_OFF_NOTE}: ${how}; set agent.shell_network to "on" in your own config to allow it`;
}

/** How a command's network is limited: off (a namespace, Landlock), or the allow list's proxy. */
export type NetworkLimit = "netns" | "landlock" | "proxy";

export const NETWORK_ALLOW_NOTE = "network is limited to the hosts in agent.shell_network.allow";

/** A connection the allow list's proxy refused. */
export interface NetworkRefusal {
  host: string;
  port: number;
  why: string;
}

/**
 * The note for a command limited to the allow list: the hosts the proxy refused (and why), or, when
 * it refused none but the output shows a failed connection or lookup, how the command gets out.
 */
export function allowListNote(
  refused: { refusals: NetworkRefusal[]; more: number },
  output: string,
): string | undefined {
  if (refused.refusals.length > 0) {
    const list = refused.refusals.map((r) => `${r.host}:${r.port} (${r.why})`).join("; ");
    const more = refused.more > 0 ? `; and ${refused.more} more` : "";
    return `${NETWORK_ALLOW_NOTE}: the proxy refused ${list}${more}. Add a host to the list in your own config to allow it`;
  }
  if (!reportsNetworkFailure(output)) return undefined;
  return `${NETWORK_ALLOW_NOTE}, reached only through toolbelt's proxy (HTTP_PROXY / HTTPS_PROXY are set for the command): a direct connection, a name lookup or UDP gets nowhere, and 127.0.0.1 is the command's own loopback`;
}

/**
 * Puts the network note on a result (with the allow list: and the refused connections). It replaces
 * the generic "refused access" note (a Landlock EACCES on connect is not a file), and goes before a
 * note that names denied paths.
 */
export function noteNetwork(
  result: { sandbox_note?: string; sandbox_denied?: SandboxDenial[]; network_refused?: NetworkRefusal[] },
  mechanism: NetworkLimit | undefined,
  output: string,
  refused?: { refusals: NetworkRefusal[]; more: number },
): void {
  if (mechanism === "proxy" && refused?.refusals.length) result.network_refused = refused.refusals;
  const note =
    mechanism === "proxy"
      ? allowListNote(refused ?? { refusals: [], more: 0 }, output)
      : mechanism && networkNote(mechanism, output);
  if (!note) return;
  result.sandbox_note =
    result.sandbox_denied?.length && result.sandbox_note ? `${note}; ${result.sandbox_note}` : note;
}
