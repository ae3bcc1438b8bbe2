// Writes dist/tool-manifest.json (see src/manifest.ts): every tool name (in every profile) → the family
// that owns it, so a one-shot `toolbelt run` loads only that family; and what a session with the
// default config binds for each built-in profile (no model given), so `toolbelt tools` and
// `run TOOL --help` answer without importing any family. The sessions are real ones, opened on an
// empty directory with no user config and no trust, so the manifest cannot say anything a session
// would not. Beside it, dist/tool-output/ holds the exact text `tools` prints for each profile
// and format and `run TOOL --help` for each tool, made by the CLI's own formatters from those
// sessions: with no config anywhere, the CLI prints it without loading core's index or a family.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

import { loadTrustedConfig } from "@toolbelt/core/internal";

const { FAMILY_NAMES, createToolbelt, loadFamilies } = await import("../dist/index.js");
const { packageFingerprint, toolHelpText, toolsText } = await import("../dist/manifest.js");

const PROFILES = ["default", "mewbo", "mouaif"];

const families = {};
const plugins = await loadFamilies(FAMILY_NAMES);
for (const [i, family] of FAMILY_NAMES.entries()) {
  const plugin = plugins[i];
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

// The fast path answers when no config file exists: that must be the config these sessions ran with.
const empty = mkdtempSync(path.join(os.tmpdir(), "tb-manifest-"));
try {
  const none = loadTrustedConfig(empty, {
    userConfig: false,
    trust: false,
    // Every built-in family's config keys, as a session with no config knows them.
    contributions: [...new Set(plugins.flatMap((p) => p.contributes?.config ?? []))],
  });
  if (JSON.stringify(none.config) !== config)
    throw new Error("the config with no config files is not the one the manifest's sessions ran with");
} finally {
  rmSync(empty, { recursive: true, force: true });
}

// One file per answer, so a run reads (and parses) only what it prints; the index names the files,
// so a profile or tool name from the command line is looked up, never made into a path.
const FORMATS = ["json", "openai", "anthropic", "mcp", "names", "text"];
const outDir = new URL("../dist/tool-output/", import.meta.url);
mkdirSync(outDir, { recursive: true });
const index = { version: 1, packages: packageFingerprint(), tools: {}, help: {} };
for (const [profile, bound] of Object.entries(sessions)) {
  index.tools[profile] = {};
  for (const format of FORMATS) {
    const file = `tools.${profile}.${format}.txt`;
    writeFileSync(new URL(file, outDir), toolsText(format, bound));
    index.tools[profile][format] = file;
  }
  const help = Object.fromEntries(
    bound.schemas.map((s) => [s.name, toolHelpText(s.name, s.description, s.inputSchema)]),
  );
  index.help[profile] = `help.${profile}.json`;
  writeFileSync(new URL(index.help[profile], outDir), `${JSON.stringify(help)}\n`);
}
writeFileSync(new URL("index.json", outDir), `${JSON.stringify(index)}\n`);

writeFileSync(
  new URL("../dist/tool-manifest.json", import.meta.url),
  `${JSON.stringify({ version: 2, families, config, packages: index.packages, sessions })}\n`,
);
