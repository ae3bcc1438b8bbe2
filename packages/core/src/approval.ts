/**
 * Asking the client's approver, for a call the policy answers `ask`, a protected path, or a tool's
 * own `ctx.approve`. With no approver nobody is asked: the answer is no, and the message names what
 * would allow it. A call made with an approval already given (`CallOptions.approval`, from the
 * caller's own approval flow) is answered by it, so nobody is asked a second time. Both the question
 * and the answer are events, so a UI can show who decided.
 */

import { randomUUID } from "node:crypto";
import { ESCAPE_LEGEND, visibleText } from "./escape.js";
import type { ApprovalPrompt, GrantedApproval, Session } from "./session.js";
import type { ApprovalRequest } from "./tool.js";

/** Who is asking: the bound name, the tool's own name and family, for policy and prompts. */
export interface Requester {
  name: string;
  tool: string;
  family: string;
  access: string;
}

/** What a refusal with nobody to ask says is needed, and how to give it. */
export interface Refusal {
  needs: string;
  how: string;
}

export async function askApproval(
  session: Pick<Session, "client" | "events">,
  who: Requester,
  input: unknown,
  request: ApprovalRequest,
  refusal?: Refusal,
  granted?: GrantedApproval,
): Promise<{ approved: boolean; message: string }> {
  const approver = granted ? () => true : session.client.approve;
  if (!approver) {
    const how =
      refusal?.how ??
      // An untrusted project's configs/app.json cannot loosen policy: name what does.
      `allow it with --allow ${who.family} (CLI), tools.${who.family}.mode = "allow" in your own config (--config FILE or the user config folder) or in configs/app.json of a trusted project (--trust, toolbelt trust), or an approver on the client`;
    return {
      approved: false,
      message: `${refusal?.needs ?? `${who.name} needs approval`} and nobody can give it here: ${how}`,
    };
  }
  const prompt: ApprovalPrompt = {
    request_id: randomUUID(),
    tool: who.name,
    family: who.family,
    access: who.access,
    summary: request.summary,
    input,
  };
  session.events.emit({ type: "approval_requested", ...prompt });
  let approved = false;
  let by = granted?.by ?? session.client.name ?? "client";
  try {
    approved = (await approver(prompt)) === true;
  } catch (error) {
    by = `error: ${(error as Error).message}`;
  }
  session.events.emit({ type: "approval_resolved", request_id: prompt.request_id, approved, by });
  return { approved, message: approved ? "approved" : `${who.name} was denied by ${by}` };
}

/**
 * What a person approving the call reads: the whole command or path, never cut (front-ends that
 * must shorten it say how much they left out), with control and invisible characters and long
 * space runs made visible, and a legend whenever anything was escaped.
 */
export function summarise(name: string, input: unknown): string {
  const record = (input ?? {}) as Record<string, unknown>;
  const main = record.command ?? record.path ?? record.file_path ?? record.file;
  if (typeof main !== "string") return name;
  const shown = visibleText(main);
  return shown.escaped ? `${name} [${ESCAPE_LEGEND}]: ${shown.text}` : `${name}: ${shown.text}`;
}
