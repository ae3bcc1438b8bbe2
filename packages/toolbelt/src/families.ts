import { existsSync } from "node:fs";
import path from "node:path";
import { type Contributions, definePlugin, type Plugin } from "@toolbelt/core";
import type * as McpContrib from "@toolbelt/mcp/contrib";

/**
 * The mcp family behind a gate: it imports @toolbelt/mcp (and the MCP SDK) only for a project that
 * names servers, so a session with no servers pays nothing for it. The check is the family's own
 * (trust-aware: an untrusted project's `.mcp.json` starts nothing, so it loads nothing).
 */
function mcpGate({ hasMcpServers, contributions }: typeof McpContrib): Plugin {
  return definePlugin({
    name: "mcp",
    contributes: contributions,
    tools: [],
    async setup(session) {
      if (!hasMcpServers(session.root, session.config, { projectTrusted: session.trust.trusted })) return;
      const { family } = await import("@toolbelt/mcp");
      await family.setup?.(session);
    },
    async doctor(ctx) {
      if (!hasMcpServers(ctx.root, ctx.config, { projectTrusted: ctx.trust?.trusted === true })) {
        const untrustedFile = !ctx.trust?.trusted && existsSync(path.join(ctx.root, ".mcp.json"));
        const detail = untrustedFile
          ? ".mcp.json not read: the project is not trusted (toolbelt trust DIR, --trust, TOOLBELT_TRUST=1)"
          : "no .mcp.json and no mcpServers in config";
        return [{ name: "servers", status: "skipped", detail }];
      }
      const { family } = await import("@toolbelt/mcp");
      return (await family.doctor?.(ctx)) ?? [];
    },
  });
}

/** The built-in tool families, each loaded only when a session needs it. */
export const FAMILY_LOADERS = {
  files: async () => (await import("@toolbelt/files")).family,
  edit: async () => (await import("@toolbelt/edit")).family,
  shell: async () => (await import("@toolbelt/shell")).family,
  lsp: async () => (await import("@toolbelt/lsp")).family,
  ui: async () => (await import("@toolbelt/ui")).family,
  projects: async () => (await import("@toolbelt/projects")).family,
  mcp: async () => mcpGate(await import("@toolbelt/mcp/contrib")),
} satisfies Record<string, () => Promise<Plugin>>;

export type FamilyName = keyof typeof FAMILY_LOADERS;
export const FAMILY_NAMES = Object.keys(FAMILY_LOADERS) as FamilyName[];

/**
 * Each built-in family's light contrib module (config keys, events, tool names), loaded on demand.
 */
const CONTRIBUTION_LOADERS = {
  files: async () => (await import("@toolbelt/files/contrib")).contributions,
  edit: async () => (await import("@toolbelt/edit/contrib")).contributions,
  shell: async () => (await import("@toolbelt/shell/contrib")).contributions,
  lsp: async () => (await import("@toolbelt/lsp/contrib")).contributions,
  ui: async () => (await import("@toolbelt/ui/contrib")).contributions,
  projects: async () => (await import("@toolbelt/projects/contrib")).contributions,
  mcp: async () => (await import("@toolbelt/mcp/contrib")).contributions,
} satisfies Record<FamilyName, () => Promise<Contributions>>;

/**
 * The contributions of `names` in the order of FAMILY_NAMES (as BUILTIN_CONTRIBUTIONS), and mcp's
 * with `withMcp`: it is the one that reports an untrusted project's `.mcp.json`.
 */
export async function loadFamilyContributions(
  names: readonly FamilyName[],
  withMcp: boolean,
): Promise<Contributions[]> {
  const wanted = new Set<FamilyName>(withMcp ? [...names, "mcp"] : names);
  return Promise.all(FAMILY_NAMES.filter((n) => wanted.has(n)).map((n) => CONTRIBUTION_LOADERS[n]()));
}

export async function loadFamilies(names: readonly FamilyName[] = FAMILY_NAMES): Promise<Plugin[]> {
  return Promise.all(names.map((name) => FAMILY_LOADERS[name]()));
}
