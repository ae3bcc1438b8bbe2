import { existsSync } from "node:fs";
import path from "node:path";
import {
  type ConfigContribution,
  type ContributedKeys,
  defineConfigSection,
  type EventFieldsOf,
  type SectionInputs,
  type SectionValues,
  trustRules,
  type UntrustedFileSetting,
  z,
} from "@toolbelt/core";
import { defineBuiltinEvents } from "@toolbelt/core/internal";
import { readMcpJsonText } from "./server-config.js";

// The mcp family's config key, light (zod and core types only): the CLI validates `mcpServers`
// without importing the MCP SDK.

/**
 * How toolbelt authenticates to the server's authorization server when it is not registered
 * dynamically. `grant: "authorization_code"` (the default, a person signs in with `toolbelt mcp
 * login`): a pre-registered client (`client_id`, `client_secret`) or a client ID metadata document
 * (`client_metadata_url`). `grant: "client_credentials"` (machine to machine, nobody signs in): the
 * client's own credentials, a secret (client_secret_basic/post) or a private key (private_key_jwt),
 * sent only to `issuer`. `grant: "cross_app_access"` (enterprise-managed, SEP-990, nobody signs in
 * here): the user's ID token from the organisation's identity provider is exchanged there (RFC 8693)
 * for an identity assertion grant, which the client, with its secret, trades at `issuer` for a token
 * (RFC 7523). Secrets come from the environment (`${VAR}`) or a file, never the config text itself in
 * a shared file. Read from `mcpServers` in config only (the user's config, --config, a trusted
 * project's configs/app.json), never from `.mcp.json`.
 */
const oauthSchema = z.strictObject({
  grant: z
    .enum(["authorization_code", "client_credentials", "cross_app_access"])
    .optional()
    .describe(
      "authorization_code (default: a person signs in with `toolbelt mcp login`), client_credentials (machine to machine, unattended) or cross_app_access (the organisation's identity provider vouches for the user, unattended)",
    ),
  client_id: z
    .string()
    .min(1)
    .optional()
    .describe("a client registered with the authorization server beforehand"),
  client_secret: z
    .string()
    .min(1)
    .optional()
    .describe(
      "that client's secret, best a reference to an environment variable (never the secret itself in a shared file)",
    ),
  client_secret_file: z
    .string()
    .min(1)
    .optional()
    .describe(
      "an absolute path (environment variable references expanded) of a file holding the client secret, instead of client_secret",
    ),
  private_key: z
    .string()
    .min(1)
    .optional()
    .describe(
      "client_credentials with private_key_jwt: the client's PEM private key, as a reference to an environment variable",
    ),
  private_key_file: z
    .string()
    .min(1)
    .optional()
    .describe(
      "an absolute path (environment variable references expanded) of the PEM private key file, instead of private_key",
    ),
  issuer: z
    .string()
    .url()
    .optional()
    .describe(
      "client_credentials and cross_app_access: the authorization server's issuer URL; the credentials are sent to no other, whatever the MCP server's metadata names",
    ),
  scope: z
    .string()
    .min(1)
    .optional()
    .describe("client_credentials and cross_app_access: the scope to ask for (space-separated)"),
  idp_token_endpoint: z
    .string()
    .url()
    .optional()
    .describe(
      "cross_app_access: the identity provider's token endpoint, where the ID token is exchanged; https (http only on a loopback host). The ID token is sent nowhere else",
    ),
  idp_client_id: z
    .string()
    .min(1)
    .optional()
    .describe("cross_app_access: toolbelt's client at the identity provider"),
  idp_client_secret: z
    .string()
    .min(1)
    .optional()
    .describe(
      "cross_app_access: that client's secret at the identity provider, if it has one, best a reference to an environment variable",
    ),
  idp_client_secret_file: z
    .string()
    .min(1)
    .optional()
    .describe(
      "an absolute path (environment variable references expanded) of a file holding the identity provider client's secret, instead of idp_client_secret",
    ),
  id_token: z
    .string()
    .min(1)
    .optional()
    .describe(
      "cross_app_access: the user's ID token from the identity provider, as a reference to an environment variable",
    ),
  id_token_file: z
    .string()
    .min(1)
    .optional()
    .describe(
      "an absolute path (environment variable references expanded) of a file holding the user's ID token, instead of id_token; read again for each exchange, so a sign-in tool may renew it",
    ),
  client_metadata_url: z
    .string()
    .url()
    .refine((u) => u.startsWith("https://"), "must be an https URL")
    .optional()
    .describe(
      "an https URL serving toolbelt's client metadata, used as client_id where the server supports it",
    ),
});
export type OAuthSettings = z.infer<typeof oauthSchema>;

const mcpServerSchema = z.union([
  z.strictObject({
    type: z.literal("stdio").optional(),
    command: z.string(),
    args: z.array(z.string()).default([]),
    env: z.record(z.string(), z.string()).optional(),
    cwd: z.string().optional(),
  }),
  z.strictObject({
    type: z.enum(["http", "streamable-http", "sse"]).optional(),
    url: z.string().url(),
    headers: z.record(z.string(), z.string()).optional(),
    oauth: oauthSchema.optional(),
  }),
]);
export type McpServerConfig = z.infer<typeof mcpServerSchema>;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The servers an untrusted project's `.mcp.json` names (none start): reported as ignored. */
function mcpJsonIgnored(root: string): UntrustedFileSetting[] {
  const file = path.join(root, ".mcp.json");
  if (!existsSync(file)) return [];
  const unreadable = [{ key: ".mcp.json", source: ".mcp.json", why: "names MCP servers to start" }];
  let text: string | undefined;
  try {
    // Untrusted: read only if it is the project's own regular file, bounded (see readMcpJsonText).
    text = readMcpJsonText(root, false);
  } catch (error) {
    return [
      {
        key: ".mcp.json",
        source: ".mcp.json",
        why: `names MCP servers to start; ${(error as Error).message}`,
      },
    ];
  }
  try {
    const servers = (JSON.parse(text ?? "{}") as { mcpServers?: unknown })?.mcpServers;
    if (!isRecord(servers)) return unreadable;
    return Object.entries(servers)
      .filter(([, entry]) => !(isRecord(entry) && entry.disabled === true))
      .map(([name]) => ({ key: `mcpServers.${name}`, source: ".mcp.json", why: "starts an MCP server" }));
  } catch {
    return unreadable;
  }
}

/** What toolbelt answers when a server asks the user for input (`elicitation/create`). */
export const ELICITATION_POLICIES = ["ask", "decline", "accept_defaults"] as const;
export type ElicitationPolicy = (typeof ELICITATION_POLICIES)[number];

const keys = {
  mcpServers: {
    schema: z.record(z.string(), mcpServerSchema).default({}).describe("MCP servers to start, by name"),
    trust: trustRules.eachEntry("starts an MCP server"),
  },
  "tools.mcp.elicitation": {
    schema: z
      .enum(ELICITATION_POLICIES)
      .optional()
      .describe(
        'What a server\'s request for input gets: "ask" the person through the client (default; declined when nobody can answer), "decline" always, or "accept_defaults": accept with the defaults the request names (for unattended runs)',
      ),
    // An untrusted project may make toolbelt decline more, never answer on the user's behalf.
    trust: trustRules.when(
      (value, current) => value === "decline" || value === current,
      "answers MCP servers' questions without asking",
    ),
  },
} satisfies ContributedKeys;

/** One field of an elicitation form: a flat primitive, as MCP allows (string, number, boolean, enum, multi-select). */
export type ElicitationField = {
  type: "string" | "number" | "integer" | "boolean" | "array";
  title?: string;
  description?: string;
  default?: ElicitationValue;
  minLength?: number;
  maxLength?: number;
  format?: "email" | "uri" | "date" | "date-time";
  minimum?: number;
  maximum?: number;
  enum?: string[];
  enumNames?: string[];
  oneOf?: Array<{ const: string; title: string }>;
  minItems?: number;
  maxItems?: number;
  items?: { type?: "string"; enum?: string[]; anyOf?: Array<{ const: string; title: string }> };
};

/** The form an MCP server asks to be filled: a flat object of primitive fields. */
export interface ElicitationSchema {
  type: "object";
  properties: Record<string, ElicitationField>;
  required?: string[];
}

export type ElicitationValue = string | number | boolean | string[];

/** What reaches the client when a project's MCP server asks the user for input (form mode). */
export interface ElicitationRequest {
  elicitation_id: string;
  /** The server's name as configured. */
  server: string;
  message: string;
  requested_schema: ElicitationSchema;
}

/** The client's answer: `accept` with the form's content, `decline`, or `cancel` (dismissed). */
export interface ElicitationResult {
  action: "accept" | "decline" | "cancel";
  content?: Record<string, ElicitationValue>;
  /** Why it was declined or cancelled, for the tool result and events; never sent to the server. */
  reason?: string;
}

export const mcpEvents = defineBuiltinEvents("mcp", {
  /** A project's MCP server asked the user for input during a call (values are never in events). */
  elicitation_requested: {
    elicitation_id: z.string(),
    server: z.string(),
    message: z.string(),
    fields: z.array(z.string()),
  },
  elicitation_resolved: {
    elicitation_id: z.string(),
    server: z.string(),
    action: z.enum(["accept", "decline", "cancel"]),
    /** Who answered: `client`, or `policy` (decline / accept_defaults without asking). */
    by: z.enum(["client", "policy"]),
    reason: z.string().optional(),
  },
});

export const mcpConfig: ConfigContribution<typeof keys> = defineConfigSection({
  owner: "mcp",
  keys,
  untrustedFiles: mcpJsonIgnored,
  docs: "MCP servers whose tools the session offers (mcp__SERVER__TOOL).",
});

export const contributions = { config: [mcpConfig], events: [mcpEvents], toolKeys: ["mcp"] };

// Light too (no SDK): the CLI asks it before it loads the family.
export { hasMcpServers } from "./server-config.js";

declare module "@toolbelt/core" {
  interface ContributedConfig extends SectionValues<Pick<typeof keys, "mcpServers">> {}
  interface ContributedConfigInput extends SectionInputs<Pick<typeof keys, "mcpServers">> {}
  interface ContributedToolFields {
    /** tools.mcp.elicitation (see ELICITATION_POLICIES). */
    elicitation?: ElicitationPolicy;
  }
  interface EventMap extends EventFieldsOf<typeof mcpEvents> {}
  interface ClientInfo {
    /**
     * Answers a project's MCP server that asks the user for input (elicitation, form mode). Without
     * it, and without `ask` (questions), toolbelt does not offer elicitation to servers.
     */
    elicit?: (request: ElicitationRequest, signal: AbortSignal) => Promise<ElicitationResult>;
  }
}
