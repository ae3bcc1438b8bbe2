import { defineTool, renderText, z } from "@toolbelt/core";
import { listProjects, type Project } from "../catalog.js";
import { projectsState, WORKSPACE } from "../workspace.js";

const projectListPayload = z.object({
  kind: z.literal("project_list"),
  current: z.string(),
  projects: z.array(
    z.object({
      key: z.string(),
      name: z.string(),
      kind: z.enum(["configured", "managed", "worktree", "repository"]),
      description: z.string().optional(),
      path: z.string().optional().describe("absolute directory, when the project has a checkout"),
      available: z.boolean().describe("the directory exists on disk, so switch_project can move there"),
      repository: z.string().optional().describe("`owner/name`, when known"),
      branch: z.string().optional(),
      current: z.boolean().optional().describe("the session is in this project now"),
    }),
  ),
});

export type ProjectListPayload = z.output<typeof projectListPayload>;

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
  output: projectListPayload,
  async execute(_input, ctx) {
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
