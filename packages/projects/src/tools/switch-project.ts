import { defineTool, errorPayload, escapeText, renderText, type Skill, z } from "@toolbelt/core";
import { listProjects } from "../catalog.js";
import { INSTRUCTION_FILES, readInstructions, type SkippedFile } from "../instructions.js";
import { projectSkills } from "../skills.js";
import { configForSwitch } from "../switch-config.js";
import { projectsState, WORKSPACE } from "../workspace.js";

/** Skipped files named one by one in an answer; past this many, one entry counts the rest. */
const MAX_SKIPPED_NOTES = 20;

const projectSwitchedPayload = z.object({
  kind: z.literal("project_switched"),
  key: z.string(),
  name: z.string(),
  path: z.string(),
  from: z.string(),
  instructions: z
    .object({
      file: z.string(),
      content: z.string(),
      chars: z.number().int(),
      truncated: z.boolean(),
      bytes: z
        .number()
        .int()
        .optional()
        .describe("the file's size, given when it was too large to read whole"),
    })
    .optional(),
  skipped: z
    .array(z.object({ file: z.string(), reason: z.string() }))
    .optional()
    .describe(
      "project files that were there but not read (a symlink leaving the project, a FIFO, a file over its limit): never followed, never read",
    ),
  new_skills: z.array(z.string()).describe("skills this project added (they accumulate across switches)"),
  skills: z.number().int(),
  tools: z.number().int(),
});

export type ProjectSwitchedPayload = z.output<typeof projectSwitchedPayload>;

export const switchProjectTool = defineTool({
  name: "switch_project",
  family: "projects",
  access: "interact",
  requires: WORKSPACE,
  description:
    "Move this session into another project by its key from list_projects: the working directory changes and the project's AGENTS.md (or CLAUDE.md) instructions are returned — follow them. Your tools stay the same; sub-agents started afterwards work in the new project.",
  input: z.object({ key: z.string().min(1).describe("a key from list_projects") }),
  output: projectSwitchedPayload,
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
    const skipped: SkippedFile[] = [];
    const { instructions, skipped: notRead } = readInstructions(session.root);
    skipped.push(...notRead);
    const added: Skill[] = projectSkills(session.root, skipped);
    session.addSkills(added);
    return {
      kind: "project_switched",
      key: target.key,
      name: target.name,
      path: session.root,
      from,
      ...(instructions ? { instructions } : {}),
      ...(skipped.length > 0 ? { skipped: capped(skipped) } : {}),
      new_skills: added.map((s) => s.name).filter((n) => !before.has(n)),
      skills: session.skills.length,
      tools: session.bind().tools.length,
    } satisfies ProjectSwitchedPayload;
  },
  render(payload) {
    const skipped = payload.skipped ?? [];
    const notRead = skipped.map((s) => `Not read: ${escapeText(s.reason, { reversible: false })}`).join("\n");
    const text = payload.instructions
      ? `Instructions from ${payload.instructions.file}:\n${payload.instructions.content}`
      : skipped.some((s) => (INSTRUCTION_FILES as readonly string[]).includes(s.file))
        ? "No instructions were read from this project."
        : "This project has no AGENTS.md or CLAUDE.md.";
    const body = notRead ? `${notRead}\n\n${text}` : text;
    const cut = payload.instructions;
    return renderText(
      [
        ["Kind", payload.kind],
        ["Project", payload.key],
        ["Path", payload.path],
        ["From", payload.from],
        [
          "Instructions",
          cut
            ? cut.truncated
              ? cut.bytes !== undefined
                ? `${cut.file} (truncated at ${cut.content.length} chars of a ${cut.bytes}-byte file)`
                : `${cut.file} (truncated at ${cut.content.length} of ${cut.chars} chars)`
              : cut.file
            : "(none)",
        ],
        ["Not-Read", skipped.map((s) => s.file).join(", ") || undefined],
        ["New-Skills", payload.new_skills.join(", ") || undefined],
        ["Skills", payload.skills],
      ],
      body,
    );
  },
});

function capped(skipped: SkippedFile[]): SkippedFile[] {
  if (skipped.length <= MAX_SKIPPED_NOTES) return skipped;
  const more = skipped.length - MAX_SKIPPED_NOTES;
  return [
    ...skipped.slice(0, MAX_SKIPPED_NOTES),
    { file: `(${more} more)`, reason: `${more} more project files` },
  ];
}
