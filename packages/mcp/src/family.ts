import {
  type AnyTool,
  asAnyTool,
  type DoctorCheck,
  type DoctorContext,
  definePlugin,
  defineTool,
  type Plugin,
  renderText,
  type Session,
  z,
} from "@toolbelt/core";
import { McpConnection, mcpDepth } from "./connection.js";
import { contributions } from "./contrib.js";
import { answerElicitation, offersElicitation } from "./elicitation.js";
import { describeSpec, type HttpServerSpec, readServerSpecs, type ServerProblem } from "./server-config.js";
import { MCP_LIMITS, planTools, type ServerToolPlan } from "./tools.js";

/** A toolbelt this many MCP hops deep starts no servers, so a project naming itself cannot recurse. */
export const MAX_MCP_DEPTH = 3;

const STATE_KEY = "mcp";

const serverStatus = z.object({
  server: z.string(),
  state: z.enum(["starting", "ready", "failed", "crashed", "closed", "invalid", "skipped"]),
  source: z.string(),
  start: z.string().optional().describe("how it starts (command line or URL); never headers or env values"),
  tools: z.number().int().describe("tools registered in the session (after the limits)"),
  listed: z.number().int().optional().describe("tools the server listed, when that differs from `tools`"),
  notes: z
    .array(z.string())
    .optional()
    .describe("what the limits refused, cut or renamed (a colliding name's suffix is said here)"),
  error: z.string().optional(),
  started_in_ms: z.number().optional(),
});

export const mcpStatusPayload = z.object({
  kind: z.literal("mcp_status"),
  servers: z.array(serverStatus),
  down: z.array(z.string()),
  limits: z
    .object({
      tools_per_server: z.number().int(),
      name_chars: z.number().int(),
      description_chars: z.number().int(),
      schema_bytes: z.number().int(),
    })
    .describe("the bounds every server's tool list is held to"),
});

export type ServerStatus = z.output<typeof serverStatus>;
export type McpStatusPayload = z.output<typeof mcpStatusPayload>;

/** The servers one root session started; forks and sub-agents share their root's. */
export class McpServers {
  readonly connections: McpConnection[] = [];
  /** Servers that were not started: invalid entries, or every server when nesting is too deep. */
  readonly problems: Array<ServerProblem & { skipped?: boolean }> = [];
  skipped: string | undefined;
  /** The tools each server has registered, as last planned across all servers. */
  plans = new Map<McpConnection, ServerToolPlan>();

  /**
   * Plans the names of every server's tools together and returns the servers whose registered
   * tools changed. A crashed server keeps its names: its tools stay, answering EUNAVAILABLE.
   */
  replan(): McpConnection[] {
    const live = this.connections.filter((c) => c.state === "ready" || c.state === "crashed");
    const next = planTools(live);
    const changed = live.filter((c) => {
      const before = this.plans.get(c)?.tools.map((t) => t.name);
      const after = next.get(c)?.tools.map((t) => t.name);
      return before === undefined || before.join("\n") !== after?.join("\n");
    });
    this.plans = next;
    return changed;
  }

  status(): ServerStatus[] {
    const rows: ServerStatus[] = this.connections.map((c) => {
      const plan = c.state === "ready" ? this.plans.get(c) : undefined;
      const tools = plan?.tools.length ?? 0;
      return {
        server: c.name,
        state: c.state,
        source: c.spec.source,
        start: describeSpec(c.spec),
        tools,
        ...(plan && plan.listed !== tools ? { listed: plan.listed } : {}),
        ...(plan?.notes.length ? { notes: plan.notes } : {}),
        ...(c.error ? { error: c.error } : {}),
        ...(c.startedInMs !== undefined ? { started_in_ms: c.startedInMs } : {}),
      };
    });
    for (const p of this.problems)
      rows.push({
        server: p.name,
        state: p.skipped ? "skipped" : "invalid",
        source: p.source,
        tools: 0,
        error: p.error,
      });
    return rows;
  }

  down(): string[] {
    return this.status()
      .filter((s) => s.state !== "ready")
      .map((s) => s.server);
  }

  async closeAll(): Promise<void> {
    await Promise.all(this.connections.map((c) => c.close()));
  }
}

function rootOf(session: Session): Session {
  let s = session;
  while (s.parent) s = s.parent;
  return s;
}

/** The servers of a session (its root session's), if the mcp family set them up. */
export function mcpServersOf(session: Session): McpServers {
  return rootOf(session).state(STATE_KEY, () => new McpServers());
}

export function renderStatus(payload: McpStatusPayload): string {
  const body = payload.servers
    .map((s) => {
      const listed = s.listed !== undefined ? ` of ${s.listed} listed` : "";
      const head = `${s.server}: ${s.state}, ${s.tools} tool${s.tools === 1 ? "" : "s"}${listed} (${s.source}${s.start ? `: ${s.start}` : ""})`;
      const lines = [head, ...(s.notes ?? []).map((n) => `  - ${n}`), ...(s.error ? [`  ${s.error}`] : [])];
      return lines.join("\n");
    })
    .join("\n");
  const l = payload.limits;
  return renderText(
    [
      ["Kind", payload.kind],
      ["Servers", payload.servers.length],
      ["Down", payload.down.join(", ") || "(none)"],
      [
        "Limits",
        `${l.tools_per_server} tools per server, names up to ${l.name_chars} chars, descriptions cut at ${l.description_chars} chars, input schemas up to ${l.schema_bytes} bytes`,
      ],
    ],
    body || "No MCP servers are configured (.mcp.json or mcpServers in configs/app.json).",
  );
}

const STATUS_DESCRIPTION =
  "Show the project's MCP servers (from .mcp.json and config): which are running, their tool counts, and why a server is down.";

/**
 * mcp_status: which of the project's MCP servers run, how many tools each gave, and why one is down.
 * Its description names the servers that are down, so the model learns it without calling it.
 */
export function mcpStatusTool(down: string[] = []): AnyTool {
  return asAnyTool(
    defineTool({
      name: "mcp_status",
      family: "mcp",
      access: "read",
      description: down.length ? `${STATUS_DESCRIPTION} Down now: ${down.join(", ")}.` : STATUS_DESCRIPTION,
      input: z.object({}),
      output: mcpStatusPayload,
      execute(_input, ctx) {
        const servers = mcpServersOf(ctx.session);
        return {
          kind: "mcp_status",
          servers: servers.status(),
          down: servers.down(),
          limits: MCP_LIMITS,
        };
      },
      render: renderStatus,
    }),
  );
}

/**
 * Starts every configured server of the session's root concurrently, each within its start timeout,
 * and registers its tools as `mcp__<server>__<tool>` under the source `mcp:<server>`.
 */
export async function startServers(session: Session): Promise<McpServers> {
  const servers = mcpServersOf(session);
  const { servers: specs, problems } = readServerSpecs(session.root, session.config, {
    projectTrusted: session.trust.trusted,
  });
  servers.problems.push(...problems);
  if (mcpDepth() >= MAX_MCP_DEPTH) {
    servers.skipped = `not started: this toolbelt is ${mcpDepth()} MCP hops deep (TOOLBELT_MCP_DEPTH)`;
    for (const spec of specs)
      servers.problems.push({ name: spec.name, source: spec.source, error: servers.skipped, skipped: true });
    session.registerTools("mcp", [mcpStatusTool(servers.down())]);
    return servers;
  }
  session.onClose(() => servers.closeAll());
  // A server's new list can rename another server's tools (a collision resolved the other way), so
  // every change re-plans all servers and re-registers those whose names moved.
  const register = (trigger?: McpConnection) => {
    if (session.closed) return;
    const changed = new Set(servers.replan());
    if (trigger) changed.add(trigger);
    for (const connection of changed)
      session.registerTools(`mcp:${connection.name}`, servers.plans.get(connection)?.tools ?? []);
  };
  const announceStatus = () => {
    if (!session.closed) session.registerTools("mcp", [mcpStatusTool(servers.down())]);
  };
  const asks = offersElicitation(session);
  const connections = specs.map(
    (spec) =>
      new McpConnection(spec, {
        onToolsChanged: register,
        onDown: announceStatus,
        ...(asks
          ? { elicit: (params, signal) => answerElicitation(session, spec.name, params, signal) }
          : {}),
      }),
  );
  servers.connections.push(...connections);
  await Promise.all(connections.map((c) => c.start()));
  register();
  announceStatus();
  return servers;
}

/** Starts each configured server once, reports whether it started and how many tools it lists. */
export async function doctorChecks(ctx: DoctorContext): Promise<DoctorCheck[]> {
  const { servers: specs, problems } = readServerSpecs(ctx.root, ctx.config, {
    projectTrusted: ctx.trust?.trusted === true,
  });
  const checks: DoctorCheck[] = problems.map((p) => ({
    name: `server ${p.name}`,
    status: p.skipped ? "skipped" : "unavailable",
    detail: p.error,
  }));
  const connections = specs.map((spec) => new McpConnection(spec));
  await Promise.all(connections.map((c) => c.start()));
  for (const c of connections) {
    const how = `${c.spec.source}: ${describeSpec(c.spec)}`;
    checks.push(
      c.state === "ready"
        ? {
            name: `server ${c.name}`,
            status: "ok",
            detail: `started in ${c.startedInMs} ms, ${c.tools.length} tools (${how})`,
          }
        : { name: `server ${c.name}`, status: "unavailable", detail: `${c.error ?? c.state} (${how})` },
    );
  }
  await Promise.all(connections.map((c) => c.close()));
  // Every HTTP server's sign-in (`toolbelt mcp login`), whether or not it asks for one.
  const { signInState } = await import("./oauth.js");
  for (const spec of specs)
    if (spec.transport !== "stdio")
      checks.push({
        name: `auth ${spec.name}`,
        status: "ok",
        detail: `${authState(spec, signInState)} (${spec.url})`,
      });
  if (checks.length === 0)
    checks.push({ name: "servers", status: "skipped", detail: "no .mcp.json and no mcpServers in config" });
  return checks;
}

/** How toolbelt authenticates to an HTTP server, for doctor: its own grant, or the user's sign-in. */
function authState(spec: HttpServerSpec, signInState: (url: string) => string): string {
  const oauth = spec.oauth;
  if (oauth?.grant === "client_credentials")
    return `client credentials (client ${oauth.client_id}, ${oauth.private_key ? "private_key_jwt" : "client secret"}, issuer ${oauth.issuer}); no sign-in`;
  if (oauth?.grant === "cross_app_access") {
    const from =
      oauth.idp && "file" in oauth.idp.id_token ? `from ${oauth.idp.id_token.file}` : "from the environment";
    return `cross-app access (client ${oauth.client_id}, issuer ${oauth.issuer}; ID token ${from}, exchanged at ${oauth.idp?.token_endpoint}); no sign-in`;
  }
  return signInState(spec.url);
}

/**
 * The mcp family. Sub-agents (forks) inherit the root session's server tools and share its
 * servers, so setup starts servers only for a root session; `tools.mcp.enabled: false` starts none.
 */
export const family: Plugin = definePlugin({
  name: "mcp",
  contributes: contributions,
  // mcp_status is registered by setup, with the server tools, so a session without servers has none.
  tools: [],
  async setup(session: Session) {
    if (!session.isRoot) return;
    const entry = (session.config.tools as Record<string, { enabled?: boolean } | undefined>).mcp;
    if (entry?.enabled === false) return;
    await startServers(session);
  },
  doctor: doctorChecks,
});
