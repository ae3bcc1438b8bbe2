// The public API of the `toolbelt` package: createToolbelt() and the core contract re-exported, so an
// agent framework needs one import. The CLI lives in bin.ts and is not part of the API.
export * from "@toolbelt/core";
// Each family's results by tool name. Importing them also brings the families' additions to core's
// ToolResultMap into a program that imports only this package, so session.call() results are typed.
export type { EditResults } from "@toolbelt/edit";
export { editBackendForModel } from "@toolbelt/edit/contrib";
export type { FilesResults } from "@toolbelt/files";
export type { LspResults } from "@toolbelt/lsp";
export type { McpResults } from "@toolbelt/mcp";
export type { McpServerConfig } from "@toolbelt/mcp/contrib";
export type { ProjectsResults } from "@toolbelt/projects";
export type { ShellResults } from "@toolbelt/shell";
export type { UiResults } from "@toolbelt/ui";
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
