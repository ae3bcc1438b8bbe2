import { existsSync } from "node:fs";
import path from "node:path";
import { definePlugin, type Plugin, type ToolbeltConfig } from "@toolbelt/core";

/** Whether a project names MCP servers: a `.mcp.json` at the root or `mcpServers` in its config. */
function hasMcpServers(root: string, config: ToolbeltConfig): boolean {
  return Object.keys(config.mcpServers ?? {}).length > 0 || existsSync(path.join(root, ".mcp.json"));
}

/**
 * The mcp family behind a gate: it imports @toolbelt/mcp (and the MCP SDK) only for a project that
 * names servers, so a session with no servers pays nothing for it.
 */
const mcpGate: Plugin = definePlugin({
  name: "mcp",
  tools: [],
  async setup(session) {
    if (!hasMcpServers(session.root, session.config)) return;
    const { family } = await import("@toolbelt/mcp");
    await family.setup?.(session);
  },
  async doctor(ctx) {
    if (!hasMcpServers(ctx.root, ctx.config))
      return [{ name: "servers", status: "skipped", detail: "no .mcp.json and no mcpServers in config" }];
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
