/** The stable error codes a tool payload may carry. Adding one is a minor change; renaming one is breaking. */
export const ERROR_CODES = [
  "EINVAL_INPUT",
  "EINVAL_CONFIG",
  "ENOENT",
  "EISDIR",
  "ENOTDIR",
  "EPATH_ESCAPE",
  "EDENIED",
  "ETOO_LARGE",
  "EBINARY",
  "ENO_MATCH",
  "EMULTI_MATCH",
  "ETIMEOUT",
  "ECANCELLED",
  "ESESSION_CAP",
  // Too much work at once: every process slot stayed busy for the call's whole wait, or a server is
  // saturated or stopping (HTTP 503 with Retry-After). Trying again later may succeed.
  "EBUSY",
  "EUNKNOWN_TOOL",
  "EUNAVAILABLE",
  "ECONFLICT",
  "EPLUGIN",
  "EINTERNAL",
  // The tool ran and reported its own failure (an MCP server's isError result).
  "ETOOL_FAILED",
  // The workspace the tools run in (a container, an SSH host, a pod) could not be reached or went away.
  "EWORKSPACE",
  // A file that needs a password to be read (an encrypted PDF).
  "EENCRYPTED",
  // A file whose content is not what its kind requires (a corrupt PDF, a notebook that is not nbformat 4 JSON).
  "EMALFORMED",
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export interface ErrorPayload {
  kind: "error";
  code: ErrorCode;
  message: string;
  [detail: string]: unknown;
}

const marker = Symbol.for("toolbelt.error");

/** The one error class of toolbelt. `isInstance` works across duplicate installs. */
export class ToolbeltError extends Error {
  readonly [marker] = true;
  readonly code: ErrorCode;
  readonly details: Record<string, unknown>;

  constructor(
    code: ErrorCode,
    message: string,
    options: { cause?: unknown; details?: Record<string, unknown> } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "ToolbeltError";
    this.code = code;
    this.details = options.details ?? {};
  }

  static isInstance(value: unknown): value is ToolbeltError {
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[marker] === true;
  }

  toPayload(): ErrorPayload {
    return { ...this.details, kind: "error", code: this.code, message: this.message };
  }
}

const nodeCodes: Record<string, ErrorCode> = {
  ENOENT: "ENOENT",
  EISDIR: "EISDIR",
  ENOTDIR: "ENOTDIR",
  EACCES: "EDENIED",
  EPERM: "EDENIED",
  ENAMETOOLONG: "EINVAL_INPUT",
  ELOOP: "EPATH_ESCAPE",
  EFBIG: "ETOO_LARGE",
  // Node's own argument checks (a NUL byte in a path or an argv entry): caller data, not a crash.
  ERR_INVALID_ARG_VALUE: "EINVAL_INPUT",
};

/** Turns anything thrown into a ToolbeltError, keeping the cause. Unknown failures become EINTERNAL. */
export function normaliseError(error: unknown): ToolbeltError {
  if (ToolbeltError.isInstance(error)) return error;
  if (error instanceof Error) {
    const sysCode = (error as NodeJS.ErrnoException).code;
    if (error.name === "AbortError")
      return new ToolbeltError("ECANCELLED", "the call was cancelled", { cause: error });
    if (sysCode && nodeCodes[sysCode]) {
      return new ToolbeltError(nodeCodes[sysCode], error.message, { cause: error });
    }
    return new ToolbeltError("EINTERNAL", error.message || String(error), { cause: error });
  }
  return new ToolbeltError("EINTERNAL", String(error));
}

export function errorPayload(
  code: ErrorCode,
  message: string,
  details: Record<string, unknown> = {},
): ErrorPayload {
  return { ...details, kind: "error", code, message };
}

export function isErrorPayload(value: unknown): value is ErrorPayload {
  return typeof value === "object" && value !== null && (value as { kind?: unknown }).kind === "error";
}
