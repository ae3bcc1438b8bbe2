export { listProjectsTool, type ProjectListPayload } from "./list-projects.js";
export { type ProjectSwitchedPayload, switchProjectTool } from "./switch-project.js";
