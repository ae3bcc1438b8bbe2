// Writes dist/tool-families.json (see src/tool-families.ts): every tool name (in every profile) → the
// family that owns it, so `toolbelt run TOOL` loads only that family. Taken from the families
// themselves, as the built CLI loads them.
import { writeFileSync } from "node:fs";

const { FAMILY_NAMES, loadFamilies } = await import("../dist/index.js");
const { packageFingerprint } = await import("../dist/tool-families.js");

const families = {};
const plugins = await loadFamilies(FAMILY_NAMES);
for (const [i, family] of FAMILY_NAMES.entries()) {
  const plugin = plugins[i];
  for (const tool of plugin.tools ?? []) {
    families[tool.name] ??= family;
    for (const variant of Object.values(tool.profiles ?? {})) if (variant) families[variant.name] ??= family;
  }
}

writeFileSync(
  new URL("../dist/tool-families.json", import.meta.url),
  `${JSON.stringify({ version: 1, packages: packageFingerprint(), families })}\n`,
);
