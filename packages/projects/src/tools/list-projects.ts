import { defineTool, renderText, z } from "@toolbelt/core";
import { listProjects, type Project } from "../catalog.js";
import { projectsState, WORKSPACE } from "../workspace.js";

export type ProjectListPayload = { kind: "project_list"; current: string; projects: Project[] };

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
