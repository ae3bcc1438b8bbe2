import path from "node:path";
import { parseConfig, type ToolbeltConfig } from "@toolbelt/core";
import {
  CONFIG_FILE,
  configContributionsOf,
  mergeDeep,
  projectTrust,
  readConfigFile,
  untrustedPart,
} from "@toolbelt/core/internal";

/**
 * The config a session runs with after switching into `root`: the target's configs/app.json is layered
 * over the current config for what belongs to a directory (lower limits, disabled tools, tighter
 * permissions), while everything that defines the run stays: the agent settings (mode, edit tool,
 * sandbox, tool search), the project list, plugins and MCP servers. A target can narrow, never widen:
 * it is read as an untrusted layer (core's `untrustedPart`), and its language servers apply only when
 * the user trusts that directory.
 */
export function configForSwitch(current: ToolbeltConfig, root: string): ToolbeltConfig {
  const source = `config for ${root}`;
  const trusted = projectTrust(root).trusted;
  // Untrusted, the file must stay inside the target: a symlink to a file elsewhere is refused, never
  // read (its text would come back to the model in a parse error).
  const raw =
    readConfigFile(path.join(root, CONFIG_FILE), { optional: true, ...(trusted ? {} : { within: root }) }) ??
    {};
  // The sections every family contributed, as the session's config was parsed with them.
  const contributions = configContributionsOf(current);
  // lsp and mcp sections are other families' (typed where those are imported): read by name here.
  const target = parseConfig(raw, source, contributions) as unknown as Record<string, unknown>;
  const run = current as unknown as Record<string, unknown>;
  const { allowed } = untrustedPart(raw, current, source, contributions);
  const layered = mergeDeep(current, {
    ...(allowed.limits ? { limits: allowed.limits } : {}),
    ...(allowed.tools ? { tools: allowed.tools } : {}),
    ...(trusted && target.lsp !== undefined ? { lsp: target.lsp } : {}),
  }) as ToolbeltConfig;
  return parseConfig(
    {
      ...layered,
      agent: current.agent,
      plugins: current.plugins,
      // Sections of families this session was parsed without stay absent, as they were.
      ...(current.projects !== undefined ? { projects: current.projects } : {}),
      ...(run.mcpServers !== undefined ? { mcpServers: run.mcpServers } : {}),
    },
    source,
    contributions,
  );
}
