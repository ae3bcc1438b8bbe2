import type { PermissionMode, ToolbeltConfig } from "./config.js";
import { testLinesSafely } from "./safe-regex.js";
import type { Access } from "./tool.js";

/** What the default policy does per kind of access: the shell asks, everything inside the root else runs. */
export const DEFAULT_MODES: Record<Access, PermissionMode> = {
  read: "allow",
  write: "allow",
  execute: "ask",
  interact: "allow",
};

export interface PolicySubject {
  tool: string;
  /** The name the tool was called by, when a profile renamed it. */
  calledAs?: string;
  family: string;
  access: Access;
  /** Root-relative paths the call touches. */
  paths: string[];
}

export type Decision =
  | { mode: "allow"; source: string }
  | { mode: "ask"; source: string }
  | { mode: "deny"; source: string; reason: string };

/**
 * The permission policy: per tool, then per family, then the default for the kind of access.
 * `allow` (from `--allow` or the SDK) turns ask into allow, never deny into allow.
 */
export function decide(subject: PolicySubject, config: ToolbeltConfig, allow: ReadonlySet<string>): Decision {
  const entries = config.tools as Record<
    string,
    { mode?: PermissionMode; allowlist?: string[]; enabled?: boolean }
  >;
  const keys = [subject.tool, subject.calledAs, subject.family].filter((k): k is string => !!k);
  for (const key of keys) {
    const list = entries[key]?.allowlist;
    if (!list) continue;
    const patterns = list.map((p) => new RegExp(p));
    // An untrusted project's allowlist applies (it only tightens), so its patterns are caller input:
    // matched under the regex budget, and a pattern over it refuses the call (ETIMEOUT).
    const hits = patterns.map((re, i) =>
      testLinesSafely(re, subject.paths, { what: `tools.${key}.allowlist[${i}]` }),
    );
    const outside = subject.paths.find((_p, j) => !hits.some((h) => h[j]));
    if (outside !== undefined) {
      return {
        mode: "deny",
        source: `tools.${key}.allowlist`,
        reason: `${outside} is not in tools.${key}.allowlist`,
      };
    }
  }
  let mode: PermissionMode = DEFAULT_MODES[subject.access];
  let source = `default for ${subject.access} access`;
  for (const key of [subject.family, subject.tool, subject.calledAs]) {
    const m = key ? entries[key]?.mode : undefined;
    if (m) {
      mode = m;
      source = `tools.${key}.mode`;
    }
  }
  if (mode === "deny") return { mode, source, reason: `denied by ${source}` };
  if (mode === "ask" && keys.some((k) => allow.has(k))) return { mode: "allow", source: "--allow" };
  return { mode, source };
}
