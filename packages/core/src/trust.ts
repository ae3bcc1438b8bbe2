/**
 * Whether the project's own files may loosen policy or run code. Settings from the user (their config
 * folder, `--config`, CLI flags, SDK options) always apply; a project's `configs/app.json` and
 * `.mcp.json` apply in full only when the project is trusted, otherwise only the keys that tighten.
 */
export interface TrustInfo {
  /** The project at the root is trusted. */
  trusted: boolean;
  /** Why: `--trust`, `TOOLBELT_TRUST=1`, `toolbelt trust <dir>`, or why not. */
  reason: string;
  /** Project settings that were ignored because the project is not trusted (dotted keys). */
  ignored: Array<{ key: string; source: string; why: string }>;
}

/** What a session knows when nobody told it: the project is not trusted and nothing was ignored. */
export const UNTRUSTED: TrustInfo = Object.freeze({
  trusted: false,
  reason: "the project is not marked trusted",
  ignored: [],
}) as TrustInfo;
