import { existsSync } from "node:fs";
import path from "node:path";
import { definePlugin, type Plugin, type ToolbeltConfig, type TrustInfo } from "@toolbelt/core";
import { contributions as mcpContributions } from "@toolbelt/mcp/contrib";

/**
 * Whether a session names MCP servers it may start: `mcpServers` in its config (only trusted sources
 * reach it), or a `.mcp.json` at the root of a trusted project. An untrusted project's `.mcp.json`
 * starts nothing, so the family (and the MCP SDK) is not even loaded for it.
 */
function hasMcpServers(root: string, config: ToolbeltConfig, trust: TrustInfo | undefined): boolean {
  if (Object.keys(config.mcpServers ?? {}).length > 0) return true;
  return trust?.trusted === true && existsSync(path.join(root, ".mcp.json"));
}

/**
 * The mcp family behind a gate: it imports @toolbelt/mcp (and the MCP SDK) only for a project that
 * names servers, so a session with no servers pays nothing for it.
 */
const mcpGate: Plugin = definePlugin({
  name: "mcp",
  contributes: mcpContributions,
  tools: [],
  async setup(session) {
    if (!hasMcpServers(session.root, session.config, session.trust)) return;
    const { family } = await import("@toolbelt/mcp");
    await family.setup?.(session);
  },
  async doctor(ctx) {
    if (!hasMcpServers(ctx.root, ctx.config, ctx.trust)) {
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

/** The built-in tool families, each loaded only when a session needs it. */
export const FAMILY_LOADERS = {
  files: async () => (await import("@toolbelt/files")).family,
  edit: async () => (await import("@toolbelt/edit")).family,
  shell: async () => (await import("@toolbelt/shell")).family,
  lsp: async () => (await import("@toolbelt/lsp")).family,
  ui: async () => (await import("@toolbelt/ui")).family,
  projects: async () => (await import("@toolbelt/projects")).family,
  mcp: async () => mcpGate,
} satisfies Record<string, () => Promise<Plugin>>;

export type FamilyName = keyof typeof FAMILY_LOADERS;
export const FAMILY_NAMES = Object.keys(FAMILY_LOADERS) as FamilyName[];

export async function loadFamilies(names: readonly FamilyName[] = FAMILY_NAMES): Promise<Plugin[]> {
  return Promise.all(names.map((name) => FAMILY_LOADERS[name]()));
}
