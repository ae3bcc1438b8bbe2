import { defineTool, errorPayload, renderText, type Skill, z } from "@toolbelt/core";
import { listProjects } from "../catalog.js";
import { type Instructions, loadInstructions } from "../instructions.js";
import { projectSkills } from "../skills.js";
import { configForSwitch } from "../switch-config.js";
import { projectsState, WORKSPACE } from "../workspace.js";

export type ProjectSwitchedPayload = {
  kind: "project_switched";
  key: string;
  name: string;
  path: string;
  from: string;
  instructions?: Instructions;
  /** Skills this project added (they accumulate across switches). */
  new_skills: string[];
  skills: number;
  tools: number;
};

export const switchProjectTool = defineTool({
  name: "switch_project",
  family: "projects",
  access: "interact",
  requires: WORKSPACE,
  description:
    "Move this session into another project by its key from list_projects: the working directory changes and the project's AGENTS.md (or CLAUDE.md) instructions are returned — follow them. Your tools stay the same; sub-agents started afterwards work in the new project.",
  input: z.object({ key: z.string().min(1).describe("a key from list_projects") }),
  async execute(input, ctx) {
    const session = ctx.session;
    const { origin } = projectsState(session);
    const projects = await listProjects(origin, session.config, session.root);
    const target = projects.find((p) => p.key === input.key);
    if (!target) {
      return errorPayload(
        "ENOENT",
        `no project with key ${JSON.stringify(input.key)}; keys: ${projects.map((p) => p.key).join(", ") || "(none)"}`,
        { field: "key" },
      );
    }
    if (!target.available || !target.path) {
      return errorPayload(
        "EUNAVAILABLE",
        `${target.key} (${target.repository ?? target.name}) has no checkout on this machine${target.path ? ` (${target.path} does not exist)` : ""}; clone it and give its path in configs/app.json, or pick another project`,
        { key: target.key },
      );
    }
    let config: ReturnType<typeof configForSwitch>;
    try {
      config = configForSwitch(session.config, target.path);
    } catch (error) {
      // A broken config in the target is the user's to fix; moving there with the wrong rules is worse.
      return errorPayload(
        "EINVAL_CONFIG",
        `${target.key}: ${(error as Error).message}; fix it or pick another project`,
        { key: target.key },
      );
    }
    const from = session.root;
    session.switchRoot(target.path, { key: target.key, config });
    const before = new Set(session.skills.map((s) => s.name));
    const added: Skill[] = projectSkills(session.root);
    session.addSkills(added);
    const instructions = loadInstructions(session.root);
    return {
      kind: "project_switched",
      key: target.key,
      name: target.name,
      path: session.root,
      from,
      ...(instructions ? { instructions } : {}),
      new_skills: added.map((s) => s.name).filter((n) => !before.has(n)),
      skills: session.skills.length,
      tools: session.bind().tools.length,
    } satisfies ProjectSwitchedPayload;
  },
  render(payload) {
    const body = payload.instructions
      ? `Instructions from ${payload.instructions.file}:\n${payload.instructions.content}`
      : "This project has no AGENTS.md or CLAUDE.md.";
    return renderText(
      [
        ["Kind", payload.kind],
        ["Project", payload.key],
        ["Path", payload.path],
        ["From", payload.from],
        [
          "Instructions",
          payload.instructions
            ? payload.instructions.truncated
              ? `${payload.instructions.file} (truncated at ${payload.instructions.content.length} of ${payload.instructions.chars} chars)`
              : payload.instructions.file
            : "(none)",
        ],
        ["New-Skills", payload.new_skills.join(", ") || undefined],
        ["Skills", payload.skills],
      ],
      body,
    );
  },
});
