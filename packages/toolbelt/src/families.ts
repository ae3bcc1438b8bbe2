import type { Plugin } from "@toolbelt/core";

/** The built-in tool families, each loaded only when a session needs it. */
export const FAMILY_LOADERS = {
  files: async () => (await import("@toolbelt/files")).family,
  edit: async () => (await import("@toolbelt/edit")).family,
  shell: async () => (await import("@toolbelt/shell")).family,
  lsp: async () => (await import("@toolbelt/lsp")).family,
  ui: async () => (await import("@toolbelt/ui")).family,
  projects: async () => (await import("@toolbelt/projects")).family,
} satisfies Record<string, () => Promise<Plugin>>;

export type FamilyName = keyof typeof FAMILY_LOADERS;
export const FAMILY_NAMES = Object.keys(FAMILY_LOADERS) as FamilyName[];

export async function loadFamilies(names: readonly FamilyName[] = FAMILY_NAMES): Promise<Plugin[]> {
  return Promise.all(names.map((name) => FAMILY_LOADERS[name]()));
}
