import type { Session } from "@toolbelt/core";

type ProjectsState = { origin: string };

/** The directory the session started in: config paths resolve against it whatever the current project. */
export function projectsState(session: Session): ProjectsState {
  return session.state<ProjectsState>("projects", () => ({ origin: session.root }));
}

/** The projects tools are bound only where the workspace may move, and only to the root agent. */
export const WORKSPACE = { autoWorkspaceOnly: true, rootAgentOnly: true } as const;
