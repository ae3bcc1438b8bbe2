import {
  loadConfig,
  mergeDeep,
  type PermissionEntry,
  type PermissionMode,
  parseConfig,
  type ToolbeltConfig,
} from "@toolbelt/core";

const STRICTNESS: Record<PermissionMode, number> = { allow: 0, ask: 1, deny: 2 };

/**
 * The config a session runs with after switching into `root`: the target's configs/app.json is layered
 * over the current config for what belongs to a directory (limits, language servers, disabled tools,
 * tighter permissions), while everything that defines the run stays: the agent settings (mode, edit tool,
 * sandbox, tool search), the project list, plugins and MCP servers. A target can narrow, never widen:
 * its `allow` modes are ignored and its `agent` section does not apply.
 */
export function configForSwitch(current: ToolbeltConfig, root: string): ToolbeltConfig {
  const target = loadConfig(root);
  const layered = mergeDeep(current, {
    limits: target.limits,
    lsp: target.lsp,
    ...(target.lsp_diagnostics_after_edit !== undefined
      ? { lsp_diagnostics_after_edit: target.lsp_diagnostics_after_edit }
      : {}),
  }) as ToolbeltConfig;
  const tools: Record<string, PermissionEntry> = { ...(current.tools as Record<string, PermissionEntry>) };
  for (const [name, entry] of Object.entries(target.tools as Record<string, PermissionEntry | undefined>)) {
    if (!entry) continue;
    const mine = tools[name] ?? {};
    const next: Record<string, unknown> = { ...mine };
    if (entry.enabled === false) next.enabled = false;
    if (entry.mode && entry.mode !== "allow") {
      const stricter = mine.mode && STRICTNESS[mine.mode] >= STRICTNESS[entry.mode] ? mine.mode : entry.mode;
      next.mode = stricter;
    }
    if (entry.allowlist && !mine.allowlist) next.allowlist = entry.allowlist;
    for (const [key, value] of Object.entries(entry))
      if (!["enabled", "mode", "allowlist"].includes(key) && !(key in next)) next[key] = value;
    tools[name] = next as PermissionEntry;
  }
  return parseConfig(
    {
      ...layered,
      agent: current.agent,
      tools,
      projects: current.projects,
      plugins: current.plugins,
      mcpServers: current.mcpServers,
    },
    `config for ${root}`,
  );
}
