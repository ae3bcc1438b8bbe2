import { type DoctorCheck, definePlugin, type Plugin } from "@toolbelt/core";
import { contributions } from "./contrib.js";
import { git } from "./git.js";
import { projectSkills, userSkills } from "./skills.js";
import { listProjectsTool, switchProjectTool } from "./tools/index.js";
import { projectsState } from "./workspace.js";

export { listProjects, type Project, type ProjectKind } from "./catalog.js";
export { gitInfo, listWorktrees, parseWorktrees, repositorySlug, type Worktree } from "./git.js";
export {
  INSTRUCTION_FILES,
  type Instructions,
  loadInstructions,
  MAX_INSTRUCTION_BYTES,
  readInstructions,
  type SkippedFile,
} from "./instructions.js";
export type { ProjectsResults } from "./results.js";
export {
  loadSkillsFrom,
  parseFrontMatter,
  projectSkills,
  readSkill,
  type SkillReadOptions,
  userSkills,
} from "./skills.js";
export { configForSwitch } from "./switch-config.js";
export {
  listProjectsTool,
  type ProjectListPayload,
  type ProjectSwitchedPayload,
  switchProjectTool,
} from "./tools/index.js";

/** The projects family as a plugin: its tools, registered by createToolbelt(). */
export const family: Plugin = definePlugin({
  name: "projects",
  contributes: contributions,
  tools: [listProjectsTool, switchProjectTool],
  setup(session) {
    // Sub-agents inherit the parent's skills and never switch projects themselves.
    if (!session.isRoot) return;
    projectsState(session);
    session.addSkills([...userSkills(), ...projectSkills(session.root)]);
  },
  async doctor(): Promise<DoctorCheck[]> {
    const version = await git(["--version"], process.cwd());
    return [
      version
        ? { name: "git", status: "ok", detail: version.trim() }
        : { name: "git", status: "missing", detail: "git not found: list_projects lists no worktrees" },
    ];
  },
});

export { contributions, projectsConfig } from "./contrib.js";
