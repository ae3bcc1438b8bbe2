import { createPrivateKey } from "node:crypto";
import { existsSync } from "node:fs";
import path from "node:path";
import type { ToolbeltConfig } from "@toolbelt/core";
import { ToolbeltError, z } from "@toolbelt/core";
import { MCP_JSON } from "@toolbelt/core/config-paths";
import type { BoundedFile } from "@toolbelt/core/internal";
import { MAX_CONFIG_BYTES, readFileInRoot, readRegularFile } from "@toolbelt/core/internal";
import type { McpServerConfig, OAuthSettings } from "./contrib.js";

/** The file, at the project root, in the common `{ "mcpServers": { ... } }` format (named once, in core). */
export { MCP_JSON };

export type StdioServerSpec = {
  name: string;
  transport: "stdio";
  command: string;
  args: string[];
  env: Record<string, string>;
  /** Absolute; defaults to the project root. */
  cwd: string;
  /** Where the entry came from: `.mcp.json` or `configs/app.json`. */
  source: string;
};

export type HttpServerSpec = {
  name: string;
  /** `http` is streamable HTTP; `sse` the older HTTP+SSE transport. */
  transport: "http" | "sse";
  url: string;
  headers: Record<string, string>;
  /** A client that is not registered dynamically (config only, never .mcp.json). */
  oauth?: ResolvedOAuth;
  source: string;
};

/**
 * A server's `oauth` settings with the secrets read (from the environment or their files) and the
 * private key checked. Held in memory only: never logged, never in events, results or messages.
 */
export type ResolvedOAuth = {
  grant: "authorization_code" | "client_credentials" | "cross_app_access";
  client_id?: string;
  client_secret?: string;
  client_metadata_url?: string;
  /** client_credentials: the only authorization server the credentials are sent to. */
  issuer?: string;
  scope?: string;
  /** client_credentials with private_key_jwt: PKCS#8 PEM and the JWS algorithm its type implies. */
  private_key?: { pem: string; algorithm: string };
  /** cross_app_access: the identity provider the user's ID token is exchanged at, and that token. */
  idp?: IdentityProvider;
};

/** cross_app_access: where and how the user's ID token is exchanged for an identity assertion grant. */
export type IdentityProvider = {
  /** The only URL the ID token is sent to. */
  token_endpoint: string;
  client_id: string;
  client_secret?: string;
  /** The ID token itself (from the environment), or the file it is read from at each exchange. */
  id_token: { value: string } | { file: string };
};

export type ServerSpec = StdioServerSpec | HttpServerSpec;

/** Whether toolbelt gets this server's token by itself (nobody signs in with `toolbelt mcp login`). */
export function unattendedGrant(
  oauth: ResolvedOAuth | undefined,
): oauth is ResolvedOAuth & { grant: "client_credentials" | "cross_app_access" } {
  return oauth?.grant === "client_credentials" || oauth?.grant === "cross_app_access";
}

/** A secret or key file is small: anything larger is not one. */
const MAX_SECRET_FILE_BYTES = 64 * 1024;

/** The JWS algorithm of a private key, by its type (RFC 7518); the key's text is never quoted. */
function keyAlgorithm(pem: string, key: string): { pem: string; algorithm: string } {
  let parsed: ReturnType<typeof createPrivateKey>;
  try {
    parsed = createPrivateKey({ key: pem, format: "pem" });
  } catch {
    throw new Error(`${key}: not a PEM private key`);
  }
  const curve = parsed.asymmetricKeyDetails?.namedCurve;
  const algorithm =
    parsed.asymmetricKeyType === "rsa"
      ? "RS256"
      : parsed.asymmetricKeyType === "rsa-pss"
        ? "PS256"
        : parsed.asymmetricKeyType === "ed25519"
          ? "EdDSA"
          : parsed.asymmetricKeyType === "ec"
            ? ({ prime256v1: "ES256", secp384r1: "ES384", secp521r1: "ES512" } as Record<string, string>)[
                curve ?? ""
              ]
            : undefined;
  if (!algorithm)
    throw new Error(
      `${key}: a ${parsed.asymmetricKeyType}${curve ? ` ${curve}` : ""} key cannot sign a client assertion (use RSA, EC P-256/384/521 or Ed25519)`,
    );
  // PKCS#1 and SEC1 keys are accepted too: the signer takes PKCS#8.
  return { pem: parsed.export({ type: "pkcs8", format: "pem" }).toString(), algorithm };
}

/** Reads a secret file named by the config: absolute, regular, small; its text without the final newline. */
function readSecretFile(file: string, key: string): string {
  if (!path.isAbsolute(file)) throw new Error(`${key}: ${JSON.stringify(file)} is not an absolute path`);
  let read: BoundedFile;
  try {
    read = readRegularFile(file, { maxBytes: MAX_SECRET_FILE_BYTES });
  } catch (error) {
    // The code only: an error's text is not repeated where it might carry part of a file.
    const code = (error as { code?: unknown }).code;
    throw new Error(`${key}: cannot read ${file}${typeof code === "string" ? ` (${code})` : ""}`);
  }
  if (read.truncated) throw new Error(`${key}: ${file} is larger than ${MAX_SECRET_FILE_BYTES} bytes`);
  const text = read.bytes.toString("utf8").replace(/\r?\n$/, "");
  if (!text) throw new Error(`${key}: ${file} is empty`);
  return text;
}

/** Reads an ID token file for an exchange (see readSecretFile); called again for each exchange. */
export function readIdTokenFile(file: string): string {
  return readSecretFile(file, "oauth.id_token_file");
}

/** The keys each grant takes besides client_id and the client secret. */
const GRANT_KEYS = {
  authorization_code: ["client_metadata_url"],
  client_credentials: ["issuer", "scope", "private_key", "private_key_file"],
  cross_app_access: [
    "issuer",
    "scope",
    "idp_token_endpoint",
    "idp_client_id",
    "idp_client_secret",
    "idp_client_secret_file",
    "id_token",
    "id_token_file",
  ],
} as const satisfies Record<ResolvedOAuth["grant"], ReadonlyArray<keyof OAuthSettings>>;

const LOOPBACK_HOSTS = new Set(["127.0.0.1", "[::1]", "localhost"]);

/** Resolves a config entry's `oauth`: secrets read, the grant's required keys checked. */
function resolveOAuth(oauth: OAuthSettings, expand: (key: string, value: string) => string): ResolvedOAuth {
  const grant = oauth.grant ?? "authorization_code";
  for (const key of Object.keys(oauth) as Array<keyof OAuthSettings>) {
    if (key === "grant" || key === "client_id" || key === "client_secret" || key === "client_secret_file")
      continue;
    if (!(GRANT_KEYS[grant] as ReadonlyArray<string>).includes(key)) {
      const takers = (Object.keys(GRANT_KEYS) as Array<ResolvedOAuth["grant"]>).filter((g) =>
        (GRANT_KEYS[g] as ReadonlyArray<string>).includes(key),
      );
      throw new Error(`oauth.${key}: only for grant ${takers.map((g) => `"${g}"`).join(" or ")}`);
    }
  }
  const only = (key: keyof OAuthSettings, other: keyof OAuthSettings) => {
    if (oauth[key] !== undefined && oauth[other] !== undefined)
      throw new Error(`oauth: give ${key} or ${other}, not both`);
  };
  const secretOf = (key: "client_secret" | "idp_client_secret" | "private_key") => {
    const file = `${key}_file` as const;
    only(key, file);
    const value = oauth[key];
    const named = oauth[file];
    return value !== undefined
      ? expand(`oauth.${key}`, value)
      : named !== undefined
        ? readSecretFile(expand(`oauth.${file}`, named), `oauth.${file}`)
        : undefined;
  };
  const secret = secretOf("client_secret");
  const common = {
    ...(oauth.client_id ? { client_id: oauth.client_id } : {}),
    ...(secret !== undefined ? { client_secret: secret } : {}),
  };
  if (grant === "authorization_code")
    return {
      grant,
      ...common,
      ...(oauth.client_metadata_url ? { client_metadata_url: oauth.client_metadata_url } : {}),
    };
  if (!oauth.client_id) throw new Error(`oauth.client_id: required for grant "${grant}"`);
  // Without it the MCP server's metadata would choose who receives the credentials.
  if (!oauth.issuer)
    throw new Error(
      `oauth.issuer: required for grant "${grant}" (the authorization server the credentials may be sent to)`,
    );
  const bound = { grant, ...common, issuer: oauth.issuer, ...(oauth.scope ? { scope: oauth.scope } : {}) };
  if (grant === "client_credentials") {
    const pem = secretOf("private_key");
    if ((secret === undefined) === (pem === undefined))
      throw new Error(
        'oauth: grant "client_credentials" needs a client_secret (or client_secret_file) or a private_key (or private_key_file), one of them',
      );
    return {
      ...bound,
      ...(pem !== undefined
        ? {
            private_key: keyAlgorithm(
              pem,
              oauth.private_key ? "oauth.private_key" : "oauth.private_key_file",
            ),
          }
        : {}),
    };
  }
  if (secret === undefined)
    throw new Error('oauth: grant "cross_app_access" needs a client_secret (or client_secret_file)');
  if (!oauth.idp_token_endpoint)
    throw new Error('oauth.idp_token_endpoint: required for grant "cross_app_access"');
  // The ID token is a bearer credential for the user: never sent over the network in clear.
  const endpoint = new URL(oauth.idp_token_endpoint);
  if (
    endpoint.protocol !== "https:" &&
    !(endpoint.protocol === "http:" && LOOPBACK_HOSTS.has(endpoint.hostname))
  )
    throw new Error("oauth.idp_token_endpoint: must be an https URL (http only on a loopback host)");
  if (!oauth.idp_client_id) throw new Error('oauth.idp_client_id: required for grant "cross_app_access"');
  only("id_token", "id_token_file");
  if (oauth.id_token === undefined && oauth.id_token_file === undefined)
    throw new Error('oauth: grant "cross_app_access" needs an id_token (or id_token_file)');
  let idToken: IdentityProvider["id_token"];
  if (oauth.id_token_file !== undefined) {
    const file = expand("oauth.id_token_file", oauth.id_token_file);
    // Read now so a wrong path is reported at start; read again at each exchange.
    readIdTokenFile(file);
    idToken = { file };
  } else idToken = { value: expand("oauth.id_token", oauth.id_token as string) };
  const idpSecret = secretOf("idp_client_secret");
  return {
    ...bound,
    idp: {
      token_endpoint: endpoint.href,
      client_id: oauth.idp_client_id,
      ...(idpSecret !== undefined ? { client_secret: idpSecret } : {}),
      id_token: idToken,
    },
  };
}

/**
 * A configured server that is not started: invalid as written, or (`skipped`) named by a file of a
 * project that is not trusted. Reported, never thrown.
 */
export type ServerProblem = { name: string; source: string; error: string; skipped?: boolean };

export interface ServerSpecOptions {
  /** Whether the project's own `.mcp.json` may start servers (and have `${VAR}`s expanded). */
  projectTrusted: boolean;
}

const UNTRUSTED_MCP_JSON =
  "not started: the project is not trusted, so its .mcp.json starts nothing (toolbelt trust DIR, --trust, or TOOLBELT_TRUST=1)";

export type ServerSpecs = { servers: ServerSpec[]; problems: ServerProblem[] };

const stringRecord = z.record(z.string(), z.string({ error: "expected a string" }));

// .mcp.json is shared with other agents, which add their own keys (description, timeout, ...):
// known keys are checked, unknown ones are ignored.
const mcpJsonEntry = z.looseObject({
  type: z
    .enum(["stdio", "http", "streamable-http", "streamableHttp", "sse"], {
      error: "expected stdio, http, streamable-http or sse",
    })
    .optional(),
  command: z.string().min(1, "must not be empty").optional(),
  args: z
    .array(z.string({ error: "expected a string" }), { error: "expected an array of strings" })
    .optional(),
  env: stringRecord.optional(),
  cwd: z.string().optional(),
  url: z.string().optional(),
  headers: stringRecord.optional(),
  disabled: z.boolean().optional(),
});

/**
 * True when the config names a server, or a trusted project has a `.mcp.json` (cheap: no parsing of
 * .mcp.json). An untrusted project's `.mcp.json` starts nothing, so it does not count.
 */
export function hasMcpServers(
  root: string,
  config: Pick<ToolbeltConfig, "mcpServers">,
  options: ServerSpecOptions = { projectTrusted: false },
): boolean {
  if (Object.keys(config.mcpServers ?? {}).length > 0) return true;
  return options.projectTrusted && existsSync(path.join(root, MCP_JSON));
}

/**
 * Expands `${VAR}` and `${VAR:-default}` from the environment, as other agents do in .mcp.json,
 * so secrets stay out of the file. An unset variable without a default is an error.
 */
export function expandEnv(value: string, env: NodeJS.ProcessEnv = process.env): string {
  return value.replace(
    /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g,
    (_m, name: string, fallback?: string) => {
      const found = env[name];
      if (found !== undefined && found !== "") return found;
      if (fallback !== undefined) return fallback;
      throw new Error(`\${${name}} is not set in the environment`);
    },
  );
}

function issueText(issue: z.core.$ZodIssue): string {
  const where = issue.path.map(String).join(".");
  return where ? `${where}: ${issue.message}` : issue.message;
}

type RawEntry = {
  type?: string | undefined;
  command?: string | undefined;
  args?: string[] | undefined;
  env?: Record<string, string> | undefined;
  cwd?: string | undefined;
  url?: string | undefined;
  headers?: Record<string, string> | undefined;
};

/**
 * Turns one validated entry into a spec; throws an Error whose message names the key. `oauth` comes
 * from config entries only: a project's .mcp.json never names the client toolbelt signs in as.
 */
function toSpec(
  name: string,
  entry: RawEntry,
  root: string,
  source: string,
  oauth?: OAuthSettings,
): ServerSpec {
  const expand = (key: string, value: string): string => {
    try {
      return expandEnv(value);
    } catch (error) {
      throw new Error(`${key}: ${(error as Error).message}`);
    }
  };
  const expandRecord = (key: string, record: Record<string, string> | undefined) =>
    Object.fromEntries(Object.entries(record ?? {}).map(([k, v]) => [k, expand(`${key}.${k}`, v)]));
  const isHttp = entry.type !== undefined && entry.type !== "stdio";
  if (entry.command !== undefined && !isHttp) {
    return {
      name,
      transport: "stdio",
      command: expand("command", entry.command),
      args: (entry.args ?? []).map((a, i) => expand(`args.${i}`, a)),
      env: expandRecord("env", entry.env),
      cwd: path.resolve(root, entry.cwd ? expand("cwd", entry.cwd) : "."),
      source,
    };
  }
  if (entry.url !== undefined && entry.type !== "stdio") {
    const url = expand("url", entry.url);
    try {
      const parsed = new URL(url);
      if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw new Error("not http(s)");
    } catch {
      throw new Error(`url: ${JSON.stringify(url)} is not an http(s) URL`);
    }
    return {
      name,
      transport: entry.type === "sse" ? "sse" : "http",
      url,
      headers: expandRecord("headers", entry.headers),
      ...(oauth ? { oauth: resolveOAuth(oauth, expand) } : {}),
      source,
    };
  }
  if (entry.type === "stdio" || (entry.type === undefined && entry.url === undefined))
    throw new Error("command: required for a stdio server (or give url for an HTTP server)");
  throw new Error(`url: required for a ${entry.type} server`);
}

/**
 * The text of the project's `.mcp.json`, `undefined` when there is none. Read as core reads every
 * checkout file: never blocking (a FIFO), only a regular file, at most MAX_CONFIG_BYTES. An untrusted
 * project's file must stay inside the project: a symlink leaving it is refused, never followed. A
 * trusted project's may link a shared file. Throws (an Error naming the file) when it cannot be read.
 */
export function readMcpJsonText(root: string, trusted: boolean): string | undefined {
  const file = path.join(root, MCP_JSON);
  let read: BoundedFile;
  try {
    read = trusted
      ? readRegularFile(file, { maxBytes: MAX_CONFIG_BYTES })
      : readFileInRoot(root, MCP_JSON, { maxBytes: MAX_CONFIG_BYTES });
  } catch (error) {
    if (ToolbeltError.isInstance(error) && error.code === "ENOENT") return undefined;
    throw new Error(`cannot read ${file}: ${(error as Error).message}`, { cause: error });
  }
  if (read.truncated)
    throw new Error(
      `cannot read ${file}: larger than ${MAX_CONFIG_BYTES} bytes (1 MiB), the limit for a config file; not read`,
    );
  return read.bytes.toString("utf8");
}

function readMcpJson(
  root: string,
  specs: Map<string, ServerSpec | ServerProblem>,
  trusted: boolean,
): ServerProblem[] {
  let text: string | undefined;
  try {
    text = readMcpJsonText(root, trusted);
  } catch (error) {
    return [{ name: MCP_JSON, source: MCP_JSON, error: (error as Error).message }];
  }
  if (text === undefined) return [];
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return [
      {
        name: MCP_JSON,
        source: MCP_JSON,
        error: `${MCP_JSON} is not valid JSON: ${(error as Error).message}`,
      },
    ];
  }
  const servers = (json as { mcpServers?: unknown } | null)?.mcpServers;
  if (typeof servers !== "object" || servers === null || Array.isArray(servers)) {
    return [
      {
        name: MCP_JSON,
        source: MCP_JSON,
        error: `${MCP_JSON}: expected {"mcpServers": {"<name>": {...}}} at the top level`,
      },
    ];
  }
  for (const [name, raw] of Object.entries(servers as Record<string, unknown>)) {
    // Nothing of an untrusted file is expanded or started: ${VAR} would send the environment to
    // whatever URL or command the checkout names.
    if (!trusted) {
      if ((raw as { disabled?: unknown } | null)?.disabled !== true)
        specs.set(name, { name, source: MCP_JSON, error: UNTRUSTED_MCP_JSON, skipped: true });
      continue;
    }
    const parsed = mcpJsonEntry.safeParse(raw);
    if (!parsed.success) {
      const problems = parsed.error.issues.map(issueText).join("; ");
      specs.set(name, { name, source: MCP_JSON, error: `${MCP_JSON}: server "${name}": ${problems}` });
      continue;
    }
    if (parsed.data.disabled === true) continue;
    try {
      specs.set(name, toSpec(name, parsed.data, root, MCP_JSON));
    } catch (error) {
      specs.set(name, {
        name,
        source: MCP_JSON,
        error: `${MCP_JSON}: server "${name}": ${(error as Error).message}`,
      });
    }
  }
  return [];
}

/**
 * The servers a session at `root` starts: `.mcp.json` first (only for a trusted project), then
 * `mcpServers` of the config, whose entry wins when both name the same server. The config holds only
 * what trusted sources set (the user's config, --config, SDK options, a trusted project's
 * configs/app.json). Invalid entries come back as problems naming the server and the key, so the other
 * servers still start; an untrusted `.mcp.json`'s servers come back as skipped problems.
 */
export function readServerSpecs(
  root: string,
  config: Pick<ToolbeltConfig, "mcpServers">,
  options: ServerSpecOptions = { projectTrusted: false },
): ServerSpecs {
  const specs = new Map<string, ServerSpec | ServerProblem>();
  const fileProblems = readMcpJson(root, specs, options.projectTrusted);
  for (const [name, entry] of Object.entries(config.mcpServers ?? {}) as Array<[string, McpServerConfig]>) {
    try {
      specs.set(name, toSpec(name, entry, root, "config", "oauth" in entry ? entry.oauth : undefined));
    } catch (error) {
      specs.set(name, {
        name,
        source: "config",
        error: `config mcpServers.${name}: ${(error as Error).message}`,
      });
    }
  }
  const servers: ServerSpec[] = [];
  const problems: ServerProblem[] = [...fileProblems];
  for (const spec of specs.values()) {
    if ("error" in spec) problems.push(spec);
    else servers.push(spec);
  }
  return { servers, problems };
}

/** A one-line description of how a server starts, for doctor and mcp_status (no header values). */
export function describeSpec(spec: ServerSpec): string {
  if (spec.transport === "stdio") return [spec.command, ...spec.args].join(" ");
  return `${spec.transport} ${spec.url}`;
}
