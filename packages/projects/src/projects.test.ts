import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import {
  createSession,
  definePlugin,
  defineTool,
  type Payload,
  type Session,
  type ToolbeltConfigInput,
  type ToolbeltEvent,
  z,
} from "@toolbelt/core";
import { contributions as lsp } from "@toolbelt/lsp/contrib";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { family, type Project, parseWorktrees, repositorySlug } from "./index.js";

let base: string;
let repo: string;
let other: string;
let worktree: string;
const savedHome = process.env.TOOLBELT_HOME;

function write(file: string, text: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
}

const skill = (name: string, description: string) =>
  `---\nname: ${name}\ndescription: "${description}"\n---\n\nDo ${name}.\n`;

function gitIn(dir: string, ...args: string[]): void {
  execFileSync(
    "git",
    ["-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "init.defaultBranch=main", ...args],
    {
      cwd: dir,
      stdio: "ignore",
    },
  );
}

beforeAll(() => {
  base = realpathSync(mkdtempSync(path.join(os.tmpdir(), "tb-projects-")));
  repo = path.join(base, "widgets");
  other = path.join(base, "other");
  worktree = path.join(base, "widgets-feature");
  const home = path.join(base, "home");
  process.env.TOOLBELT_HOME = home;
  write(
    path.join(home, "projects", "managed-app", "package.json"),
    JSON.stringify({ description: "an app toolbelt manages" }),
  );
  write(path.join(home, "skills", "review", "SKILL.md"), skill("review", "review a change"));
  write(path.join(repo, "AGENTS.md"), "# Widgets\nRun npm test before committing.\n");
  write(path.join(repo, "CLAUDE.md"), "ignored when AGENTS.md exists\n");
  write(path.join(repo, ".toolbelt", "skills", "release", "SKILL.md"), skill("release", "cut a release"));
  write(path.join(other, "CLAUDE.md"), "Other: use pnpm.\n");
  write(path.join(other, ".claude", "skills", "deploy", "SKILL.md"), skill("deploy", "deploy the other app"));
  write(path.join(other, ".claude", "skills", "broken", "SKILL.md"), "no front matter, so not a skill\n");
  gitIn(repo, "init", "-q");
  gitIn(repo, "remote", "add", "origin", "git@github.com:acme/widgets.git");
  gitIn(repo, "add", ".");
  gitIn(repo, "commit", "-q", "-m", "init");
  gitIn(repo, "worktree", "add", "-q", "-b", "feature", worktree);
});

afterAll(() => {
  if (savedHome === undefined) delete process.env.TOOLBELT_HOME;
  else process.env.TOOLBELT_HOME = savedHome;
  rmSync(base, { recursive: true, force: true });
});

const open: Session[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

const where = defineTool({
  name: "where_am_i",
  family: "probe",
  access: "read",
  description: "the session's directory",
  input: z.object({}),
  execute: (_i, ctx) => ({ kind: "where", root: ctx.root, cwd: ctx.cwd }),
});
const probe = definePlugin({
  name: "probe",
  tools: [where],
  skills: [{ name: "plugin-skill", description: "from a plugin" }],
});

const CONFIG: ToolbeltConfigInput = {
  agent: { workspace_mode: "auto" },
  projects: [
    { key: "other", path: "../other", description: "the other app" },
    { repository: "acme/gadgets", description: "not cloned here" },
    { key: "gizmo", kind: "repository", repository: "acme/gizmo", path: "/nonexistent/gizmo" },
  ],
};

async function session(config: ToolbeltConfigInput = CONFIG): Promise<Session> {
  // The lsp family's section is known as createToolbelt makes it known: a target project may set it.
  const s = await createSession({ root: repo, config, plugins: [family, probe], contributions: [lsp] });
  open.push(s);
  return s;
}

const toolNames = (s: Session) => s.bind().tools.map((t) => t.name);

describe("binding", () => {
  it("exists only in auto workspace mode and only for the root agent", async () => {
    expect(toolNames(await session({ ...CONFIG, agent: {} }))).not.toContain("list_projects");
    expect(toolNames(await session({ ...CONFIG, agent: { workspace_mode: "fixed" } }))).not.toContain(
      "switch_project",
    );
    const auto = await session();
    expect(toolNames(auto)).toEqual(expect.arrayContaining(["list_projects", "switch_project"]));
    const child = await auto.fork();
    expect(toolNames(child)).not.toContain("list_projects");
    expect(await child.call("switch_project", { key: "other" })).toMatchObject({ code: "EUNKNOWN_TOOL" });
  });
});

describe("list_projects", () => {
  it("lists configured, managed, worktree and repository projects with their facts", async () => {
    const s = await session();
    const { payload, text } = await s.callWithText("list_projects", {});
    const projects = payload.projects as Project[];
    const byKey = Object.fromEntries(projects.map((p) => [p.key, p]));
    expect(byKey.other).toEqual({
      key: "other",
      name: "other",
      kind: "configured",
      description: "the other app",
      path: other,
      available: true,
    });
    expect(byKey["acme/gadgets"]).toEqual({
      key: "acme/gadgets",
      name: "gadgets",
      kind: "repository",
      description: "not cloned here",
      available: false,
      repository: "acme/gadgets",
    });
    expect(byKey.gizmo).toMatchObject({ kind: "repository", available: false, repository: "acme/gizmo" });
    expect(byKey["managed-app"]).toMatchObject({
      kind: "managed",
      available: true,
      description: "an app toolbelt manages",
    });
    expect(byKey["worktree:main"]).toMatchObject({
      kind: "worktree",
      path: repo,
      branch: "main",
      repository: "acme/widgets",
      available: true,
      current: true,
    });
    expect(byKey["worktree:feature"]).toMatchObject({
      kind: "worktree",
      path: worktree,
      branch: "feature",
      repository: "acme/widgets",
      available: true,
    });
    expect(byKey["worktree:feature"]?.current).toBeUndefined();
    expect(text).toContain("# Count: 6");
    expect(text).toContain("acme/gadgets  gadgets (repository, acme/gadgets, not checked out)");
  });

  it("reads git's porcelain worktree list and remote URLs", () => {
    expect(
      parseWorktrees(
        "worktree /a\nHEAD 1234\nbranch refs/heads/main\n\nworktree /b\nHEAD 5678\ndetached\nprunable gitdir file points to non-existent location\n\n",
      ),
    ).toEqual([
      { path: "/a", head: "1234", branch: "main", detached: false, bare: false, prunable: false },
      { path: "/b", head: "5678", detached: true, bare: false, prunable: true },
    ]);
    expect(repositorySlug("https://github.com/acme/widgets.git")).toBe("acme/widgets");
    expect(repositorySlug("git@github.com:acme/widgets.git")).toBe("acme/widgets");
    expect(repositorySlug("ssh://git@gitlab.example.com:2222/group/sub/app")).toBe("sub/app");
    expect(repositorySlug("/srv/git/plain")).toBeUndefined();
  });
});

describe("switch_project", () => {
  it("rebuilds the config for the new directory: it may narrow tools and set limits, never widen", async () => {
    const strict = path.join(base, "strict");
    const broken = path.join(base, "broken");
    write(
      path.join(strict, "configs", "app.json"),
      JSON.stringify({
        agent: { workspace_mode: "fixed", allowed_tools: ["where_am_i"] },
        tools: { where_am_i: { enabled: false }, probe: { mode: "allow" }, shell: { mode: "deny" } },
        limits: { fileReadMaxLines: 7 },
      }),
    );
    write(path.join(broken, "configs", "app.json"), "{ not json");
    const s = await session({
      ...CONFIG,
      tools: { probe: { mode: "ask" } },
      projects: [
        { key: "strict", path: strict },
        { key: "broken", path: broken },
      ],
    });
    const refused = await s.call("switch_project", { key: "broken" });
    expect(refused).toMatchObject({ kind: "error", code: "EINVAL_CONFIG" });
    expect(s.root).toBe(repo);

    expect(await s.call("switch_project", { key: "strict" })).toMatchObject({ kind: "project_switched" });
    expect(toolNames(s)).not.toContain("where_am_i");
    // The run's own settings stay: still auto workspace mode, so the projects tools stay bound.
    expect(toolNames(s)).toEqual(expect.arrayContaining(["list_projects", "switch_project"]));
    expect(s.config.agent.workspace_mode).toBe("auto");
    expect(s.config.limits.fileReadMaxLines).toBe(7);
    expect(s.config.tools.probe?.mode).toBe("ask");
    expect((s.config.tools as Record<string, { mode?: string }>).shell?.mode).toBe("deny");
    expect(s.config.projects.map((p) => p.key)).toEqual(["strict", "broken"]);
  });

  it("takes nothing from a switched-into project that would widen: raised limits, allow modes, language servers", async () => {
    const loose = path.join(base, "loose");
    write(
      path.join(loose, "configs", "app.json"),
      JSON.stringify({
        tools: { probe: { mode: "allow" } },
        limits: { fileReadMaxLines: 50_000_000, fileListMaxEntries: 3 },
        lsp: { evil: { command: "./evil-server", extensions: [".ts"] } },
      }),
    );
    const saved = process.env.TOOLBELT_CONFIG_DIR;
    process.env.TOOLBELT_CONFIG_DIR = path.join(base, "user-config");
    try {
      const s = await session({ ...CONFIG, projects: [{ key: "loose", path: loose }] });
      expect(await s.call("switch_project", { key: "loose" })).toMatchObject({ kind: "project_switched" });
      expect(s.config.limits.fileReadMaxLines).toBe(10_000);
      expect(s.config.limits.fileListMaxEntries).toBe(3);
      expect(s.config.tools.probe?.mode).toBeUndefined();
      expect(s.config.lsp).toEqual({});
    } finally {
      if (saved === undefined) delete process.env.TOOLBELT_CONFIG_DIR;
      else process.env.TOOLBELT_CONFIG_DIR = saved;
    }
  });

  it("moves the session: the directory changes, instructions are returned, skills accumulate", async () => {
    const s = await session();
    const events: ToolbeltEvent[] = [];
    s.on("project_switched", (e) => events.push(e));
    expect(s.skills.map((k) => k.name).sort()).toEqual(["plugin-skill", "release", "review"]);

    const { payload, text } = await s.callWithText("switch_project", { key: "other" });
    expect(payload).toMatchObject({
      kind: "project_switched",
      key: "other",
      path: other,
      from: repo,
      instructions: { file: "CLAUDE.md", content: "Other: use pnpm.\n", truncated: false },
      new_skills: ["deploy"],
    });
    expect(text).toContain("Instructions from CLAUDE.md:\nOther: use pnpm.");
    expect(events).toMatchObject([{ type: "project_switched", key: "other", from: repo, to: other }]);
    expect(await s.call("where_am_i", {})).toEqual({ kind: "where", root: other, cwd: other });
    expect(s.skills.map((k) => k.name).sort()).toEqual(["deploy", "plugin-skill", "release", "review"]);

    const back = await s.call("switch_project", { key: "worktree:feature" });
    expect(back).toMatchObject({ path: worktree, instructions: { file: "AGENTS.md" } });
    expect((back.instructions as { content: string }).content).toContain("Run npm test");
    expect(s.skills.map((k) => k.name).sort()).toEqual(["deploy", "plugin-skill", "release", "review"]);
    // list_projects still resolves configured paths against where the session started.
    const list = (await s.call("list_projects", {})).projects as Project[];
    expect(list.find((p) => p.key === "other")?.path).toBe(other);
    expect(list.find((p) => p.current)?.key).toBe("worktree:feature");
  });

  it("refuses an unknown key and a repository with no checkout, and stays where it is", async () => {
    const s = await session();
    const unknown: Payload = await s.call("switch_project", { key: "nope" });
    expect(unknown).toMatchObject({ kind: "error", code: "ENOENT" });
    expect(String(unknown.message)).toContain("keys: other");
    expect(await s.call("switch_project", { key: "acme/gadgets" })).toMatchObject({
      code: "EUNAVAILABLE",
      message: expect.stringContaining("no checkout"),
    });
    expect(await s.call("switch_project", { key: "gizmo" })).toMatchObject({ code: "EUNAVAILABLE" });
    expect(s.root).toBe(repo);
  });

  it("narrows the tools to those held: a project's extra tools are not admitted mid-run", async () => {
    const s = await session();
    const before = toolNames(s).sort();
    await s.call("switch_project", { key: "other" });
    expect(toolNames(s).sort()).toEqual(before);
    const extra = defineTool({
      name: "other_deploy",
      family: "mcp",
      access: "execute",
      description: "a tool the other project brings",
      input: z.object({}),
      execute: () => ({ kind: "ok" }),
    });
    s.registerTools("mcp:other", [extra]);
    expect(toolNames(s)).not.toContain("other_deploy");
    expect(await s.call("other_deploy", {})).toMatchObject({ code: "EUNKNOWN_TOOL" });
  });

  it("a sub-agent forked after the switch works in the new directory; one already running keeps its own", async () => {
    const s = await session();
    const early = await s.fork();
    await s.call("switch_project", { key: "other" });
    const late = await s.fork();
    expect(await early.call("where_am_i", {})).toMatchObject({ root: repo });
    expect(await late.call("where_am_i", {})).toMatchObject({ root: other, cwd: other });
    expect(late.skills.map((k) => k.name)).toContain("deploy");
  });
});
