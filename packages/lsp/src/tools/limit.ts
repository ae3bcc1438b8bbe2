import type { ToolContext } from "@toolbelt/core";
import { z } from "@toolbelt/core";

/** The `limit` field of every listing tool; its default is the file search cap. */
export const limitField = z
  .number()
  .int()
  .positive()
  .optional()
  .describe("Most results to return (default: limits.fileSearchMaxMatches).");

export function capOf(ctx: ToolContext, limit: number | undefined): number {
  return limit ?? ctx.limits.fileSearchMaxMatches;
}

/** Files a workspace-wide call (diagnostics, workspace symbols) opens at most. */
export const WORKSPACE_FILE_CAP = 500;
