import { existsSync } from "node:fs";
import path from "node:path";
import {
  type ConfigContribution,
  type ContributedKeys,
  defineConfigSection,
  type SectionInputs,
  type SectionValues,
  trustRules,
  type UntrustedFileSetting,
  z,
} from "@toolbelt/core";
import { readMcpJsonText } from "./server-config.js";

// The mcp family's config key, light (zod and core types only): the CLI validates `mcpServers`
// without importing the MCP SDK.

const mcpServerSchema = z.union([
  z.strictObject({
    type: z.literal("stdio").optional(),
    command: z.string(),
    args: z.array(z.string()).default([]),
    env: z.record(z.string(), z.string()).optional(),
    cwd: z.string().optional(),
  }),
  z.strictObject({
    type: z.enum(["http", "streamable-http", "sse"]).optional(),
    url: z.string().url(),
    headers: z.record(z.string(), z.string()).optional(),
  }),
]);
export type McpServerConfig = z.infer<typeof mcpServerSchema>;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The servers an untrusted project's `.mcp.json` names (none start): reported as ignored. */
function mcpJsonIgnored(root: string): UntrustedFileSetting[] {
  const file = path.join(root, ".mcp.json");
  if (!existsSync(file)) return [];
  const unreadable = [{ key: ".mcp.json", source: ".mcp.json", why: "names MCP servers to start" }];
  let text: string | undefined;
  try {
    // Untrusted: read only if it is the project's own regular file, bounded (see readMcpJsonText).
    text = readMcpJsonText(root, false);
  } catch (error) {
    return [
      {
        key: ".mcp.json",
        source: ".mcp.json",
        why: `names MCP servers to start; ${(error as Error).message}`,
      },
    ];
  }
  try {
    const servers = (JSON.parse(text ?? "{}") as { mcpServers?: unknown })?.mcpServers;
    if (!isRecord(servers)) return unreadable;
    return Object.entries(servers)
      .filter(([, entry]) => !(isRecord(entry) && entry.disabled === true))
      .map(([name]) => ({ key: `mcpServers.${name}`, source: ".mcp.json", why: "starts an MCP server" }));
  } catch {
    return unreadable;
  }
}

const keys = {
  mcpServers: {
    schema: z.record(z.string(), mcpServerSchema).default({}).describe("MCP servers to start, by name"),
    trust: trustRules.eachEntry("starts an MCP server"),
  },
} satisfies ContributedKeys;

export const mcpConfig: ConfigContribution<typeof keys> = defineConfigSection({
  owner: "mcp",
  keys,
  untrustedFiles: mcpJsonIgnored,
  docs: "MCP servers whose tools the session offers (mcp__SERVER__TOOL).",
});

export const contributions = { config: [mcpConfig], toolKeys: ["mcp"] };

// Light too (no SDK): the CLI asks it before it loads the family.
export { hasMcpServers } from "./server-config.js";

declare module "@toolbelt/core" {
  interface ContributedConfig extends SectionValues<typeof keys> {}
  interface ContributedConfigInput extends SectionInputs<typeof keys> {}
}
