import { z } from "zod";
import { ERROR_CODES, type ErrorPayload } from "./errors.js";
import type { Payload } from "./tool.js";
import type { toolSearch } from "./tool-search.js";
import type { undoTool } from "./undo-tool.js";

/**
 * The error payload, which any tool may return whatever its declared output: a stable `code`, a
 * message, and details that depend on the failure (`path`, `field`, `limit`...).
 */
export const errorPayloadSchema = z.looseObject({
  kind: z.literal("error"),
  code: z.enum(ERROR_CODES),
  message: z.string(),
}) satisfies z.ZodType<ErrorPayload>;

/** What a tool that declares no `output` returns: any JSON object tagged with `kind`. */
export const payloadSchema = z.looseObject({ kind: z.string() });

/**
 * What calling `T` (a tool from `defineTool`) returns: its declared output or the error payload;
 * the generic `Payload` when it declares no output.
 */
export type ToolResult<T> = T extends { output: { _zod: { output: infer P } } } ? P | ErrorPayload : Payload;

/**
 * The result of each tool by the name a session binds it under, for `session.call()` and
 * `session.callWithText()`. Each built-in family adds its tools (profile names included); a plugin adds
 * its own by declaration merging:
 *
 * ```ts
 * declare module "@toolbelt/core" {
 *   interface ToolResultMap {
 *     word_count: ToolResult<typeof wordCount>;
 *   }
 * }
 * ```
 */
export interface ToolResultMap {
  tool_search: ToolResult<typeof toolSearch>;
  undo: ToolResult<typeof undoTool>;
}

/** The result of the tool named `N`: from {@link ToolResultMap}, else the generic `Payload`. */
export type ToolResultFor<N extends string> = N extends keyof ToolResultMap ? ToolResultMap[N] : Payload;

/** An image a result carries, for a client that shows images (MCP image blocks, a model's image input). */
export interface PayloadImage {
  mime_type: string;
  /** The image's bytes, base64-encoded. */
  base64: string;
}

const isImage = (value: unknown): value is PayloadImage =>
  typeof value === "object" &&
  value !== null &&
  typeof (value as PayloadImage).mime_type === "string" &&
  typeof (value as PayloadImage).base64 === "string";

/**
 * The images a result carries, in order: an `image` payload (read_file of a .png) is one; any other
 * payload may list its own in `images` (read_file of a notebook: its cells' image outputs). The text
 * of such a result names each image where it belongs; the data travels beside it.
 */
export function payloadImages(payload: Payload): PayloadImage[] {
  const images = payload.kind === "image" ? [payload] : payload.images;
  if (!Array.isArray(images)) return [];
  return images.filter(isImage).map((image) => ({ mime_type: image.mime_type, base64: image.base64 }));
}
