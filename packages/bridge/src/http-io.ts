// The Node side of the wire: reading a bounded JSON body, answering JSON, checking the token. The
// server and the console's test fake both answer through these, so they answer alike.
import type { IncomingMessage, ServerResponse } from "node:http";
import { MAX_JSON_DEPTH, nestsDeeperThan } from "@toolbelt/core/internal";
import { bearerToken, tokenMatches } from "./http-guard.js";
import { errorBody, HttpError, MAX_BODY_BYTES } from "./wire.js";

/** The body as JSON (undefined when empty): 413 past `maxBytes` (default {@link MAX_BODY_BYTES}), 400 too deep or not JSON. */
export async function readJson(req: IncomingMessage, maxBytes = MAX_BODY_BYTES): Promise<unknown> {
  const declared = Number(req.headers["content-length"]);
  if (declared > maxBytes) throw new HttpError(413, "ETOO_LARGE", `the body is over ${maxBytes} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) throw new HttpError(413, "ETOO_LARGE", `the body is over ${maxBytes} bytes`);
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString("utf8");
  if (text.trim() === "") return undefined;
  if (nestsDeeperThan(text))
    throw new HttpError(400, "EINVAL_INPUT", `the body nests deeper than ${MAX_JSON_DEPTH} levels`);
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new HttpError(400, "EINVAL_INPUT", `the body is not JSON: ${(error as Error).message}`);
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" });
  res.end(text);
}

/** Answers an HttpError as `{error: {code, message}}`, with the 401 challenge header. */
export function sendError(res: ServerResponse, error: HttpError): void {
  if (error.status === 401) res.setHeader("www-authenticate", 'Bearer realm="toolbelt"');
  sendJson(res, error.status, errorBody(error.code, error.message));
}

/** The 401 every API route answers without the right token. */
export function unauthorised(): HttpError {
  return new HttpError(
    401,
    "EDENIED",
    "missing or wrong token: send Authorization: Bearer <token> or ?token=",
  );
}

/** `Authorization: Bearer <token>`, else `?token=` (EventSource cannot set headers); constant-time. */
export function authorised(req: IncomingMessage, url: URL, token: string): boolean {
  return tokenMatches(bearerToken(req) ?? url.searchParams.get("token"), token);
}

/** The request target as a URL; a target that is not a path is 400. */
export function requestUrl(req: IncomingMessage): URL {
  try {
    return new URL(req.url ?? "/", "http://localhost");
  } catch {
    throw new HttpError(400, "EINVAL_INPUT", "the request target is not a URL path");
  }
}
