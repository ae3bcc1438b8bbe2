import {
  type ConfigContribution,
  type ContributedKeys,
  defineConfigSection,
  type SectionInputs,
  type SectionValues,
  trustRules,
} from "@toolbelt/core";
import { z } from "zod";

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

const keys = {
  mcpServers: {
    schema: z.record(z.string(), mcpServerSchema).default({}).describe("MCP servers to start, by name"),
    trust: trustRules.eachEntry("starts an MCP server"),
  },
} satisfies ContributedKeys;

export const mcpConfig: ConfigContribution<typeof keys> = defineConfigSection({
  owner: "mcp",
  keys,
  docs: "MCP servers whose tools the session offers (mcp__SERVER__TOOL).",
});

export const contributions = { config: [mcpConfig], toolKeys: ["mcp"] };

// Light too (no SDK): the CLI asks it before it loads the family.
export { hasMcpServers } from "./server-config.js";

declare module "@toolbelt/core" {
  interface ContributedConfig extends SectionValues<typeof keys> {}
  interface ContributedConfigInput extends SectionInputs<typeof keys> {}
}
