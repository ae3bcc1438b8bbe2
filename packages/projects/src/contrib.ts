import {
  type ConfigContribution,
  type ContributedKeys,
  DROP,
  defineConfigSection,
  type SectionInputs,
  type SectionValues,
  z,
} from "@toolbelt/core";

// The projects family's config key, light (zod and core types only) for config validation.

const projectSchema = z.strictObject({
  key: z.string().optional(),
  path: z.string().optional(),
  name: z.string().optional(),
  description: z.string().optional(),
  kind: z.enum(["configured", "managed", "repository"]).optional(),
  repository: z.string().optional(),
  branch: z.string().optional(),
});

const keys = {
  projects: {
    schema: z
      .array(projectSchema)
      .default([])
      .describe("Projects list_projects offers and switch_project opens"),
    // Never from an untrusted project: an empty list is not reported, as it asks for nothing.
    trust: (value, ctx) => {
      if (Array.isArray(value) && value.length > 0)
        ctx.ignore(ctx.key, "lets the model switch the session to directories outside the root");
      return DROP;
    },
  },
} satisfies ContributedKeys;

export const projectsConfig: ConfigContribution<typeof keys> = defineConfigSection({
  owner: "projects",
  keys,
  docs: "Projects the session may switch to.",
});

export const contributions = {
  config: [projectsConfig],
  toolKeys: ["projects", "list_projects", "switch_project"],
};

declare module "@toolbelt/core" {
  interface ContributedConfig extends SectionValues<typeof keys> {}
  interface ContributedConfigInput extends SectionInputs<typeof keys> {}
}
