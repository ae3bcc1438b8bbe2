import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { ClientCapabilities } from "@modelcontextprotocol/sdk/types.js";
import { definePlugin, normaliseError, type Plugin, type Session } from "@toolbelt/core";
import {
  CALL_ID_MAX,
  CALL_ID_META,
  type CheckpointsRequest,
  EVENT_NOTIFICATION,
  type HostRequest,
  hostRequestSchema,
  WORKSPACE_CAPABILITY,
} from "./workspace-protocol.js";

// The workspace end of a host's link, as `serve --mcp` uses it: what the host asked for in its
// initialize request, and the session events sent back to it. See workspace-protocol.ts.

/** What `serve --mcp` declares: its process id, so a host can end it on a reconnect. */
export function workspaceServerCapability(): Record<string, object> {
  return { [WORKSPACE_CAPABILITY]: { pid: process.pid } };
}

/**
 * What a host asked for, or undefined for any other client (or a request that is not well formed:
 * then the client gets plain MCP, as if it had asked for nothing).
 */
export function hostRequestOf(capabilities: ClientCapabilities | undefined): HostRequest | undefined {
  const raw = capabilities?.experimental?.[WORKSPACE_CAPABILITY];
  if (raw === undefined) return undefined;
  const parsed = hostRequestSchema.safeParse(raw);
  return parsed.success ? parsed.data : undefined;
}

/**
 * The capabilities the workspace's session gets: what the host says its client can do, where MCP
 * can carry it (`ask_user` only with elicitation); without a host, `ask_user` when the client elicits.
 */
export function capabilitiesFor(host: HostRequest | undefined, canElicit: boolean): string[] {
  if (!host?.capabilities) return canElicit ? ["ask_user"] : [];
  return host.capabilities.filter((c) => c !== "ask_user" || canElicit);
}

/**
 * Sends every event of the root session to the host. A plugin, so its setup subscribes before the
 * session's first events (tools_bound, config_ignored); notifications go out in order, ahead of the
 * response of the call that caused them.
 */
export function eventsToHost(server: Server): Plugin {
  return definePlugin({
    name: "workspace-events",
    tools: [],
    setup(session) {
      if (!session.isRoot) return;
      session.on("*", (event) => {
        server
          .notification({ method: EVENT_NOTIFICATION, params: { event } } as unknown as Parameters<
            Server["notification"]
          >[0])
          .catch(() => {});
      });
    },
  });
}

// Call ids name checkpoints (`checkpoints restore CALL_ID`): plain tokens only, never "last".
const CALL_ID = new RegExp(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,${CALL_ID_MAX - 1}}$`);

/** The host's call id of a tools/call, when it sent a usable one. */
export function hostCallId(meta: Record<string, unknown> | undefined): string | undefined {
  const id = meta?.[CALL_ID_META];
  return typeof id === "string" && CALL_ID.test(id) && id !== "last" ? id : undefined;
}

/**
 * Answers a host's checkpoints request with this session's checkpoints: the value, or the error as a
 * payload (ENOENT, ECONFLICT with its conflicts, EDENIED from the policy here), never a protocol error.
 * A restore is a write here, judged as `tool` by this session's policy (which holds the host's layer).
 */
export async function answerCheckpoints(
  session: Session,
  request: CheckpointsRequest,
): Promise<Record<string, unknown>> {
  const checkpoints = session.checkpoints;
  try {
    const value =
      request.action === "list"
        ? await checkpoints.list()
        : request.action === "summary"
          ? await checkpoints.summary()
          : request.action === "diff"
            ? await checkpoints.diff(request.checkpoint)
            : await checkpoints.restore(request.checkpoint, { tool: request.tool });
    return { ok: true, value };
  } catch (error) {
    return { ok: false, error: normaliseError(error).toPayload() };
  }
}
