import { z } from "@toolbelt/core";
import { checkpointsConfigSchema } from "@toolbelt/core/internal";

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

/**
 * A request from the host for the checkpoints toolbelt in the workspace recorded (the host session's
 * `checkpoints`, the CLI's `checkpoints --workspace`). Answered only to a host that declared the
 * capability; a restore is a write there, under the workspace's policy and the host's tightening.
 */
export const CHECKPOINTS_REQUEST = "toolbelt/checkpoints";

export const checkpointsRequestSchema = z.discriminatedUnion("action", [
  z.object({ action: z.literal("list") }),
  z.object({ action: z.literal("summary") }),
  z.object({ action: z.literal("diff"), checkpoint: z.string().min(1).max(CALL_ID_MAX) }),
  z.object({
    action: z.literal("restore"),
    checkpoint: z.string().min(1).max(CALL_ID_MAX),
    /**
     * The writer the restore is judged as: only `checkpoints_restore` (the tools.checkpoints rules), so
     * a client cannot have a restore judged as a writer its rules leave more room.
     */
    tool: z.literal("checkpoints_restore"),
  }),
]);

export type CheckpointsRequest = z.output<typeof checkpointsRequestSchema>;

/**
 * The answer: what the workspace's `session.checkpoints` returned, or the error it threw as a
 * toolbelt error payload (its code and details), so the host throws the same error.
 */
export const checkpointsAnswerSchema = z.discriminatedUnion("ok", [
  z.object({ ok: z.literal(true), value: z.unknown() }),
  z.object({ ok: z.literal(false), error: z.looseObject({ code: z.string(), message: z.string() }) }),
]);

// What the host accepts as an answer's value, per action: the workspace is another machine, and what
// it says is handed to the host's caller only in the shape the SDK promises.
const fileState = z.union([z.string().max(64), z.null()]);
const checkpointFile = z.object({ path: z.string(), before: fileState, after: fileState });
export const checkpointSchema = z.object({
  id: z.string(),
  session: z.string(),
  call: z.string().optional(),
  tool: z.string(),
  at: z.string(),
  files: z.array(checkpointFile),
  state: z.enum(["done", "pending"]),
  restore_of: z.string().optional(),
});
export const checkpointListSchema = z.array(checkpointSchema);
export const checkpointDiffSchema = z.object({
  checkpoint: checkpointSchema,
  files: z.array(checkpointFile.extend({ diff: z.string() })),
});
export const checkpointsSummarySchema = z.object({
  where: z.string(),
  bytes: z.number(),
  config: checkpointsConfigSchema.unwrap(),
});
