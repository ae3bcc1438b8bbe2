// Writes dist/tool-manifest.json (see src/manifest.ts): every tool name (in every profile) → the family
// that owns it, so a one-shot `toolbelt run` loads only that family; and what a session with the
// default config binds for each built-in profile (no model given), so `toolbelt tools` and
// `run TOOL --help` answer without importing any family. The sessions are real ones, opened on an
// empty directory with no user config and no trust, so the manifest cannot say anything a session
// would not.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

const { FAMILY_LOADERS, createToolbelt } = await import("../dist/index.js");
const { packageFingerprint } = await import("../dist/manifest.js");

const PROFILES = ["default", "mewbo", "mouaif"];

const families = {};
for (const [family, load] of Object.entries(FAMILY_LOADERS)) {
  const plugin = await load();
  for (const tool of plugin.tools ?? []) {
    families[tool.name] ??= family;
    for (const variant of Object.values(tool.profiles ?? {})) if (variant) families[variant.name] ??= family;
  }
}

const root = mkdtempSync(path.join(os.tmpdir(), "tb-manifest-"));
const options = { root, userConfig: false, trustProject: false };
const sessions = {};
let config;
try {
  for (const profile of PROFILES) {
    const session = await createToolbelt({ ...options, profile });
    try {
      // The config the session ran with: the CLI uses the manifest only when it resolves the same.
      const own = JSON.stringify(session.config);
      if (config !== undefined && own !== config) throw new Error(`profile ${profile} changed the config`);
      config = own;
      const bindings = session.bindings();
      const { tools, deferred } = session.bind();
      const bound = new Map(tools.map((t) => [t.name, t]));
      const schemas = bindings.map((b) => bound.get(b.name) ?? deferredSchema(session, b.name));
      sessions[profile] = {
        profile: session.profile,
        edit_backend: session.editBackend(),
        schemas,
        deferred,
      };
    } finally {
      await session.close();
    }
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}

/** A deferred tool's schema as tool_search would bind it (the session discovers it, then binds). */
function deferredSchema(session, name) {
  session.discover([name]);
  const schema = session.bind().tools.find((t) => t.name === name);
  if (!schema) throw new Error(`deferred tool ${name} has no schema after discovery`);
  return schema;
}

writeFileSync(
  new URL("../dist/tool-manifest.json", import.meta.url),
  `${JSON.stringify({ version: 2, families, config, packages: packageFingerprint(), sessions })}\n`,
);
