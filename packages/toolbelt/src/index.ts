// The public API of the `toolbelt` package: createToolbelt() and the core contract re-exported, so an
// agent framework needs one import. The CLI lives in bin.ts and is not part of the API.
export * from "@toolbelt/core";
export { editBackendForModel } from "@toolbelt/edit/contrib";
export type { McpServerConfig } from "@toolbelt/mcp/contrib";
export type { QuestionRequest, QuestionResponse } from "@toolbelt/ui/contrib";
export {
  BUILTIN_CONTRIBUTIONS,
  BUILTIN_TOOL_KEYS,
  configContributions,
  eventContributions,
  eventJsonSchema,
} from "./contributions.js";
export { createToolbelt, importPlugin, type ToolbeltOptions } from "./create.js";
export { FAMILY_LOADERS, FAMILY_NAMES, type FamilyName, loadFamilies } from "./families.js";
