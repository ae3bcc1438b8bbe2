import { z } from "@toolbelt/core";

// What a host and the toolbelt inside its workspace say to each other beyond plain MCP. Both ends
// are toolbelt (`serve --mcp` in the workspace, workspace-link.ts on the host); any other MCP client
// asks for none of it and sees plain MCP.

/** The experimental capability both ends declare (`capabilities.experimental[...]`). */
export const WORKSPACE_CAPABILITY = "toolbelt/workspace";
/** A session event, sent by the workspace's server to a host that asked for events. */
export const EVENT_NOTIFICATION = "notifications/toolbelt/event";
/** `_meta` key of a tools/call: the host's call id, so the workspace's events carry it. */
export const CALL_ID_META = "toolbelt/call_id";
/** `_meta` keys of an elicitation: the approval or question behind it, for a host that answers in kind. */
export const APPROVAL_META = "toolbelt/approval";
export const QUESTION_META = "toolbelt/question";

/** The longest call id a host may pass (it lands in events and checkpoint records). */
export const CALL_ID_MAX = 200;

/** What a host asks of the workspace's server, in its initialize request. */
export const hostRequestSchema = z.object({
  /** Send every session event as EVENT_NOTIFICATION. */
  events: z.boolean().default(false),
  /** What the host's client can do (`ask_user`, `generative_ui`): the workspace binds tools by it. */
  capabilities: z.array(z.string().max(100)).max(50).optional(),
  /** Whether the host has an approver (elicitation then answers approvals; else nobody is asked). */
  approve: z.boolean().default(false),
  /** The host's own settings: applied over the workspace's, tightening only. */
  policy: z.record(z.string(), z.unknown()).optional(),
});

export type HostRequest = z.output<typeof hostRequestSchema>;

/** What the workspace's server tells the host, in its initialize result. */
export const serverInfoSchema = z.object({
  /** The server's process id in the workspace (the host ends it there on a reconnect). */
  pid: z.number().int().positive(),
});

export type ServerInfo = z.output<typeof serverInfoSchema>;
