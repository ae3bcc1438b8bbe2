import { defineTool, errorPayload, renderText, type Session, type Skill } from "@toolbelt/core";
import { z } from "zod";
import { listProjects, type Project } from "./catalog.js";
import { type Instructions, loadInstructions } from "./instructions.js";
import { projectSkills } from "./skills.js";
import { configForSwitch } from "./switch-config.js";

type ProjectsState = { origin: string };

/** The directory the session started in: config paths resolve against it whatever the current project. */
export function projectsState(session: Session): ProjectsState {
  return session.state<ProjectsState>("projects", () => ({ origin: session.root }));
}

export type ProjectListPayload = { kind: "project_list"; current: string; projects: Project[] };

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

function line(p: Project): string {
  const facts = [
    p.kind,
    p.repository,
    p.branch ? `branch ${p.branch}` : undefined,
    p.available ? undefined : "not checked out",
    p.current ? "current" : undefined,
  ].filter(Boolean);
  return `${p.key}  ${p.name} (${facts.join(", ")})${p.path ? `  ${p.path}` : ""}${p.description ? `\n    ${p.description}` : ""}`;
}

const WORKSPACE = { autoWorkspaceOnly: true, rootAgentOnly: true } as const;

export const listProjectsTool = defineTool({
  name: "list_projects",
  family: "projects",
  access: "read",
  requires: WORKSPACE,
  description:
    "List the projects this session can switch into: configured directories, managed projects, git worktrees and registered repositories (a repository without a checkout is listed with available: false).",
  input: z.object({}),
  async execute(_input, ctx): Promise<ProjectListPayload> {
    const { origin } = projectsState(ctx.session);
    const projects = await listProjects(origin, ctx.session.config, ctx.session.root);
    return { kind: "project_list", current: ctx.session.root, projects };
  },
  render(payload) {
    return renderText(
      [
        ["Kind", payload.kind],
        ["Count", payload.projects.length],
        ["Current", payload.current],
      ],
      payload.projects.map(line).join("\n") || "No projects: add some under `projects` in configs/app.json.",
    );
  },
});

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
