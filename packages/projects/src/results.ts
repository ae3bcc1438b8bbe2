import type { ToolResult } from "@toolbelt/core";
import type { listProjectsTool } from "./tools/list-projects.js";
import type { switchProjectTool } from "./tools/switch-project.js";

/** What each projects tool returns. */
export interface ProjectsResults {
  list_projects: ToolResult<typeof listProjectsTool>;
  switch_project: ToolResult<typeof switchProjectTool>;
}

declare module "@toolbelt/core" {
  interface ToolResultMap extends ProjectsResults {}
}
