import { type DoctorCheck, type DoctorContext, definePlugin, type Plugin } from "@toolbelt/core";
import { reportNewDiagnostics } from "./after-write.js";
import { contributions } from "./contrib.js";
import { type LspFamilyOptions, managerOf, resolveOptions } from "./manager.js";
import {
  builtinTypescriptSpec,
  configuredSpecs,
  findTsgo,
  findTypescriptLanguageServer,
  tsserverPathFor,
  whichSync,
} from "./servers.js";
import { createTools } from "./tools/index.js";

export { type DiagnosticsOptions, type DiagnosticsOutcome, LspClient } from "./client.js";
export type { TsMorphBackend } from "./fallback.js";
export type { LaunchHost } from "./launch.js";
export { type Backend, type LspFamilyOptions, LspManager } from "./manager.js";
export type { LspResults } from "./results.js";
export type { ServerSpec, TsServerChoice } from "./servers.js";

function doctor(opts: LspFamilyOptions, ctx: DoctorContext): DoctorCheck[] {
  const resolved = resolveOptions(opts);
  const checks: DoctorCheck[] = [];
  // Doctor is not told whether the project is trusted: it reports what an untrusted session would run.
  const trust = { root: ctx.root, trusted: false };
  const tsls = findTypescriptLanguageServer(trust);
  const tsserver = tsserverPathFor(trust);
  checks.push(
    tsls
      ? {
          name: "typescript-language-server",
          status: "ok",
          detail: `${tsls.origin}; TypeScript from ${tsserver ?? "the project's node_modules"}${resolved.typescriptServer === "typescript-language-server" ? " (serves TS/JS)" : ""}`,
        }
      : { name: "typescript-language-server", status: "missing", detail: "not installed and not on PATH" },
  );
  const tsgo = findTsgo(trust);
  checks.push(
    tsgo
      ? {
          name: "tsgo",
          status: "ok",
          detail: `${tsgo.origin} (TypeScript 7 \`tsgo --lsp\`${resolved.typescriptServer === "tsgo" ? ", serves TS/JS" : "; set TOOLBELT_LSP_TS_SERVER=tsgo to use it"})`,
        }
      : {
          name: "tsgo",
          status: "missing",
          detail: "@typescript/native-preview not installed and tsgo not on PATH (optional)",
        },
  );
  for (const spec of configuredSpecs(ctx.config)) {
    const found = spec.command.includes("/") ? spec.command : whichSync(spec.command, { outside: ctx.root });
    checks.push({
      name: `config:${spec.name}`,
      status: found ? "ok" : "missing",
      detail: `${found ?? `${spec.command} not found`} for ${spec.extensions.join(" ") || "(no extensions)"}`,
    });
  }
  const serving = builtinTypescriptSpec(trust, resolved.typescriptServer);
  checks.push({
    name: "ts-morph fallback",
    status: resolved.fallback === "off" ? "skipped" : "ok",
    detail:
      resolved.fallback === "force"
        ? "forced: serves TS/JS in process"
        : resolved.fallback === "off"
          ? "disabled"
          : serving
            ? "available; used only when no TypeScript server binary is found"
            : "serves TS/JS in process (no server binary found)",
  });
  return checks;
}

/**
 * The in-process ts-morph backend (the fallback when no TypeScript server binary is found), loaded
 * on first use: it brings the TypeScript compiler, which would otherwise load with the family.
 */
export async function loadTsMorphBackend(): Promise<typeof import("./fallback.js").TsMorphBackend> {
  return (await import("./fallback.js")).TsMorphBackend;
}

/** The lsp family with options (fallback mode, TypeScript server, timeouts). */
export function createLspFamily(options: LspFamilyOptions = {}): Plugin {
  return definePlugin({
    name: "lsp",
    contributes: contributions,
    tools: createTools(options),
    setup(session) {
      // Made now, not on first use: the manager's trust is for the root the session starts in.
      managerOf(session, options);
      session.hooks.afterWrite.add((info) => reportNewDiagnostics(session, options, info));
    },
    doctor: (ctx) => doctor(options, ctx),
  });
}

/** The lsp family as a plugin: its tools, registered by createToolbelt(). */
export const family: Plugin = createLspFamily();

export {
  contributions,
  EDIT_DIAGNOSTICS,
  type EditDiagnostics,
  type LspServerConfig,
  lspConfig,
  lspEvents,
} from "./contrib.js";
