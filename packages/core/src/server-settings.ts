/**
 * The `server` config section: settings of the process that serves sessions (`toolbelt serve`), read
 * once when it starts. A session's own config cannot change them: one server's sessions share its
 * process pool and its session bound, whatever project each one is rooted in.
 */
import { z } from "zod";
import { machineProcessLimits } from "./process-pool.js";

const count = z.number().int().positive();
const seconds = z.number().int().nonnegative();

export const serverConfigSchema = z
  .strictObject({
    max_sessions: count.optional().describe("Sessions `serve --http` holds at once (default 64)"),
    session_idle_seconds: seconds
      .optional()
      .describe("A session unused this long is closed (default 1800; 0: never)"),
    stop_grace_seconds: seconds
      .optional()
      .describe("How long a stop (SIGTERM) lets running calls finish (default 20)"),
    max_requests: count
      .optional()
      .describe("HTTP API requests handled at once; one more is answered 503 (default 4096)"),
    max_processes: count
      .optional()
      .describe("Processes of calls (searches, shell commands) at once (default: from the machine)"),
    max_long_lived_processes: count
      .optional()
      .describe("Background shells and language servers at once (default: from the machine)"),
    process_wait_seconds: count
      .optional()
      .describe("The longest wait for a process slot of a call without its own timeout (default 120)"),
  })
  .optional();

export type ServerConfig = NonNullable<z.infer<typeof serverConfigSchema>>;
export type ServerSettings = Required<ServerConfig>;

export const SERVER_DEFAULTS = {
  max_sessions: 64,
  session_idle_seconds: 30 * 60,
  stop_grace_seconds: 20,
  max_requests: 4096,
  process_wait_seconds: 120,
} as const;

/** Every server setting, the unset ones at their defaults (the process bounds from the machine). */
export function serverSettings(config: ServerConfig | undefined): ServerSettings {
  const machine = machineProcessLimits();
  return {
    ...SERVER_DEFAULTS,
    max_processes: machine.max,
    max_long_lived_processes: machine.maxLongLived,
    ...stripUndefined(config ?? {}),
  };
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * Whether an untrusted layer's value only tightens `current`: smaller, where 0 in
 * `session_idle_seconds` means never (the loosest).
 */
export function serverValueTightens(key: string, value: unknown, current: number): boolean {
  if (typeof value !== "number" || !Number.isFinite(value)) return false;
  if (key === "session_idle_seconds") return value > 0 && (current === 0 || value <= current);
  return value <= current;
}
