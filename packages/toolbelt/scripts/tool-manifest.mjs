// Writes dist/tool-manifest.json: every tool name (in every profile) → the family that owns it, so a
// one-shot `toolbelt run` loads only that family.
import { writeFileSync } from "node:fs";

const { FAMILY_LOADERS } = await import("../dist/index.js");
const manifest = {};
for (const [family, load] of Object.entries(FAMILY_LOADERS)) {
  const plugin = await load();
  for (const tool of plugin.tools ?? []) {
    manifest[tool.name] ??= family;
    for (const variant of Object.values(tool.profiles ?? {})) if (variant) manifest[variant.name] ??= family;
  }
}
writeFileSync(
  new URL("../dist/tool-manifest.json", import.meta.url),
  `${JSON.stringify(manifest, null, 2)}\n`,
);
