import { readdirSync, realpathSync, statSync } from "node:fs";
import path from "node:path";
import type { ToolbeltConfig } from "@toolbelt/core";
import { MAX_CONFIG_BYTES, readFileInRoot, toolbeltHome } from "@toolbelt/core/internal";
import { gitInfo, listWorktrees } from "./git.js";

export type ProjectKind = "configured" | "managed" | "worktree" | "repository";

export type Project = {
  key: string;
  name: string;
  kind: ProjectKind;
  description?: string;
  /** Absolute directory, when the project has a checkout (or a configured path). */
  path?: string;
  /** The directory exists on disk, so switch_project can move there. */
  available: boolean;
  /** `owner/name`, when known. */
  repository?: string;
  branch?: string;
  /** The session is in this project now. */
  current?: boolean;
};

function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

function real(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

/** The most of a package.json description list_projects shows (it reaches the model). */
const MAX_DESCRIPTION_CHARS = 1000;

/**
 * The `description` of a project's package.json: read only if it is the project's own regular file
 * (a symlink out of the project, a FIFO or a file over 1 MiB gives none), and cut to 1000 characters.
 */
function packageDescription(dir: string): string | undefined {
  try {
    const read = readFileInRoot(dir, "package.json", { maxBytes: MAX_CONFIG_BYTES });
    if (read.truncated) return undefined;
    const pkg = JSON.parse(read.bytes.toString("utf8")) as { description?: unknown };
    if (typeof pkg.description !== "string" || !pkg.description) return undefined;
    return pkg.description.length > MAX_DESCRIPTION_CHARS
      ? `${pkg.description.slice(0, MAX_DESCRIPTION_CHARS)}… (cut at ${MAX_DESCRIPTION_CHARS} of ${pkg.description.length} chars)`
      : pkg.description;
  } catch {
    return undefined;
  }
}

function slug(text: string): string {
  return (
    text
      .toLowerCase()
      .replace(/[^a-z0-9/._-]+/g, "-")
      .replace(/^-+|-+$/g, "") || "project"
  );
}

type Draft = Omit<Project, "key" | "available"> & { key?: string };

/**
 * Every project the session can see: configured directories (config `projects`), managed projects
 * (config entries of kind `managed` and folders under `<toolbelt home>/projects`), git worktrees of the
 * starting repository, and registered repositories (config entries with a `repository`, checkout or not).
 * `origin` is the directory the session started in; relative paths in config resolve against it.
 */
export async function listProjects(
  origin: string,
  config: ToolbeltConfig,
  current: string,
): Promise<Project[]> {
  const drafts: Draft[] = [];
  for (const entry of config.projects) {
    const dir = entry.path ? path.resolve(origin, entry.path) : undefined;
    const kind: ProjectKind = entry.kind ?? (dir ? "configured" : "repository");
    if (!dir && !entry.repository) continue;
    drafts.push({
      kind,
      name:
        entry.name ??
        (dir ? path.basename(dir) : ((entry.repository as string).split("/").pop() ?? "repository")),
      ...(entry.key ? { key: entry.key } : {}),
      ...(dir ? { path: dir } : {}),
      ...(entry.description ? { description: entry.description } : {}),
      ...(entry.repository ? { repository: entry.repository } : {}),
      ...(entry.branch ? { branch: entry.branch } : {}),
    });
  }
  const managedDir = path.join(toolbeltHome(), "projects");
  if (isDir(managedDir)) {
    for (const name of readdirSync(managedDir).sort()) {
      const dir = path.join(managedDir, name);
      if (name.startsWith(".") || !isDir(dir)) continue;
      const description = packageDescription(dir);
      drafts.push({ kind: "managed", name, path: dir, ...(description ? { description } : {}) });
    }
  }
  const worktrees = await listWorktrees(origin);
  for (const tree of worktrees) {
    if (tree.bare) continue;
    drafts.push({
      kind: "worktree",
      name: path.basename(tree.path),
      path: tree.path,
      key: `worktree:${tree.branch ?? path.basename(tree.path)}`,
      description: tree.branch
        ? `git worktree on ${tree.branch}`
        : `git worktree (detached at ${tree.head?.slice(0, 12) ?? "?"})`,
      ...(tree.branch ? { branch: tree.branch } : {}),
    });
  }

  // One entry per directory: the first source wins and the others only fill in what it lacks.
  const byDir = new Map<string, Draft>();
  const merged: Draft[] = [];
  for (const draft of drafts) {
    const dirKey = draft.path ? real(draft.path) : undefined;
    const seen = dirKey ? byDir.get(dirKey) : undefined;
    if (seen) {
      seen.branch ??= draft.branch;
      seen.repository ??= draft.repository;
      seen.description ??= draft.description;
      continue;
    }
    if (dirKey) byDir.set(dirKey, draft);
    merged.push(draft);
  }

  const currentReal = real(current);
  const used = new Set<string>();
  const projects = await Promise.all(
    merged.map(async (draft) => {
      const available = draft.path !== undefined && isDir(draft.path);
      const info =
        available && draft.path && (!draft.branch || !draft.repository) ? await gitInfo(draft.path) : {};
      return { draft, available, info };
    }),
  );
  return projects.map(({ draft, available, info }) => {
    let key =
      draft.key ?? slug(draft.kind === "repository" && draft.repository ? draft.repository : draft.name);
    for (let n = 2; used.has(key); n++) key = `${draft.key ?? slug(draft.name)}-${n}`;
    used.add(key);
    const branch = draft.branch ?? info.branch;
    const repository = draft.repository ?? info.repository;
    const project: Project = {
      key,
      name: draft.name,
      kind: draft.kind,
      ...(draft.description ? { description: draft.description } : {}),
      ...(draft.path ? { path: draft.path } : {}),
      available,
      ...(repository ? { repository } : {}),
      ...(branch ? { branch } : {}),
    };
    if (available && draft.path && real(draft.path) === currentReal) project.current = true;
    return project;
  });
}
